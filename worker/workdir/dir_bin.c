/* See dir_bin.h. */
#include "worker/workdir/dir_bin.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/sandbox.h"
#include "worker/workdir/ws_wipe.h"

/* What a new job directory holds (job_dir_make, prepare_meta, the
 * workspace pool's mount point), with the modes it is made with, before
 * the umask. */
static const struct {
        const char *name;
        mode_t type, mode;
} kept[] = {
        { "lock", S_IFREG, 0600 },
        { "workspace", S_IFDIR, 0755 },
        { JOB_DIR_META, S_IFDIR, 0755 },
        { "fs", S_IFDIR, 0700 },
};
#define DIR_MODE 0700

struct kept_dir {
        unsigned n;
        int lock;
};

struct dir_bin {
        char *jobs; /* work_dir/jobs */
        mode_t umask;
        uid_t uid;
        gid_t gid;
        pthread_mutex_t lock;
        unsigned cap, count, next;
        struct kept_dir *dirs; /* a stack: the last kept is taken first */
};

/* The process's umask, without changing it (umask(2) would, for every
 * thread at once): what a new directory's mode went through. */
static int read_umask(mode_t *ret)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        while (f && fgets(line, sizeof(line), f)) {
                unsigned m;
                if (sscanf(line, "Umask: %o", &m) == 1) {
                        *ret = (mode_t)m & 0777;
                        return 0;
                }
        }
        return -1;
}

struct dir_bin *dir_bin_new(const char *work_dir, unsigned cap)
{
        mode_t um;
        if (cap == 0 || read_umask(&um) < 0)
                return NULL;
        struct dir_bin *b = calloc(1, sizeof(*b));
        if (!b)
                return NULL;
        b->dirs = calloc(cap, sizeof(*b->dirs));
        if (!b->dirs || asprintf(&b->jobs, "%s/jobs", work_dir) < 0) {
                free(b->dirs);
                free(b);
                return NULL;
        }
        b->umask = um;
        b->uid = geteuid();
        b->gid = getegid();
        b->cap = cap;
        pthread_mutex_init(&b->lock, NULL);
        return b;
}

static void kept_path(const struct dir_bin *b, unsigned n, char *buf, size_t len)
{
        snprintf(buf, len, "%s/free-%ld-%u", b->jobs, (long)getpid(), n);
}

void dir_bin_free(struct dir_bin *b)
{
        if (!b)
                return;
        for (unsigned i = 0; i < b->count; i++) {
                char p[PATH_MAX];
                kept_path(b, b->dirs[i].n, p, sizeof(p));
                sandbox_workspace_remove_tree(p);
                close(b->dirs[i].lock);
        }
        pthread_mutex_destroy(&b->lock);
        free(b->dirs);
        free(b->jobs);
        free(b);
}

int dir_bin_take(struct dir_bin *b, const char *path)
{
        if (!b)
                return -1;
        pthread_mutex_lock(&b->lock);
        struct kept_dir d = { 0, -1 };
        if (b->count > 0)
                d = b->dirs[--b->count];
        pthread_mutex_unlock(&b->lock);
        if (d.lock < 0)
                return -1;
        char p[PATH_MAX];
        kept_path(b, d.n, p, sizeof(p));
        if (rename(p, path) == 0)
                return d.lock;
        sandbox_workspace_remove_tree(p);
        close(d.lock);
        return -1;
}

/* Whether st is what a new job directory's entry (or the directory
 * itself: type S_IFDIR, mode DIR_MODE) is: ours, with its mode. */
static bool as_made(const struct dir_bin *b, const struct statx *st, mode_t type, mode_t mode)
{
        return (st->stx_mode & S_IFMT) == type && (st->stx_mode & 07777) == (mode & ~b->umask) &&
               st->stx_uid == b->uid && st->stx_gid == b->gid &&
               !(st->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

struct emptying {
        const struct dir_bin *b;
        struct stat held; /* the lock */
        bool locked;      /* its file was found, as made */
};

/* What a job directory starts with is kept (a directory emptied), anything
 * else removed.  Its lock file must be the one held: without it, another
 * worker's start-up cleanup would take the directory for a leftover. */
static int keep_as_made(void *ctx, const char *name, const struct statx *st)
{
        struct emptying *e = ctx;
        size_t i = 0;
        while (i < ELEMENTSOF(kept) && strcmp(kept[i].name, name) != 0)
                i++;
        if (i == ELEMENTSOF(kept) || !as_made(e->b, st, kept[i].type, kept[i].mode))
                return 0;
        if (!S_ISREG(st->stx_mode))
                return 1;
        e->locked = st->stx_ino == e->held.st_ino && st->stx_nlink == 1 && st->stx_size == 0;
        return e->locked ? 1 : -EEXIST;
}

/* Empties the directory dfd back to what a new one holds, its lock file
 * the one held (lock). */
static int empty_dir(const struct dir_bin *b, int dfd, dev_t dev, int lock)
{
        struct emptying e = { .b = b };
        if (fstat(lock, &e.held) < 0)
                return -errno;
        int r = ws_wipe_dir(dfd, dev,
                            STATX_MODE | STATX_UID | STATX_GID | STATX_NLINK | STATX_SIZE |
                                    STATX_INO,
                            keep_as_made, &e);
        return r == 0 && !e.locked ? -ENOENT : r;
}

bool dir_bin_keep(struct dir_bin *b, const char *path, int lock)
{
        if (!b)
                return false;
        pthread_mutex_lock(&b->lock);
        bool room = b->count < b->cap;
        unsigned n = b->next++;
        pthread_mutex_unlock(&b->lock);
        if (!room)
                return false;
        _cleanup_fd_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct statx st;
        if (dfd < 0 ||
            statx(dfd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID, &st) <
                    0 ||
            !(st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
            !as_made(b, &st, S_IFDIR, DIR_MODE) ||
            empty_dir(b, dfd, makedev(st.stx_dev_major, st.stx_dev_minor), lock) < 0)
                return false;
        /* Best effort: without it (no meta directory: the job failed
         * before it), the next job makes its own. */
        (void)mkfifoat(dfd, JOB_DIR_META "/" JOB_DIR_PROGRESS, JOB_DIR_PROGRESS_MODE);
        char p[PATH_MAX];
        kept_path(b, n, p, sizeof(p));
        if (rename(path, p) < 0)
                return false;
        pthread_mutex_lock(&b->lock);
        room = b->count < b->cap;
        if (room)
                b->dirs[b->count++] = (struct kept_dir){ n, lock };
        pthread_mutex_unlock(&b->lock);
        if (!room && rename(p, path) < 0)
                sandbox_workspace_remove_tree(p);
        return room;
}
