/* See ws_wipe.h. */
#include "worker/workdir/ws_wipe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"

#define WIPE_SLACK_BLOCKS 16
/* How long the counts may take to come back down (see wait_counts). */
#define WIPE_SETTLE_MS 200

/* Removes what is under the directory dfd, on device dev only, never
 * following a symlink nor entering a mount (statx tells a bind mount of
 * the same filesystem by STATX_ATTR_MOUNT_ROOT), but for the entries keep
 * says to keep (directories emptied); dfd stays open (the caller's). */
static int wipe_entries(int dfd, dev_t dev, unsigned depth, unsigned mask, ws_wipe_keep keep,
                        void *ctx)
{
        if (depth > WS_WIPE_MAX_DEPTH)
                return -ELOOP;
        DIR *d = bc_opendir_at(dfd);
        if (!d)
                return -errno;
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                const char *name = de->d_name;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        continue;
                struct statx st;
                int k = 0;
                if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, mask | STATX_TYPE,
                          &st) < 0) {
                        r = -errno;
                } else if (makedev(st.stx_dev_major, st.stx_dev_minor) != dev ||
                           (st.stx_attributes & STATX_ATTR_MOUNT_ROOT)) {
                        r = -EXDEV; /* a mount: never ours to enter */
                } else if (keep && (k = keep(ctx, name, &st)) < 0) {
                        r = k;
                } else if (S_ISDIR(st.stx_mode)) {
                        _cleanup_fd_ int sub = openat(
                                dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        r = sub < 0 ? -errno : wipe_entries(sub, dev, depth + 1, 0, NULL, NULL);
                        if (r == 0 && !k && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
                                r = -errno;
                } else if (!k && unlinkat(dfd, name, 0) < 0) {
                        r = -errno;
                }
        }
        closedir(d);
        return r;
}

int ws_wipe_dir(int dfd, dev_t dev, unsigned mask, ws_wipe_keep keep, void *ctx)
{
        return wipe_entries(dfd, dev, 0, mask, keep, ctx);
}

/* The filesystem's root holds lost+found, ws and scratch: anything else is
 * a surprise, and a surprise is discarded, not wiped. */
static int check_root(int root)
{
        DIR *d = bc_opendir_at(root);
        if (!d)
                return -EIO;
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                const char *n = de->d_name;
                if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, "lost+found") &&
                    strcmp(n, "ws") && strcmp(n, "scratch"))
                        r = -EEXIST;
        }
        closedir(d);
        return r;
}

/* Every inode the job made is gone, its blocks with them (a few blocks of
 * slack: directory blocks may be laid out anew): 0, or -ENOTEMPTY.
 *
 * Not at once, though: the job's sandbox bound the old ws/ and scratch/
 * directories, and the kernel may drop a dead sandbox's mounts a few
 * milliseconds after its last process (after an RCU grace period, off the
 * exiting task: 0.7-5 ms seen here, 1-2 wipes in 80 back-to-back jobs).
 * Until then those directories, removed above, stay allocated.  So counts
 * above the base are read again, backing off, for up to WIPE_SETTLE_MS;
 * what is still held then (an open file nothing should have) is real, and
 * the filesystem is discarded. */
static int wait_counts(const char *fs, uint64_t base_inodes, uint64_t base_blocks)
{
        unsigned waited_us = 0, step_us = 500;
        for (;;) {
                struct statvfs sv;
                if (statvfs(fs, &sv) < 0)
                        return -errno;
                uint64_t inodes = sv.f_files - sv.f_ffree, blocks = sv.f_blocks - sv.f_bfree;
                if (sv.f_flag & ST_RDONLY)
                        return -EROFS;
                if (inodes == base_inodes && blocks <= base_blocks + WIPE_SLACK_BLOCKS)
                        return 0;
                if (inodes < base_inodes || waited_us >= WIPE_SETTLE_MS * 1000)
                        return -ENOTEMPTY;
                usleep(step_us);
                waited_us += step_us;
                if (step_us < 32000)
                        step_us *= 2;
        }
}

int ws_make_scratch_subdirs(int root)
{
        _cleanup_fd_ int sc = openat(root, "scratch",
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sc < 0)
                return -errno;
        static const char *const subs[] = { "tmp", "shm" };
        for (size_t i = 0; i < ELEMENTSOF(subs); i++)
                /* The mode again after the umask, as the sandbox checks it. */
                if (mkdirat(sc, subs[i], 01777) < 0 || fchmodat(sc, subs[i], 01777, 0) < 0)
                        return -errno;
        return 0;
}

int ws_wipe(const char *fs, dev_t dev, uint64_t base_inodes, uint64_t base_blocks)
{
        _cleanup_fd_ int root = open(fs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (root < 0 || fstat(root, &st) < 0)
                return -errno;
        if (st.st_dev != dev)
                return -EXDEV;
        int r = check_root(root);
        static const char *const dirs[] = { "ws", "scratch" };
        for (size_t i = 0; r == 0 && i < ELEMENTSOF(dirs); i++) {
                struct stat ds;
                _cleanup_fd_ int d = openat(root, dirs[i],
                                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (d < 0 || fstat(d, &ds) < 0)
                        r = d < 0 && errno == ENOENT ? 0 : -errno;
                else if (ds.st_dev != dev)
                        r = -EXDEV;
                else
                        r = wipe_entries(d, dev, 0, 0, NULL, NULL);
                if (r == 0 && d >= 0 && unlinkat(root, dirs[i], AT_REMOVEDIR) < 0)
                        r = -errno;
                if (r == 0 && mkdirat(root, dirs[i], 0755) < 0)
                        r = -errno;
        }
        if (r == 0)
                r = ws_make_scratch_subdirs(root);
        return r == 0 ? wait_counts(fs, base_inodes, base_blocks) : r;
}
