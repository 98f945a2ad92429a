/* What a layer holds: the records of the new tree that differ from the
 * tree below (a different attribute string, or none there), the hard
 * links whose file goes in (else they would keep naming the file the
 * layer replaces), and an OCI whiteout "<dir>/.wh.<name>" for each name
 * of below that is gone while its directory stays (its children go with
 * it; a name that changed type needs none: the new entry replaces it).
 *
 * When that cannot be said as a layer, or is not worth saying, the layer
 * is the whole tree instead: no tree below, more than half the tree's file
 * data differing, or a name that an applier would take for a whiteout
 * (an entry named ".wh.*" going in, a whiteout naming one, or a whiteout
 * name longer than a file name may be). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "storage/fsutil.h"
#include "storage/layer-internal.h"
#include "storage/tree-internal.h"

#define WH_LEN (sizeof(STORAGE_WHITEOUT_PREFIX) - 1)

void layer_plan_done(struct layer_plan *p)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->v[i].whiteout)
                        free(p->v[i].path);
        free(p->v);
        p->v = NULL;
        p->n = 0;
}

static const char *base_name(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

static int add(struct layer_plan *p, size_t *alloc, const struct pack_item *it)
{
        if (p->n == *alloc) {
                size_t na = *alloc ? *alloc * 2 : 64;
                struct pack_item *v = realloc(p->v, na * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                p->v = v;
                *alloc = na;
        }
        p->v[p->n++] = *it;
        return 0;
}

/* The walked items whose records differ from below's. */
static int choose_entries(const struct storage_tree *tree, const struct storage_tree *below,
                          const struct pack_list *l, char *const *attrs, struct layer_plan *p,
                          size_t *alloc, bool *ret_unsayable)
{
        _cleanup_free_ bool *in = calloc(l->n ? l->n : 1, sizeof(*in));
        if (!in)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                const struct pack_item *it = &l->v[i];
                if (!attrs[i])
                        continue;
                const struct tree_rec *br = tree_lookup(below, it->path);
                in[i] = !br || strcmp(tree_rec_attrs(below, br), attrs[i]) != 0;
                if (!in[i] && S_ISREG(it->mode) && it->link_to) {
                        size_t k = pack_list_find(l, it->link_to);
                        in[i] = k < l->n && in[k];
                }
                if (!in[i])
                        continue;
                if (strncmp(base_name(it->path), STORAGE_WHITEOUT_PREFIX, WH_LEN) == 0)
                        *ret_unsayable = true;
                const struct tree_rec *r = tree_lookup(tree, it->path);
                if (r && r->kind == TREE_FILE)
                        p->changed_bytes += r->data;
                if (add(p, alloc, it) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A whiteout for each topmost name of below gone from tree. */
static int add_whiteouts(const struct storage_tree *tree, const struct storage_tree *below,
                         struct layer_plan *p, size_t *alloc, bool *ret_unsayable)
{
        char parent[FS_MAX_PATH + 1];
        for (size_t j = 0; j < tree_count(below); j++) {
                const char *path = tree_rec_path(below, tree_rec_at(below, j));
                if (tree_lookup(tree, path))
                        continue;
                const char *name = base_name(path);
                size_t plen = name > path ? (size_t)(name - path - 1) : 0;
                memcpy(parent, path, plen);
                parent[plen] = '\0';
                const struct tree_rec *pr = plen ? tree_lookup(tree, parent) : NULL;
                if (plen && (!pr || pr->kind != TREE_DIR))
                        continue; /* gone with its parent, or replaced by a non-directory */
                if (strncmp(name, STORAGE_WHITEOUT_PREFIX, WH_LEN) == 0 ||
                    strlen(name) + WH_LEN > FS_MAX_NAME || strlen(path) + WH_LEN > FS_MAX_PATH) {
                        *ret_unsayable = true;
                        continue;
                }
                struct pack_item wh = { .mode = S_IFREG | 0644, .whiteout = true };
                if (asprintf(&wh.path, "%s%s%s%s", parent, plen ? "/" : "",
                             STORAGE_WHITEOUT_PREFIX, name) < 0)
                        return -ENOMEM;
                if (add(p, alloc, &wh) < 0) {
                        free(wh.path);
                        return -ENOMEM;
                }
                p->whiteouts++;
        }
        return 0;
}

static int cmp_item(const void *a, const void *b)
{
        return strcmp(((const struct pack_item *)a)->path, ((const struct pack_item *)b)->path);
}

int layer_plan(const struct storage_tree *tree, const struct storage_tree *below,
               const struct pack_list *l, char *const *attrs, struct layer_plan *ret,
               struct bc_error *err)
{
        struct layer_plan p = { .whole = !below };
        uint64_t entries, data;
        storage_tree_stats(tree, &entries, NULL, &data);
        if (p.whole) {
                p.changed_bytes = data;
                p.changed_entries = entries;
                *ret = p;
                return 0;
        }
        size_t alloc = 0;
        bool unsayable = false;
        int r = choose_entries(tree, below, l, attrs, &p, &alloc, &unsayable);
        r = r ? r : add_whiteouts(tree, below, &p, &alloc, &unsayable);
        if (r < 0) {
                layer_plan_done(&p);
                return bc_error_set(err, BC_IO, -r, "layer: out of memory");
        }
        /* More than half: changed_bytes <= data, the changed files being
         * some of the tree's. */
        if (unsayable || p.changed_bytes > data - p.changed_bytes) {
                layer_plan_done(&p);
                *ret = (struct layer_plan){ .whole = true,
                                            .changed_bytes = data,
                                            .changed_entries = entries };
                return 0;
        }
        if (p.n)
                qsort(p.v, p.n, sizeof(p.v[0]), cmp_item);
        p.changed_entries = p.n;
        *ret = p;
        return 0;
}
