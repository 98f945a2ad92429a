/* A job's workspace as a filesystem of its own: a sparse ext4 image in the
 * job's directory, attached to a loop device and mounted nosuid,nodev.
 *
 * Why a filesystem and not a directory with checks: the kernel then counts
 * what the job really allocates (a sparse file's holes cost nothing, a hard
 * link costs nothing, every block and every inode counts), refuses the
 * write that would go past the limit with ENOSPC, and the worker never has
 * to copy or measure anything.  The image lives on the worker's disk, so
 * the job's files are not charged to its memory cgroup as tmpfs pages are.
 *
 * mke2fs options, chosen for speed (a 2 GiB image formats in ~0.1 s and
 * starts with ~1 MiB allocated): no journal (the filesystem dies with the
 * job: nothing to recover), lazy inode tables, no discard, no reserved
 * blocks (the job gets all of disk_mb).
 *
 * The loop device is configured with LO_FLAGS_AUTOCLEAR: it detaches by
 * itself when the filesystem is unmounted, so unmounting is the whole
 * teardown, and a worker killed at any point leaves only mounts, which
 * sandbox_workspace_cleanup() finds in mountinfo. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

extern char **environ;

static const char *const mke2fs_paths[] = { "/usr/sbin/mke2fs", "/sbin/mke2fs",
                                            "/usr/local/sbin/mke2fs" };

static const char *find_mke2fs(void)
{
        for (size_t i = 0; i < ELEMENTSOF(mke2fs_paths); i++)
                if (access(mke2fs_paths[i], X_OK) == 0)
                        return mke2fs_paths[i];
        return NULL;
}

static bool ext4_supported(void)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/filesystems", "re");
        char line[128];
        while (f && fgets(line, sizeof(line), f))
                if (strcmp(line, "\text4\n") == 0)
                        return true;
        return false;
}

bool sandbox_workspace_available(char *why, size_t n)
{
        /* Asked before every job: once a host can, it can (a yes is kept;
         * a no is asked again, since e2fsprogs may be installed meanwhile). */
        static _Atomic bool known_yes;
        if (known_yes) {
                if (why && n)
                        why[0] = '\0';
                return true;
        }
        const char *reason = NULL;
        if (geteuid() != 0)
                reason = "not root (mounting a per-job filesystem needs root)";
        else if (access("/dev/loop-control", R_OK | W_OK) < 0)
                reason = "no /dev/loop-control (loop devices are not available)";
        else if (!ext4_supported())
                reason = "the kernel does not support ext4";
        else if (!find_mke2fs())
                reason = "mke2fs not found (install e2fsprogs)";
        if (why && n)
                snprintf(why, n, "%s", reason ? reason : "");
        known_yes = reason == NULL;
        return reason == NULL;
}

uint64_t sandbox_workspace_inodes(uint64_t disk_mb, uint64_t files)
{
        /* One inode per 4 KiB block at most: beyond that the inode tables
         * would eat the space they are meant to index. */
        uint64_t cap = disk_mb * 256;
        uint64_t n = files < cap ? files : cap;
        /* The root, lost+found, the workspace and scratch directories and
         * ext4's reserved inodes are not the job's files. */
        return n + SANDBOX_WORKSPACE_SPARE_INODES;
}

/* Runs mke2fs on image; its stderr (first line) goes into the error.
 * prjquota: with project quotas (only to probe for them). */
static int run_mke2fs(const char *image, uint64_t inodes, bool prjquota, struct bc_error *err)
{
        const char *mke2fs = find_mke2fs();
        if (!mke2fs)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOENT,
                                    "workspace filesystem: mke2fs not found (install e2fsprogs)");
        char n[32];
        snprintf(n, sizeof(n), "%llu", (unsigned long long)inodes);
        char *argv[] = { (char *)mke2fs,
                         "-t",
                         "ext4",
                         "-q",
                         "-F",
                         "-m",
                         "0",
                         "-N",
                         n,
                         "-O",
                         prjquota ? "^has_journal,quota,project" : "^has_journal",
                         "-E",
                         prjquota ? "lazy_itable_init=1,nodiscard,root_owner=0:0,"
                                    "quotatype=prjquota"
                                  : "lazy_itable_init=1,nodiscard,root_owner=0:0",
                         (char *)image,
                         NULL };
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "pipe: %m");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, p[1], 2);
        char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL };
        pid_t pid;
        int r = posix_spawn(&pid, mke2fs, &fa, NULL, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (r != 0) {
                close(p[0]);
                return bc_error_set(err, BC_SANDBOX_SETUP, r, "spawn %s: %s", mke2fs, strerror(r));
        }
        char msg[512];
        size_t len = 0;
        for (;;) {
                ssize_t k = read(p[0], msg + len, sizeof(msg) - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t)k;
                if (len == sizeof(msg) - 1)
                        break;
        }
        msg[len] = '\0';
        close(p[0]);
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "waitpid mke2fs: %m");
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                msg[strcspn(msg, "\n")] = '\0';
                return bc_error_set(err, BC_SANDBOX_SETUP, EIO, "mke2fs %s failed: %s", image,
                                    *msg ? msg : "no message");
        }
        return 0;
}

/* Opens /dev/loopN, making the node when the kernel added the device but
 * nobody created it (a /dev that is not devtmpfs, as in some containers). */
static int open_loop(int n)
{
        char path[64];
        snprintf(path, sizeof(path), "/dev/loop%d", n);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && mknod(path, S_IFBLK | 0600, makedev(7, (unsigned)n)) == 0)
                fd = open(path, O_RDWR | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* A free loop device attached to image_fd with autoclear; *ret_n its number.
 * Another process may take the device GET_FREE returned before we
 * configure it (EBUSY): ask again. */
static int attach_loop(int image_fd, int *ret_n, struct bc_error *err)
{
        _cleanup_fd_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (ctl < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open /dev/loop-control: %m");
        for (int attempt = 0; attempt < 16; attempt++) {
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (n < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "LOOP_CTL_GET_FREE: %m");
                int fd = open_loop(n);
                if (fd < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, -fd, "open /dev/loop%d: %s", n,
                                            strerror(-fd));
                struct loop_config lc = { .fd = (unsigned)image_fd };
                lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
                if (ioctl(fd, LOOP_CONFIGURE, &lc) == 0) {
                        *ret_n = n;
                        return fd;
                }
                int e = errno;
                close(fd);
                if (e != EBUSY)
                        return bc_error_set(err, BC_SANDBOX_SETUP, e,
                                            "LOOP_CONFIGURE /dev/loop%d: %s", n, strerror(e));
        }
        return bc_error_set(err, BC_SANDBOX_SETUP, EBUSY, "no free loop device after 16 tries");
}

int sandbox_workspace_make(const char *image, const char *mountpoint, uint64_t disk_mb,
                           uint64_t files, struct bc_error *err)
{
        if (disk_mb == 0 || files == 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL,
                                    "workspace filesystem: disk_mb and files must be set");
        _cleanup_fd_ int fd = open(image, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                   0600);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", image);
        /* Sparse: only what mke2fs and the job write is allocated. */
        if (ftruncate(fd, (off_t)(disk_mb << 20)) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "size %s: %m", image);
        int r = run_mke2fs(image, sandbox_workspace_inodes(disk_mb, files), false, err);
        if (r < 0)
                return r;
        int n = -1;
        _cleanup_fd_ int loop = attach_loop(fd, &n, err);
        if (loop < 0)
                return loop;
        char dev[64];
        snprintf(dev, sizeof(dev), "/dev/loop%d", n);
        if (mkdir(mountpoint, 0700) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mkdir %s: %m", mountpoint);
        /* Closing `loop` after a failed mount detaches it (autoclear); after
         * a mount, the mount holds it until it is unmounted. */
        if (mount(dev, mountpoint, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME,
                  "errors=remount-ro") < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mount %s on %s: %m", dev,
                                    mountpoint);
        return 0;
}

/* Formats a 16 MiB image with project quotas in a temporary directory and
 * mounts it with prjquota: the one sure test (ext4 refuses the mount when
 * the kernel lacks CONFIG_QUOTA or CONFIG_QFMT_V2, and says so in the
 * kernel log). */
bool sandbox_workspace_project_quota(char *why, size_t n)
{
        char dir[] = "/tmp/boxcar-prjquota-XXXXXX", img[64], mnt[64], msg[160] = "";
        struct bc_error err = BC_ERROR_INIT;
        bool yes = false;
        if (!sandbox_workspace_available(msg, sizeof(msg)) || !mkdtemp(dir)) {
                if (!*msg)
                        snprintf(msg, sizeof(msg), "mkdtemp: %s", strerror(errno));
                goto out;
        }
        snprintf(img, sizeof(img), "%s/img", dir);
        snprintf(mnt, sizeof(mnt), "%s/m", dir);
        int fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        int loop = -1, nl = -1;
        if (fd < 0 || ftruncate(fd, 16 << 20) < 0 || mkdir(mnt, 0700) < 0) {
                snprintf(msg, sizeof(msg), "%s: %s", dir, strerror(errno));
        } else if (run_mke2fs(img, 1024, true, &err) < 0 ||
                   (loop = attach_loop(fd, &nl, &err)) < 0) {
                snprintf(msg, sizeof(msg), "%s", bc_error_message(&err));
        } else {
                char dev[64];
                snprintf(dev, sizeof(dev), "/dev/loop%d", nl);
                yes = mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV, "prjquota") == 0;
                if (yes)
                        umount2(mnt, UMOUNT_NOFOLLOW);
                else
                        snprintf(msg, sizeof(msg),
                                 "ext4 with prjquota does not mount (%s): the kernel lacks "
                                 "CONFIG_QUOTA or CONFIG_QFMT_V2",
                                 strerror(errno));
        }
        if (loop >= 0)
                close(loop); /* autoclear */
        if (fd >= 0)
                close(fd);
        unlink(img);
        rmdir(mnt);
        rmdir(dir);
out:
        bc_error_clear(&err);
        if (why && n)
                snprintf(why, n, "%s", yes ? "" : msg);
        return yes;
}

int sandbox_workspace_private_mounts(struct bc_error *err)
{
        if (unshare(CLONE_NEWNS) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "unshare(CLONE_NEWNS): %m");
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "make / a slave mount: %m");
        return 0;
}

int sandbox_workspace_unmount(const char *mountpoint, struct bc_error *err)
{
        if (umount2(mountpoint, UMOUNT_NOFOLLOW) == 0 || errno == EINVAL || errno == ENOENT)
                return 0; /* EINVAL: not a mount point (any more) */
        /* Busy (a process still has a file open): detach it from the tree;
         * the kernel finishes, and frees the loop device, once unused. */
        if (umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                return 0;
        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "unmount %s: %m", mountpoint);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
        char *w = s;
        for (char *r = s; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else {
                        *w++ = *r;
                }
        }
        *w = '\0';
}

int sandbox_workspace_cleanup(const char *dir, unsigned *ret_n, struct bc_error *err)
{
        *ret_n = 0;
        /* Several passes: unmounting a parent first is refused while its
         * children are there, and mountinfo lists parents first. */
        for (int pass = 0; pass < 8; pass++) {
                _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
                if (!f)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mountinfo: %m");
                char *mounts[256];
                size_t n = 0;
                char line[4096];
                size_t len = strlen(dir);
                while (n < ELEMENTSOF(mounts) && fgets(line, sizeof(line), f)) {
                        /* id parent major:minor root MOUNTPOINT ... */
                        char *save = NULL, *field = strtok_r(line, " ", &save);
                        for (int i = 0; field && i < 4; i++)
                                field = strtok_r(NULL, " ", &save);
                        if (!field)
                                continue;
                        unescape(field);
                        if (strncmp(field, dir, len) == 0 && field[len] == '/')
                                mounts[n++] = strdup(field);
                }
                if (n == 0)
                        return 0;
                int failed = 0;
                for (size_t i = n; i-- > 0;) {
                        if (mounts[i] && umount2(mounts[i], MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                                (*ret_n)++;
                        else
                                failed = errno;
                        free(mounts[i]);
                }
                if (failed && pass == 7)
                        return bc_error_set(err, BC_SANDBOX_SETUP, failed,
                                            "unmount leftovers under %s: %s", dir,
                                            strerror(failed));
        }
        return 0;
}

int sandbox_workspace_check_bound(const char *dir, const struct statvfs *sv, uint64_t disk_mb,
                                  struct bc_error *err)
{
        uint64_t bytes = (uint64_t)sv->f_blocks * (uint64_t)sv->f_frsize;
        if (bytes <= disk_mb << 20)
                return 0;
        return bc_error_set(err, BC_SANDBOX_SETUP, EFBIG,
                            "--disk-mb %llu cannot be enforced on %s: it lies on a filesystem of "
                            "%llu MiB; give a directory on a filesystem of at most %llu MiB (the "
                            "worker makes one per job), or leave out --disk-mb",
                            (unsigned long long)disk_mb, dir, (unsigned long long)(bytes >> 20),
                            (unsigned long long)disk_mb);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        if (type == FTW_DP)
                rmdir(path);
        else
                unlink(path);
        return 0;
}

void sandbox_workspace_remove_tree(const char *dir)
{
        /* FTW_PHYS: a symlink the job planted is removed, never followed;
         * FTW_MOUNT: nothing mounted below is entered. */
        nftw(dir, remove_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void sandbox_workspace_remove_dir(const char *dir)
{
        unsigned n = 0;
        struct bc_error err = BC_ERROR_INIT;
        (void)sandbox_workspace_cleanup(dir, &n, &err);
        bc_error_clear(&err);
        sandbox_workspace_remove_tree(dir);
}
