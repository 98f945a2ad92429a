/* The volume cache's budget: entries charged their bytes and entries
 * (CACHE_ENTRY_COST), and the least recently used ones nobody holds
 * evicted, across the processes that share the directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "common/cleanup.h"
#include "common/rmtree.h"
#include "storage/cache-internal.h"
#include "storage/fsutil.h"

struct victim {
        char sha[STORAGE_SHA256_HEX_LEN + 1];
        uint64_t size;
        struct timespec used;
};

static int cmp_victim(const void *a, const void *b)
{
        const struct victim *x = a, *y = b;
        if (x->used.tv_sec != y->used.tv_sec)
                return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
        if (x->used.tv_nsec != y->used.tv_nsec)
                return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
        return strcmp(x->sha, y->sha);
}

/* Lists entries with their sizes (global lock held). */
static int scan(struct storage_cache *c, struct victim **ret, size_t *ret_n, uint64_t *ret_total)
{
        int d2 = fs_reopen_dir(c->vfd);
        DIR *d = d2 < 0 ? NULL : fdopendir(d2);
        if (!d) {
                if (d2 >= 0)
                        close(d2);
                return -errno;
        }
        struct victim *v = NULL;
        size_t n = 0, alloc = 0;
        uint64_t total = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len != STORAGE_SHA256_HEX_LEN + 5 ||
                    strcmp(de->d_name + STORAGE_SHA256_HEX_LEN, ".size") != 0)
                        continue;
                if (n == alloc) {
                        alloc = alloc ? 2 * alloc : 64;
                        struct victim *nv = realloc(v, alloc * sizeof(*v));
                        if (!nv)
                                break;
                        v = nv;
                }
                struct victim *x = &v[n];
                memcpy(x->sha, de->d_name, STORAGE_SHA256_HEX_LEN);
                x->sha[STORAGE_SHA256_HEX_LEN] = '\0';
                char buf[32] = "";
                _cleanup_fd_ int fd = openat(c->vfd, de->d_name,
                                             O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
                buf[k > 0 ? k : 0] = '\0';
                char *end = NULL;
                uint64_t bytes = strtoull(buf, &end, 10);
                uint64_t entries = strtoull(end, NULL, 10);
                x->size = bytes + entries * CACHE_ENTRY_COST;
                char lock[80];
                snprintf(lock, sizeof(lock), "%s.lock", x->sha);
                struct stat st;
                x->used = fstatat(c->vfd, lock, &st, 0) == 0 ? st.st_mtim
                                                             : (struct timespec){ 0, 0 };
                total += x->size;
                n++;
        }
        closedir(d);
        *ret = v;
        *ret_n = n;
        *ret_total = total;
        return 0;
}

/* Evicts least recently used entries nobody holds until the total fits
 * and, beyond that, until `more` bytes are gone (global lock held); the
 * bytes evicted.  Trees are renamed into tmp/ here and deleted by the
 * caller after unlocking, so a large delete does not stall acquires. */
static uint64_t evict(struct storage_cache *c, uint64_t more, char ***ret_trash,
                      size_t *ret_ntrash)
{
        struct victim *v = NULL;
        size_t n = 0;
        uint64_t total = 0;
        *ret_trash = NULL;
        *ret_ntrash = 0;
        if (scan(c, &v, &n, &total) < 0) {
                free(v);
                return 0;
        }
        uint64_t goal = total > more ? total - more : 0;
        if (goal > c->max_bytes)
                goal = c->max_bytes;
        if (total <= goal) {
                free(v);
                return 0;
        }
        uint64_t before = total;
        if (n)
                qsort(v, n, sizeof(*v), cmp_victim);
        char **trash = calloc(n, sizeof(char *));
        size_t nt = 0;
        for (size_t i = 0; trash && i < n && total > goal; i++) {
                if (cache_find_ref(c, v[i].sha))
                        continue;
                char lock[80], size[80], dst[128];
                snprintf(lock, sizeof(lock), "%s.lock", v[i].sha);
                snprintf(size, sizeof(size), "%s.size", v[i].sha);
                _cleanup_fd_ int fd = openat(c->vfd, lock,
                                             O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue; /* another process uses it */
                unsigned char rnd[8];
                RAND_bytes(rnd, sizeof(rnd));
                snprintf(dst, sizeof(dst), "evict-%.16s-%02x%02x%02x%02x", v[i].sha, rnd[0],
                         rnd[1], rnd[2], rnd[3]);
                if (renameat(c->vfd, v[i].sha, c->tmpfd, dst) < 0 && errno != ENOENT)
                        continue;
                unlinkat(c->vfd, size, 0);
                unlinkat(c->vfd, lock, 0);
                trash[nt++] = strdup(dst);
                total -= v[i].size;
        }
        free(v);
        *ret_trash = trash;
        *ret_ntrash = nt;
        return before - total;
}

void cache_empty_trash(struct storage_cache *c, char **trash, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (trash[i])
                        (void)fs_rm_rf_at(c->tmpfd, trash[i]);
                free(trash[i]);
        }
        free(trash);
}

/* After an insert (mutex held): back within the budget, with the other
 * workers sharing the directory (global lock). */
uint64_t cache_evict_shared(struct storage_cache *c, uint64_t more, char ***ret_trash,
                            size_t *ret_ntrash)
{
        cache_global_lock(c);
        uint64_t gone = evict(c, more, ret_trash, ret_ntrash);
        cache_global_unlock(c);
        return gone;
}

/* Unlocked: the temporary tree (gone already once renamed in) and what
 * eviction set aside. */
void cache_drop_tmp(struct storage_cache *c, const char *tmpname, char **trash, size_t ntrash)
{
        (void)fs_rm_rf_at(c->tmpfd, tmpname);
        cache_empty_trash(c, trash, ntrash);
}

bool cache_free_above(const struct storage_cache *c, uint64_t more)
{
        struct statvfs sv;
        return !c->min_free || fstatvfs(c->dirfd, &sv) < 0 ||
               (uint64_t)sv.f_bavail * sv.f_frsize >= c->min_free + more;
}

void storage_cache_set_min_free(struct storage_cache *c, uint64_t bytes)
{
        if (c)
                c->min_free = bytes;
}

uint64_t storage_cache_reclaim(struct storage_cache *c, uint64_t bytes)
{
        if (!c || bytes == 0)
                return 0;
        char **trash = NULL;
        size_t ntrash = 0;
        pthread_mutex_lock(&c->mu);
        uint64_t gone = cache_evict_shared(c, bytes, &trash, &ntrash);
        pthread_mutex_unlock(&c->mu);
        cache_empty_trash(c, trash, ntrash);
        return gone;
}

uint64_t storage_cache_size(struct storage_cache *c)
{
        uint64_t total = 0;
        storage_cache_stats(c, NULL, &total);
        return total;
}

void storage_cache_stats(struct storage_cache *c, uint64_t *ret_entries, uint64_t *ret_bytes)
{
        struct victim *v = NULL;
        size_t n = 0;
        uint64_t total = 0;
        pthread_mutex_lock(&c->mu);
        cache_global_lock(c);
        (void)scan(c, &v, &n, &total);
        cache_global_unlock(c);
        pthread_mutex_unlock(&c->mu);
        free(v);
        if (ret_entries)
                *ret_entries = n;
        if (ret_bytes)
                *ret_bytes = total;
}
