/* A directory saved as a layered version (DESIGN §11): its tree's
 * manifest names it, and what is uploaded is the layer that turns its
 * base's tree into it, so a job that changed 1 MiB of a 1 GiB workspace
 * sends about 1 MiB.
 *
 * Which layer, in order of preference:
 * - the difference from the base's tree, on top of the base's layers;
 * - when the base's stack is full (STORAGE_MAX_LAYERS), the difference
 *   from the stack's bottom tree, on top of the bottom layer alone: the
 *   stack is compacted to two layers, and a restore never applies more
 *   than STORAGE_MAX_LAYERS;
 * - the whole tree, alone: without a base, when the base has no manifest
 *   (a version made before layered versions: this is how such a chain
 *   moves on to layers), or when storage_layer_build finds most of the
 *   tree changed.
 * A layer equal to one already in the stack (a file changed, then changed
 * back) would name a layer twice: the next choice is taken then. */
#include "worker/job/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "worker/db/db.h"
#include "worker/log/log.h"

BC_DEFINE_CLEANUP(struct storage_tree *, storage_tree_free)

void store_saved_done(struct store_saved *s)
{
        if (s)
                store_version_done(&s->v);
}

int store_register_objects(const struct store_db *db, size_t n, const char *const *keys,
                           const char *const *kinds, const char *const *shas,
                           const uint64_t *sizes, struct bc_error *err)
{
        _cleanup_free_ char *k = store_array_literal(n, keys, NULL);
        _cleanup_free_ char *t = store_array_literal(n, kinds, NULL);
        _cleanup_free_ char *h = store_array_literal(n, shas, NULL);
        _cleanup_free_ char *z = store_array_literal(n, NULL, sizes);
        if (!k || !t || !h || !z)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const char *p[] = { k, t, h, z };
        _cleanup_pgresult_ PGresult *res = db->exec(
                db->ctx,
                "select boxcar.register_storage_objects($1::text[], $2::text[], "
                "$3::text[], $4::bigint[])",
                4, p, err);
        return res ? 0 : bc_error_prefix(err, "register stored objects");
}

/* The tree to diff against for each choice, or NULL when it is unknown
 * (then the next choice). */
enum layer_choice { ON_BASE, ON_BOTTOM, WHOLE };

static const char *choice_name(enum layer_choice c)
{
        return c == ON_BASE ? "on the base" : c == ON_BOTTOM ? "on the bottom layer" : "whole";
}

struct save {
        const struct store *st;
        const struct store_save_args *a;
        struct storage_tree *base_tree, *bottom_tree;
        struct storage_layer_result lr;
        int fd;
};

static void save_done(struct save *s)
{
        storage_tree_free(s->base_tree);
        storage_tree_free(s->bottom_tree);
        storage_layer_result_done(&s->lr);
        if (s->fd >= 0)
                close(s->fd);
}

/* A manifest that cannot be had costs a bigger layer, never the job. */
static struct storage_tree *tree_or_null(const struct store *st, const char *id, const char *what)
{
        struct storage_tree *t = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (store_tree_get(st, id, &t, &err) < 0) {
                log_event(LOG_WARN, "artifact.tree", "tree", id, "which", what, "error",
                          bc_error_message(&err), "effect",
                          "the new version is stored as a larger layer", NULL);
                bc_error_clear(&err);
        }
        return t;
}

static int open_tmp(const char *dir, struct bc_error *err)
{
        int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "temporary file in %s: %m", dir);
        return fd;
}

static int build(struct save *s, enum layer_choice c, struct bc_error *err)
{
        storage_layer_result_done(&s->lr);
        memset(&s->lr, 0, sizeof(s->lr));
        if (s->fd >= 0)
                close(s->fd);
        s->fd = open_tmp(s->a->tmp_dir, err);
        if (s->fd < 0)
                return s->fd;
        struct storage_layer_args la = {
                .dir = s->a->dir,
                .base = s->base_tree,
                .upper = s->base_tree ? s->a->upper : NULL,
                .below = c == ON_BASE     ? s->base_tree
                         : c == ON_BOTTOM ? s->bottom_tree
                                          : NULL,
                .limits = s->a->limits,
        };
        return storage_layer_build(&la, s->fd, &s->lr, err);
}

/* The new version's layers for choice c; false when the layer is in the
 * stack already. */
static bool compose(const struct save *s, enum layer_choice c, struct store_version *v)
{
        const struct store_version *b = s->a->base;
        v->n_layers = 0;
        if (!s->lr.whole && c == ON_BASE)
                for (size_t i = 0; i < b->n_layers; i++)
                        memcpy(v->layers[v->n_layers++], b->layers[i], 65);
        else if (!s->lr.whole && c == ON_BOTTOM)
                memcpy(v->layers[v->n_layers++], b->layers[0], 65);
        for (size_t i = 0; i < v->n_layers; i++)
                if (strcmp(v->layers[i], s->lr.pack.sha256) == 0)
                        return false;
        memcpy(v->layers[v->n_layers++], s->lr.pack.sha256, 65);
        snprintf(v->bottom_tree, sizeof(v->bottom_tree), "%s",
                 s->lr.whole ? storage_tree_id(s->lr.tree) : b->bottom_tree);
        return true;
}

/* Builds the first layer that works, in the order the head comment gives. */
static int build_layer(struct save *s, struct store_version *v, struct bc_error *err)
{
        const struct store_version *b = s->a->base;
        enum layer_choice c = !s->base_tree                      ? WHOLE
                              : b->n_layers < STORAGE_MAX_LAYERS ? ON_BASE
                                                                 : ON_BOTTOM;
        for (;; c++) {
                if (c == ON_BOTTOM && !s->bottom_tree && b->bottom_tree[0])
                        s->bottom_tree = tree_or_null(s->st, b->bottom_tree, "bottom");
                if (c == ON_BOTTOM && !s->bottom_tree)
                        continue;
                int r = build(s, c, err);
                if (r < 0)
                        return r;
                if (compose(s, c, v))
                        return 0;
                log_event(LOG_INFO, "artifact.layer", "layer", s->lr.pack.sha256, "choice",
                          choice_name(c), "effect", "already in the stack: the next choice", NULL);
        }
}

static int upload(const struct store *st, const struct store_db *db, struct save *s,
                  struct store_saved *ret, struct bc_error *err)
{
        _cleanup_free_ char *layer_key = NULL, *tree_key = NULL;
        const char *id = storage_tree_id(s->lr.tree);
        int r = storage_object_key(st->s3, s->lr.pack.sha256, &layer_key, err);
        if (r >= 0)
                r = storage_tree_key(st->s3, id, &tree_key, err);
        const char *keys[] = { layer_key, tree_key };
        const char *kinds[] = { "layer", "tree" };
        const char *shas[] = { s->lr.pack.sha256, id };
        uint64_t sizes[] = { s->lr.pack.size, 0 };
        if (r >= 0)
                r = store_register_objects(db, 2, keys, kinds, shas, sizes, err);
        if (r >= 0)
                r = storage_upload(st->s3, s->fd, s->lr.pack.sha256, s->lr.pack.size,
                                   &ret->uploaded, err);
        bool tree_sent = false;
        if (r >= 0)
                r = storage_tree_upload(st->s3, s->lr.tree, &sizes[1], &tree_sent, err);
        if (r >= 0)
                r = store_register_objects(db, 1, &keys[1], &kinds[1], &shas[1], &sizes[1], err);
        if (r >= 0 && ret->v.n_layers == 1) {
                ret->v.s3_key = layer_key;
                layer_key = NULL;
        }
        return r;
}

static int need_s3(const struct store *st, struct bc_error *err)
{
        if (st->s3)
                return 0;
        return bc_error_set(err, BC_UPLOAD_FAILED, ENOTSUP,
                            "S3 is not configured on this worker (set BOXCAR_S3_BUCKET and the "
                            "AWS_* variables)");
}

/* The tree is the base's: the new version is the base, stored already. */
static int same_as_base(const struct store_version *b, struct store_saved *ret,
                        struct bc_error *err)
{
        ret->v = *b;
        ret->v.s3_key = b->s3_key ? strdup(b->s3_key) : NULL;
        if (b->s3_key && !ret->v.s3_key)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        ret->unchanged = true;
        const char *shas[STORAGE_MAX_LAYERS];
        for (size_t i = 0; i < b->n_layers; i++)
                shas[i] = b->layers[i];
        storage_stack_id(shas, b->n_layers, ret->stack_id);
        return 0;
}

int store_save_version(const struct store *st, const struct store_db *db,
                       const struct store_save_args *a, struct store_saved *ret,
                       struct bc_error *err)
{
        memset(ret, 0, sizeof(*ret));
        int r = need_s3(st, err);
        if (r < 0)
                return r;
        struct save s = { .st = st, .a = a, .fd = -1 };
        if (a->base && a->base->tree)
                s.base_tree = tree_or_null(st, a->base->sha256, "base");
        struct store_version v = { .tree = true };
        r = build_layer(&s, &v, err);
        if (r >= 0 && s.base_tree &&
            strcmp(storage_tree_id(s.lr.tree), storage_tree_id(s.base_tree)) == 0) {
                r = same_as_base(a->base, ret, err);
                save_done(&s);
                return r;
        }
        if (r < 0) {
                save_done(&s);
                return r;
        }
        snprintf(v.sha256, sizeof(v.sha256), "%s", storage_tree_id(s.lr.tree));
        v.size = s.lr.pack.size;
        v.file_count = s.lr.pack.file_count;
        ret->v = v;
        ret->whole = s.lr.whole;
        ret->changed_bytes = s.lr.changed_bytes;
        const char *shas[STORAGE_MAX_LAYERS];
        for (size_t i = 0; i < v.n_layers; i++)
                shas[i] = ret->v.layers[i];
        storage_stack_id(shas, v.n_layers, ret->stack_id);
        if (a->on_packed)
                a->on_packed(a->ctx, ret->stack_id);
        r = upload(st, db, &s, ret, err);
        if (r >= 0)
                store_tree_keep(st, s.lr.tree);
        else
                store_saved_done(ret);
        save_done(&s);
        return r;
}

int store_record_version(const struct store_db *db, const char *storage, const char *scope,
                         const struct store_version *v, const char *parent, struct bc_error *err)
{
        const char *shas[STORAGE_MAX_LAYERS];
        for (size_t i = 0; i < v->n_layers; i++)
                shas[i] = v->layers[i];
        _cleanup_free_ char *layers = store_array_literal(v->n_layers, shas, NULL);
        if (!layers)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        char size[32], count[32];
        snprintf(size, sizeof(size), "%llu", (unsigned long long)v->size);
        snprintf(count, sizeof(count), "%llu", (unsigned long long)v->file_count);
        const char *p[] = { storage, v->sha256, v->s3_key,      size, count,
                            parent,  layers,    v->bottom_tree, scope };
        PGresult *res = db->exec(db->ctx,
                                 "select boxcar.add_storage_version($1, $2, $3, $4::bigint, "
                                 "$5::bigint, $6, null, true, $7::text[], $8, $9)",
                                 9, p, err);
        if (!res)
                return -EPROTO;
        PQclear(res);
        return 0;
}
