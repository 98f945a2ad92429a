/* Tree manifests kept on the worker's disk.  Saving a job's version needs
 * its base's manifest (which files it holds, with their hashes: the files
 * the job did not touch are then never read); the previous job of a chain
 * on this worker made it, so it is usually here, and S3 has it otherwise.
 *
 * Files are named by the tree id and checked against it when read, so a
 * damaged file is only a miss.  At most TREES_KEPT are kept, the most
 * recently used: a manifest is a few hundred bytes per file of its tree. */
#include "worker/job/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#define TREES_KEPT 256
/* Every this many saves the directory is trimmed back to TREES_KEPT. */
#define TRIM_EVERY 32

int store_tree_get(const struct store *st, const char *id, struct storage_tree **ret,
                   struct bc_error *err)
{
        if (!storage_sha256_valid(id))
                return bc_error_set(err, BC_USAGE, EINVAL, "tree id %.70s", id);
        char path[4096];
        if (st->trees_dir) {
                snprintf(path, sizeof(path), "%s/%s", st->trees_dir, id);
                struct bc_error local = BC_ERROR_INIT;
                if (storage_tree_load(path, id, ret, &local) >= 0) {
                        (void)utimensat(AT_FDCWD, path, NULL, 0); /* recently used */
                        return 0;
                }
                bc_error_clear(&local);
        }
        if (!st->s3)
                return bc_error_set(err, BC_FETCH_FAILED, ENOTSUP,
                                    "tree %s: S3 is not configured on this worker", id);
        int r = storage_tree_download(st->s3, id, ret, err);
        if (r >= 0)
                store_tree_keep(st, *ret);
        return r;
}

struct kept {
        char name[65];
        struct timespec mtime;
};

static int newest_first(const void *a, const void *b)
{
        const struct timespec *x = &((const struct kept *)a)->mtime;
        const struct timespec *y = &((const struct kept *)b)->mtime;
        if (x->tv_sec != y->tv_sec)
                return x->tv_sec < y->tv_sec ? 1 : -1;
        return x->tv_nsec < y->tv_nsec ? 1 : x->tv_nsec > y->tv_nsec ? -1 : 0;
}

static void trim(const char *dir)
{
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return;
        struct kept *v = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                struct stat s;
                if (!storage_sha256_valid(de->d_name) ||
                    fstatat(dirfd(d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 512;
                        struct kept *nv = realloc(v, na * sizeof(*nv));
                        if (!nv)
                                break;
                        v = nv;
                        alloc = na;
                }
                memcpy(v[n].name, de->d_name, 65);
                v[n++].mtime = s.st_mtim;
        }
        if (n > TREES_KEPT) {
                qsort(v, n, sizeof(*v), newest_first);
                for (size_t i = TREES_KEPT; i < n; i++)
                        (void)unlinkat(dirfd(d), v[i].name, 0);
        }
        free(v);
}

void store_tree_keep(const struct store *st, const struct storage_tree *t)
{
        static _Atomic unsigned saves;
        if (!st->trees_dir)
                return;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", st->trees_dir, storage_tree_id(t));
        struct bc_error err = BC_ERROR_INIT;
        (void)storage_tree_save(t, path, &err);
        bc_error_clear(&err);
        if (++saves % TRIM_EVERY == 0)
                trim(st->trees_dir);
}
