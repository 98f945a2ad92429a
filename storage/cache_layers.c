/* Versions given as stacks of layers in the volume cache: an entry per
 * stack, named by storage_stack_id, built from the longest prefix of the
 * stack already cached so that only the missing layers are downloaded.
 *
 * A miss clones the prefix's tree in tmp/ (new directories, files hard
 * links to the prefix entry's: cheap, and safe because entries are never
 * written and a layer never writes through a name, see extract_apply.c),
 * applies the layers above it, and publishes the result as any download
 * (cache_publish): renamed in whole or not at all.
 *
 * Budget: an entry is charged its whole tree (bytes of its files, each
 * inode once, and its names), as if it shared nothing with the prefix it
 * was cloned from.  That overstates the disk the cache uses when clones
 * share files, never understates it, so the cache stays within its
 * budget; eviction of one entry of a chain frees less disk than it is
 * charged until the last entry sharing the files goes.  The tree's own
 * stats are what storage_cache_entry_stats reports for it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "common/cleanup.h"
#include "storage/cache-internal.h"
#include "storage/fsutil.h"

void storage_stack_id(const char *const *layer_sha256, size_t n,
                      char ret[STORAGE_SHA256_HEX_LEN + 1])
{
        static const char head[] = "boxcar-stack 1\n";
        static const char hex[] = "0123456789abcdef";
        if (n == 1) {
                snprintf(ret, STORAGE_SHA256_HEX_LEN + 1, "%s", layer_sha256[0]);
                return;
        }
        /* No stack has another length: no name for one (callers check). */
        ret[0] = '\0';
        char buf[sizeof(head) + STORAGE_MAX_LAYERS * (STORAGE_SHA256_HEX_LEN + 1)];
        size_t len = sizeof(head) - 1;
        if (n == 0 || n > STORAGE_MAX_LAYERS)
                return;
        memcpy(buf, head, len);
        for (size_t i = 0; i < n; i++) {
                size_t k = strnlen(layer_sha256[i], STORAGE_SHA256_HEX_LEN);
                memcpy(buf + len, layer_sha256[i], k);
                len += k;
                buf[len++] = '\n';
        }
        unsigned char md[SHA256_DIGEST_LENGTH];
        if (!SHA256((const unsigned char *)buf, len, md))
                return;
        for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
                ret[2 * i] = hex[md[i] >> 4];
                ret[2 * i + 1] = hex[md[i] & 15];
        }
        ret[STORAGE_SHA256_HEX_LEN] = '\0';
}

static int check_stack(const char *const *shas, size_t n, struct bc_error *err)
{
        if (n < 1 || n > STORAGE_MAX_LAYERS)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "cache: a stack holds 1 to %d layers, not %zu",
                                    STORAGE_MAX_LAYERS, n);
        for (size_t i = 0; i < n; i++) {
                if (!shas[i] || !storage_sha256_valid(shas[i]))
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "cache: layer %zu: malformed sha256", i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(shas[i], shas[j]) == 0)
                                return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL,
                                                    "cache: layer %s listed twice in a stack",
                                                    shas[i]);
        }
        return 0;
}

/* The longest proper prefix of the stack that is cached (its length,
 * 0 for none), held in *ret_base so that it stays while it is cloned. */
static size_t cached_prefix(struct storage_cache *c, const char *const *shas, size_t n,
                            struct cache_ref **ret_base)
{
        for (size_t k = n - 1; k > 0; k--) {
                char id[STORAGE_SHA256_HEX_LEN + 1];
                storage_stack_id(shas, k, id);
                struct cache_ref *r = cache_hold(c, id);
                if (r) {
                        *ret_base = r;
                        return k;
                }
        }
        *ret_base = NULL;
        return 0;
}

static const char *url_of(const char *const *urls, size_t i)
{
        return urls ? urls[i] : NULL;
}

static int need_url(const char *url, const char *sha, struct bc_error *err)
{
        return url ? 0
                   : bc_error_set(err, BC_NOT_FOUND, ENOENT,
                                  "cache: layer %s not cached and no URL given", sha);
}

/* The bottom of the tree in b->tmppath: a clone of the cached prefix
 * base, or layer 0 extracted.  The layers the tree holds, in *ret_k. */
static int build_bottom(struct storage_cache *c, const char *const *urls, const char *const *shas,
                        size_t n, struct cache_build *b, size_t *ret_k, struct bc_error *err)
{
        struct cache_ref *base = NULL;
        size_t k = cached_prefix(c, shas, n, &base);
        if (base) {
                uid_t uid = c->owned ? c->uid : geteuid();
                gid_t gid = c->owned ? c->gid : getegid();
                char base_path[4200];
                snprintf(base_path, sizeof(base_path), "%s", base->path);
                int r = mkdir(b->tmppath, 0700) < 0
                                ? -errno
                                : fs_clone_tree(base_path, b->tmppath, uid, gid);
                cache_unhold(c, base);
                if (r < 0)
                        return bc_error_set(err, BC_IO, -r, "cache: clone %s into %s: %s",
                                            base_path, b->tmppath, strerror(-r));
                *ret_k = k;
                return 0;
        }
        int r = need_url(url_of(urls, 0), shas[0], err);
        struct storage_fetch_result res;
        r = r ? r
              : storage_fetch_extract(c->cfg, urls[0], shas[0], b->tmppath, &b->limits, NULL, &res,
                                      err);
        /* The disk ran low (the extraction is undone): the entries nobody
         * holds go before the build fails, once, as for a download. */
        if (r == -ENOSPC && storage_cache_reclaim(c, UINT64_MAX) > 0) {
                bc_error_clear(err);
                r = storage_fetch_extract(c->cfg, urls[0], shas[0], b->tmppath, &b->limits, NULL,
                                          &res, err);
        }
        if (r < 0)
                return r;
        b->downloaded += res.size;
        *ret_k = 1;
        return 0;
}

/* Builds the whole stack in b->tmppath and fills b for publishing. */
static int build(struct storage_cache *c, const char *const *urls, const char *const *shas,
                 size_t n, struct cache_build *b, struct bc_error *err)
{
        size_t k = 0;
        int r = build_bottom(c, urls, shas, n, b, &k, err);
        for (size_t i = k; r == 0 && i < n; i++) {
                struct storage_fetch_result res;
                r = need_url(url_of(urls, i), shas[i], err);
                r = r ? r
                      : storage_fetch_apply(c->cfg, urls[i], shas[i], b->tmppath, &b->limits, &res,
                                            err);
                if (r < 0)
                        bc_error_prefix(err, "layer %zu of %zu (%s)", i + 1, n, shas[i]);
                else
                        b->downloaded += res.size;
        }
        r = r ? r : cache_seal_tree(c, b->tmppath, err);
        if (r < 0)
                return r;
        _cleanup_fd_ int fd = open(b->tmppath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = fd < 0 ? -errno : fs_tree_stats(fd, &b->bytes, &b->entries);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "cache: measure %s: %s", b->tmppath,
                                    strerror(-r));
        return 0;
}

int storage_cache_acquire_layers(struct storage_cache *c, const char *const *urls,
                                 const char *const *layer_sha256, size_t n,
                                 struct storage_cache_entry **ret, struct bc_error *err)
{
        int r = check_stack(layer_sha256, n, err);
        if (r < 0)
                return r;
        if (n == 1)
                return storage_cache_acquire(c, url_of(urls, 0), layer_sha256[0], NULL, ret, err);
        char id[STORAGE_SHA256_HEX_LEN + 1];
        storage_stack_id(layer_sha256, n, id);
        /* Claimed even without URLs: a prefix may be cached, and a layer
         * missing its URL is found out when it is needed. */
        r = cache_hit_or_claim(c, id, true, ret, err);
        if (r <= 0)
                return r;
        struct cache_build b;
        cache_build_init(c, "ly", id, &b);
        r = build(c, urls, layer_sha256, n, &b, err);
        memcpy(b.sha, id, sizeof(b.sha));
        return cache_publish(c, &b, r, ret, err);
}
