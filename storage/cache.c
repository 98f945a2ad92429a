/* Per-worker volume cache, keyed by the SHA-256 of the tarball (or the
 * id of a stack of layers, storage_stack_id: see cache_layers.c).
 *
 * Layout under the cache directory:
 *   lock              flock(LOCK_EX) while the index changes (insert, evict,
 *                     take a reference), so processes sharing the dir agree
 *   v/<sha>/          the extracted tree, read-only on disk
 *   v/<sha>.size      its data bytes and entry count (decimal), written
 *                     before it appears; the budget charges both (see
 *                     CACHE_ENTRY_COST)
 *   v/<sha>.lock      held LOCK_SH by every process using the entry; its
 *                     mtime is the entry's last use (the LRU clock)
 *   tmp/              downloads in progress and entries being deleted
 *
 * Within a process a mutex guards the in-use list (flock locks belong to
 * open file descriptions, so threads cannot rely on them among
 * themselves).  An entry is evicted only after LOCK_EX|LOCK_NB on its lock
 * file succeeds, i.e. no process holds it; since references are taken
 * under the global lock, that check cannot race.  An entry appears by
 * rename(2) of a fully extracted, verified directory: readers never see a
 * partial volume.  Lock order: mutex, then the global flock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "common/rmtree.h"
#include "storage/cache-internal.h"
#include "storage/fsutil.h"

#define STALE_TMP_S (24 * 3600)

void cache_global_lock(struct storage_cache *c)
{
        while (flock(c->lock_fd, LOCK_EX) < 0 && errno == EINTR) {
        }
}

void cache_global_unlock(struct storage_cache *c)
{
        (void)flock(c->lock_fd, LOCK_UN);
}

static int open_subdir(int dirfd, const char *name)
{
        if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Leftovers of crashed processes: old enough that no live download can
 * still be writing them. */
static void remove_stale_tmp(struct storage_cache *c)
{
        int d2 = fs_reopen_dir(c->tmpfd);
        DIR *d = d2 < 0 ? NULL : fdopendir(d2);
        if (!d) {
                if (d2 >= 0)
                        close(d2);
                return;
        }
        time_t now = time(NULL);
        struct dirent *de;
        while ((de = readdir(d))) {
                struct stat st;
                if (de->d_name[0] == '.' ||
                    fstatat(c->tmpfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (now - st.st_mtime > STALE_TMP_S || strncmp(de->d_name, "evict-", 6) == 0)
                        (void)fs_rm_rf_at(c->tmpfd, de->d_name);
        }
        closedir(d);
}

void storage_cache_free(struct storage_cache *c)
{
        if (!c)
                return;
        while (c->refs) { /* entries the caller forgot: drop our locks */
                struct cache_ref *r = c->refs;
                c->refs = r->next;
                close(r->lock_fd);
                free(r->path);
                free(r);
        }
        while (c->fetching) {
                struct inflight *f = c->fetching;
                c->fetching = f->next;
                free(f);
        }
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        int fds[] = { c->dirfd, c->vfd, c->tmpfd, c->lock_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(c->dir);
        free(c);
}
BC_DEFINE_CLEANUP(struct storage_cache *, storage_cache_free)

int storage_cache_new(const char *dir, uint64_t max_bytes, const struct storage_config *cfg,
                      const struct storage_limits *limits, struct storage_cache **ret,
                      struct bc_error *err)
{
        if (limits && storage_limits_validate(limits, err) < 0)
                return -EINVAL;
        _cleanup_(storage_cache_freep) struct storage_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        c->dirfd = c->vfd = c->tmpfd = c->lock_fd = -1;
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv, NULL);
        c->dir = strdup(dir);
        c->max_bytes = max_bytes;
        c->cfg = cfg;
        c->limits = limits;
        if (!c->dir)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_IO, errno, "cache: create %s: %m", dir);
        c->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->dirfd < 0)
                return bc_error_set(err, BC_IO, errno, "cache: open %s: %m", dir);
        c->vfd = open_subdir(c->dirfd, "v");
        c->tmpfd = open_subdir(c->dirfd, "tmp");
        c->lock_fd = openat(c->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (c->vfd < 0 || c->tmpfd < 0 || c->lock_fd < 0)
                return bc_error_set(err, BC_IO,
                                    c->vfd < 0     ? -c->vfd
                                    : c->tmpfd < 0 ? -c->tmpfd
                                                   : errno,
                                    "cache: set up %s: %s", dir,
                                    strerror(c->vfd < 0     ? -c->vfd
                                             : c->tmpfd < 0 ? -c->tmpfd
                                                            : errno));
        cache_global_lock(c);
        remove_stale_tmp(c);
        cache_global_unlock(c);
        *ret = steal_pointer(&c);
        return 0;
}

int storage_cache_set_owner(struct storage_cache *c, uid_t uid, gid_t gid, struct bc_error *err)
{
        /* Entries are writable by uid (their modes as packed): only we may
         * reach them, never uid itself. */
        if (fchmod(c->dirfd, 0700) < 0)
                return bc_error_set(err, BC_IO, errno, "cache: chmod 0700 %s: %m", c->dir);
        c->owned = true;
        c->uid = uid;
        c->gid = gid;
        return 0;
}

struct cache_ref *cache_find_ref(struct storage_cache *c, const char *sha)
{
        for (struct cache_ref *r = c->refs; r; r = r->next)
                if (strcmp(r->sha, sha) == 0)
                        return r;
        return NULL;
}

static void touch(int fd)
{
        (void)futimens(fd, NULL);
}

/* With the mutex held: a reference to an entry on disk, or NULL on a miss. */
static struct cache_ref *take_ref(struct storage_cache *c, const char *sha)
{
        struct cache_ref *r = cache_find_ref(c, sha);
        if (r) {
                r->refs++;
                touch(r->lock_fd);
                return r;
        }
        cache_global_lock(c);
        struct stat st;
        char name[80];
        snprintf(name, sizeof(name), "%s.lock", sha);
        int fd = -1;
        if (fstatat(c->vfd, sha, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                fd = openat(c->vfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        /* The evictor holds LOCK_EX only under the global lock we hold. */
        if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0) {
                close(fd);
                fd = -1;
        }
        cache_global_unlock(c);
        if (fd < 0)
                return NULL;
        r = calloc(1, sizeof(*r));
        if (!r || asprintf(&r->path, "%s/v/%s", c->dir, sha) < 0) {
                free(r);
                close(fd);
                return NULL;
        }
        memcpy(r->sha, sha, sizeof(r->sha));
        r->lock_fd = fd;
        r->refs = 1;
        touch(fd);
        r->next = c->refs;
        c->refs = r;
        return r;
}

/* Moves a verified, read-only tree from tmp/ into v/<sha> (mutex held). */
static int insert(struct storage_cache *c, const char *tmpname, const char *sha, uint64_t size,
                  uint64_t entries)
{
        char name[96], buf[64];
        cache_global_lock(c);
        snprintf(name, sizeof(name), "%s.size", sha);
        int fd = openat(c->vfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        int len = snprintf(buf, sizeof(buf), "%llu %llu\n", (unsigned long long)size,
                           (unsigned long long)entries);
        int r = fd < 0 ? -errno : bc_write_all(fd, buf, (size_t)len);
        if (fd >= 0)
                close(fd);
        if (r == 0 && renameat(c->tmpfd, tmpname, c->vfd, sha) < 0)
                r = -errno;
        if (r == 0) {
                snprintf(name, sizeof(name), "%s.lock", sha);
                fd = openat(c->vfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd >= 0) {
                        touch(fd);
                        close(fd);
                }
        }
        cache_global_unlock(c);
        return r;
}

static bool is_fetching(struct storage_cache *c, const char *sha)
{
        for (struct inflight *f = c->fetching; f; f = f->next)
                if (strcmp(f->sha, sha) == 0)
                        return true;
        return false;
}

static void fetch_done(struct storage_cache *c, const char *sha)
{
        for (struct inflight **p = &c->fetching; *p; p = &(*p)->next)
                if (strcmp((*p)->sha, sha) == 0) {
                        struct inflight *f = *p;
                        *p = f->next;
                        free(f);
                        break;
                }
        pthread_cond_broadcast(&c->cv);
}

static int new_handle(struct cache_ref *r, bool downloaded, uint64_t bytes,
                      struct storage_cache_entry **ret, struct bc_error *err)
{
        struct storage_cache_entry *h = calloc(1, sizeof(*h));
        if (!h)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        h->ref = r;
        h->downloaded = downloaded;
        h->downloaded_bytes = bytes;
        *ret = h;
        return 0;
}

static void release_ref(struct storage_cache *c, struct cache_ref *r);

void cache_build_init(struct storage_cache *c, const char *kind, const char *claimed,
                      struct cache_build *b)
{
        unsigned char rnd[8];
        RAND_bytes(rnd, sizeof(rnd));
        *b = (struct cache_build){ .claimed = claimed };
        snprintf(b->tmpname, sizeof(b->tmpname), "%s-%d-%02x%02x%02x%02x%02x%02x", kind,
                 (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
        snprintf(b->tmppath, sizeof(b->tmppath), "%s/tmp/%s", c->dir, b->tmpname);
        if (c->limits)
                b->limits = *c->limits;
        else
                storage_limits_default(&b->limits);
        b->limits.min_free = c->min_free;
}

int cache_seal_tree(struct storage_cache *c, const char *path, struct bc_error *err)
{
        _cleanup_fd_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = fd < 0     ? -errno
                : c->owned ? fs_chown_tree(fd, c->uid, c->gid)
                           : fs_make_readonly(fd);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "cache: %s %s: %s",
                                    c->owned ? "give away" : "make read-only", path, strerror(-r));
        return 0;
}

int cache_publish(struct storage_cache *c, const struct cache_build *b, int r,
                  struct storage_cache_entry **ret, struct bc_error *err)
{
        pthread_mutex_lock(&c->mu);
        if (b->claimed)
                fetch_done(c, b->claimed);
        struct cache_ref *ref = NULL;
        char **trash = NULL;
        size_t ntrash = 0;
        if (r == 0) {
                ref = take_ref(c, b->sha);
                if (!ref) {
                        r = insert(c, b->tmpname, b->sha, b->bytes, b->entries);
                        /* Another process published the same tree meanwhile. */
                        if (r == -ENOTEMPTY || r == -EEXIST)
                                r = 0;
                        ref = r == 0 ? take_ref(c, b->sha) : NULL;
                        if (r < 0)
                                bc_error_set(err, BC_IO, -r, "cache: insert %s: %s", b->sha,
                                             strerror(-r));
                        else if (!ref)
                                r = bc_error_set(err, BC_IO, EIO, "cache: entry %s vanished",
                                                 b->sha);
                }
                /* Evict only once our reference exists, so the fresh
                 * entry is never the victim. */
                if (ref)
                        cache_evict_shared(c, 0, &trash, &ntrash);
        }
        pthread_mutex_unlock(&c->mu);
        cache_drop_tmp(c, b->tmpname, trash, ntrash);
        if (r < 0)
                return r;
        r = new_handle(ref, true, b->downloaded, ret, err);
        if (r < 0) {
                pthread_mutex_lock(&c->mu);
                release_ref(c, ref);
                pthread_mutex_unlock(&c->mu);
        }
        return r;
}

/* Downloads url into tmp/, then publishes it (mutex not held on entry).
 * claimed: whether this thread claimed sha (cache_hit_or_claim). */
static int download(struct storage_cache *c, const char *url, const char *sha, bool claimed,
                    const struct netguard *guard, struct storage_cache_entry **ret,
                    struct bc_error *err)
{
        struct cache_build b;
        cache_build_init(c, "dl", claimed ? sha : NULL, &b);
        struct storage_fetch_result res;
        int r = storage_fetch_extract(c->cfg, url, sha, b.tmppath, &b.limits, guard, &res, err);
        /* The disk ran low while extracting (the extraction is undone):
         * the entries nobody holds go before the download fails, once. */
        if (r == -ENOSPC && storage_cache_reclaim(c, UINT64_MAX) > 0) {
                bc_error_clear(err);
                r = storage_fetch_extract(c->cfg, url, sha, b.tmppath, &b.limits, guard, &res,
                                          err);
        }
        r = r ? r : cache_seal_tree(c, b.tmppath, err);
        if (r == 0) {
                memcpy(b.sha, res.sha256, sizeof(b.sha));
                b.bytes = res.bytes;
                b.entries = res.entries;
                b.downloaded = res.size;
        }
        return cache_publish(c, &b, r, ret, err);
}

/* At most what copying upper's files can take: all its filesystem holds
 * (the job's own, where nothing else lives). */
static uint64_t upper_bytes(const char *upper)
{
        struct statvfs sv;
        if (statvfs(upper, &sv) < 0)
                return 0;
        return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

int storage_cache_promote(struct storage_cache *c, const struct storage_cache_entry *base,
                          const char *merged, const char *upper, const char *sha256)
{
        if (!c->owned || !storage_sha256_valid(sha256))
                return -EINVAL;
        pthread_mutex_lock(&c->mu);
        struct cache_ref *have = take_ref(c, sha256);
        if (have)
                release_ref(c, have);
        pthread_mutex_unlock(&c->mu);
        if (have)
                return 0; /* already there (the job changed nothing, say) */
        if (!cache_free_above(c, upper_bytes(upper)))
                return -ENOSPC;
        unsigned char rnd[8];
        RAND_bytes(rnd, sizeof(rnd));
        char tmpname[64], tmppath[4200];
        snprintf(tmpname, sizeof(tmpname), "pr-%d-%02x%02x%02x%02x%02x%02x", (int)getpid(), rnd[0],
                 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
        snprintf(tmppath, sizeof(tmppath), "%s/tmp/%s", c->dir, tmpname);
        if (mkdirat(c->tmpfd, tmpname, 0700) < 0)
                return -errno;
        uint64_t bytes = 0, entries = 0;
        int r = fs_overlay_flatten(merged, upper, base->ref->path, tmppath, c->uid, c->gid, &bytes,
                                   &entries);
        /* Something else took the disk below the reserve meanwhile: a
         * promotion is only a head start for the next job. */
        if (r == 0 && !cache_free_above(c, 0))
                r = -ENOSPC;
        char **trash = NULL;
        size_t ntrash = 0;
        if (r == 0) {
                pthread_mutex_lock(&c->mu);
                r = insert(c, tmpname, sha256, bytes, entries);
                cache_evict_shared(c, 0, &trash, &ntrash);
                pthread_mutex_unlock(&c->mu);
        }
        cache_drop_tmp(c, tmpname, trash, ntrash);
        return r == -ENOTEMPTY || r == -EEXIST ? 0 : r; /* another made it meanwhile */
}

int storage_cache_acquire(struct storage_cache *c, const char *url, const char *sha256,
                          const struct netguard *guard, struct storage_cache_entry **ret,
                          struct bc_error *err)
{
        if (sha256 && !storage_sha256_valid(sha256))
                return bc_error_set(err, BC_USAGE, EINVAL, "cache: malformed sha256");
        if (!sha256 && !url)
                return bc_error_set(err, BC_USAGE, EINVAL, "cache: need a URL or a sha256");
        if (sha256) {
                int r = cache_hit_or_claim(c, sha256, url != NULL, ret, err);
                if (r <= 0)
                        return r;
        }
        return download(c, url, sha256, sha256 != NULL, guard, ret, err);
}

int cache_download_anyway(struct storage_cache *c, const char *url, const char *sha256,
                          const struct netguard *guard, struct storage_cache_entry **ret,
                          struct bc_error *err)
{
        return download(c, url, sha256, false, guard, ret, err);
}

int cache_hit_or_claim(struct storage_cache *c, const char *sha, bool can_fetch,
                       struct storage_cache_entry **ret, struct bc_error *err)
{
        pthread_mutex_lock(&c->mu);
        for (;;) {
                struct cache_ref *ref = take_ref(c, sha);
                if (ref) {
                        pthread_mutex_unlock(&c->mu);
                        int r = new_handle(ref, false, 0, ret, err);
                        if (r < 0) {
                                pthread_mutex_lock(&c->mu);
                                release_ref(c, ref);
                                pthread_mutex_unlock(&c->mu);
                        }
                        return r;
                }
                /* Another thread is fetching it: wait, not download twice. */
                if (!is_fetching(c, sha))
                        break;
                pthread_cond_wait(&c->cv, &c->mu);
        }
        struct inflight *f = can_fetch ? calloc(1, sizeof(*f)) : NULL;
        if (f) {
                memcpy(f->sha, sha, sizeof(f->sha));
                f->next = c->fetching;
                c->fetching = f;
        }
        pthread_mutex_unlock(&c->mu);
        if (!can_fetch)
                return bc_error_set(err, BC_NOT_FOUND, ENOENT, "cache: %s not cached", sha);
        if (!f)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        return 1;
}

struct cache_ref *cache_hold(struct storage_cache *c, const char *sha)
{
        pthread_mutex_lock(&c->mu);
        struct cache_ref *r = take_ref(c, sha);
        pthread_mutex_unlock(&c->mu);
        return r;
}

void cache_unhold(struct storage_cache *c, struct cache_ref *r)
{
        pthread_mutex_lock(&c->mu);
        release_ref(c, r);
        pthread_mutex_unlock(&c->mu);
}

/* Mutex held. */
static void release_ref(struct storage_cache *c, struct cache_ref *r)
{
        if (--r->refs)
                return;
        for (struct cache_ref **p = &c->refs; *p; p = &(*p)->next)
                if (*p == r) {
                        *p = r->next;
                        break;
                }
        touch(r->lock_fd);
        close(r->lock_fd);
        free(r->path);
        free(r);
}

void storage_cache_release(struct storage_cache *c, struct storage_cache_entry *e)
{
        if (!c || !e)
                return;
        pthread_mutex_lock(&c->mu);
        release_ref(c, e->ref);
        char **trash = NULL;
        size_t ntrash = 0;
        cache_evict_shared(c, 0, &trash, &ntrash);
        pthread_mutex_unlock(&c->mu);
        cache_empty_trash(c, trash, ntrash);
        free(e);
}

const char *storage_cache_entry_path(const struct storage_cache_entry *e)
{
        return e->ref->path;
}

void storage_cache_entry_stats(const struct storage_cache_entry *e, uint64_t *ret_bytes,
                               uint64_t *ret_entries)
{
        char path[4200], buf[64] = "";
        snprintf(path, sizeof(path), "%s.size", e->ref->path);
        _cleanup_fd_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        buf[k > 0 ? k : 0] = '\0';
        char *end = NULL;
        *ret_bytes = strtoull(buf, &end, 10);
        *ret_entries = strtoull(end, NULL, 10);
}

const char *storage_cache_entry_sha256(const struct storage_cache_entry *e)
{
        return e->ref->sha;
}

uint64_t storage_cache_entry_downloaded_bytes(const struct storage_cache_entry *e)
{
        return e->downloaded_bytes;
}

bool storage_cache_entry_downloaded(const struct storage_cache_entry *e)
{
        return e->downloaded;
}
