/* See dir_bin.h. */
#include "worker/job/dir_bin.h"

#include <dirent.h>
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
#include "common/io.h"
#include "sandbox/sandbox.h"
#include "worker/warm/ws_wipe.h"

/* What a new job directory holds (job_dir_make, prepare_meta, the
 * workspace pool's mount point), with the modes it is made with, before
 * the umask. */
static const struct {
        const char *name;
        mode_t type, mode;
} kept[] = {
        { "lock", S_IFREG, 0600 },
        { "workspace", S_IFDIR, 0755 },
        { "meta", S_IFDIR, 0755 },
        { "fs", S_IFDIR, 0700 },
};
#define DIR_MODE 0700

struct kept_dir {
        unsigned n;
        int lock;
};

struct dir_bin {
        char *jobs;             /* work_dir/jobs */
        mode_t umask;
        uid_t uid;
        gid_t gid;
        pthread_mutex_t lock;
        unsigned cap, count, next;
        struct kept_dir *dirs;  /* a stack: the last kept is taken first */
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

/* Empties the directory dfd back to what a new one holds: what a job
 * directory starts with is emptied and kept, anything else removed.  Its
 * lock file must be the one held (lock): without it, another worker's
 * start-up cleanup would take the directory for a leftover. */
static int empty_dir(const struct dir_bin *b, int dfd, dev_t dev, int lock)
{
        struct stat held;
        if (fstat(lock, &held) < 0)
                return -errno;
        bool locked = false;
        DIR *d = bc_opendir_at(dfd);
        if (!d)
                return -EIO;
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                const char *name = de->d_name;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        continue;
                struct statx st;
                if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                          STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_NLINK |
                                  STATX_SIZE | STATX_INO, &st) < 0) {
                        r = -errno;
                        break;
                }
                if (makedev(st.stx_dev_major, st.stx_dev_minor) != dev ||
                    (st.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
                        r = -EXDEV;
                        break;
                }
                size_t i = 0;
                while (i < ELEMENTSOF(kept) && strcmp(kept[i].name, name) != 0)
                        i++;
                bool keep = i < ELEMENTSOF(kept) && as_made(b, &st, kept[i].type, kept[i].mode);
                if (keep && S_ISREG(st.stx_mode)) {
                        locked = st.stx_ino == held.st_ino && st.stx_nlink == 1 &&
                                 st.stx_size == 0;
                        if (!locked)
                                r = -EEXIST;
                } else if (S_ISDIR(st.stx_mode)) {
                        _cleanup_fd_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY |
                                                      O_NOFOLLOW | O_CLOEXEC);
                        r = sub < 0 ? -errno : ws_wipe_tree(sub, dev);
                        if (r == 0 && !keep && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
                                r = -errno;
                } else if (unlinkat(dfd, name, 0) < 0) {
                        r = -errno;
                }
        }
        closedir(d);
        return r == 0 && !locked ? -ENOENT : r;
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
            statx(dfd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID, &st) < 0 ||
            !(st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
            !as_made(b, &st, S_IFDIR, DIR_MODE) ||
            empty_dir(b, dfd, makedev(st.stx_dev_major, st.stx_dev_minor), lock) < 0)
                return false;
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
