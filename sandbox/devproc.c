/* The sandbox's /dev and /proc.
 *
 * /dev is a small tmpfs with only the harmless nodes (made there as root,
 * bound from the host in a user namespace, which cannot mknod) and a
 * private devpts instance (the host's ptys stay out of reach); it is made
 * read-only so the job cannot add anything.  /dev/shm is bound over its
 * directory later, from the scratch tmpfs (mounting on a read-only
 * directory is allowed).
 *
 * /proc is a fresh instance for the new pid namespace (only the job's
 * processes show), with the kernel-wide knobs read-only (sys, sysrq-trigger,
 * irq, bus) and the information leaks runc masks covered. */
#include "sandbox/devproc-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/mount-internal.h"

static int link_in(struct setup_ctx *x, const char *target, const char *rel)
{
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/%s", SBX_NEWROOT, rel);
        if (symlink(target, p) < 0)
                return setup_fail(x, errno, rel, "symlink");
        return 0;
}

/* A node of the host's /dev made (or bound, see below) as DEV/NAME,
 * 0666 like the host's. */
static int dev_node(struct setup_ctx *x, const char *name, dev_t dev, bool *can_mknod)
{
        char p[PATH_MAX], rel[64];
        snprintf(rel, sizeof(rel), "dev/%s", name);
        snprintf(p, sizeof(p), "%s/%s", SBX_NEWROOT, rel);
        /* A node is ~5 us where a bind costs ~25 plus its share of the
         * mount namespace's teardown. */
        if (*can_mknod) {
                if (mknod(p, S_IFCHR | 0666, dev) == 0)
                        return chmod(p, 0666) < 0 ? setup_fail(x, errno, rel, "chmod") : 0;
                if (errno != EPERM)
                        return setup_fail(x, errno, rel, "mknod");
                *can_mknod = false;
        }
        char host[64];
        snprintf(host, sizeof(host), "/dev/%s", name);
        return sbx_mount_bind(x, host, rel, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
}

int rootfs_dev(struct setup_ctx *x)
{
        x->step = SBX_STEP_DEV;
        /* The kernel's fixed numbers (Documentation/admin-guide/devices.txt). */
        static const struct {
                const char *name;
                unsigned major, minor;
        } nodes[] = {
                { "null", 1, 3 },   { "zero", 1, 5 },    { "full", 1, 7 },
                { "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
        };
        const char *dev = SBX_NEWROOT "/dev";
        int r = sbx_mount_mkdirs(x, "dev");
        if (r < 0)
                return r;
        if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC,
                  "mode=0755,size=64k,nr_inodes=64") < 0)
                return setup_fail(x, errno, "/dev", "mount tmpfs");
        bool can_mknod = true;
        for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
                r = dev_node(x, nodes[i].name, makedev(nodes[i].major, nodes[i].minor),
                             &can_mknod);
                if (r < 0)
                        return r;
        }
        r = sbx_mount_mkdirs(x, "dev/pts");
        if (r >= 0)
                r = sbx_mount_mkdirs(x, "dev/shm");
        if (r < 0)
                return r;
        if (mount("devpts", SBX_NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=0620") < 0)
                return setup_fail(x, errno, "/dev/pts", "mount devpts");
        static const char *const links[][2] = {
                { "pts/ptmx", "dev/ptmx" },          { "/proc/self/fd", "dev/fd" },
                { "/proc/self/fd/0", "dev/stdin" },  { "/proc/self/fd/1", "dev/stdout" },
                { "/proc/self/fd/2", "dev/stderr" },
        };
        for (size_t i = 0; i < ELEMENTSOF(links); i++) {
                r = link_in(x, links[i][0], links[i][1]);
                if (r < 0)
                        return r;
        }
        struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY };
        if (mount_setattr(AT_FDCWD, dev, 0, &a, sizeof(a)) < 0)
                return setup_fail(x, errno, "/dev", "make read-only");
        return 0;
}

/* Binds a /proc entry over itself, read-only. */
static int proc_readonly(struct setup_ctx *x, const char *name)
{
        char p[PATH_MAX], rel[256];
        snprintf(rel, sizeof(rel), "proc/%s", name);
        snprintf(p, sizeof(p), "%s/%s", SBX_NEWROOT, rel);
        if (access(p, F_OK) < 0)
                return 0;
        return sbx_mount_bind(x, p, rel,
                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                      MOUNT_ATTR_NOEXEC);
}

/* Covers a /proc entry: files with /dev/null, directories with an empty
 * read-only tmpfs. */
static int proc_mask(struct setup_ctx *x, const char *name)
{
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/proc/%s", SBX_NEWROOT, name);
        struct stat st;
        if (stat(p, &st) < 0)
                return 0;
        if (S_ISDIR(st.st_mode)) {
                if (mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                          "size=0,mode=0555") < 0)
                        return setup_fail(x, errno, p, "mask");
                return 0;
        }
        if (mount("/dev/null", p, NULL, MS_BIND, NULL) < 0)
                return setup_fail(x, errno, p, "mask");
        return 0;
}

int rootfs_proc(struct setup_ctx *x)
{
        x->step = SBX_STEP_PROC;
        int r = sbx_mount_mkdirs(x, "proc");
        if (r < 0)
                return r;
        if (mount("proc", SBX_NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return setup_fail(x, errno, "/proc", "mount proc");
        static const char *const readonly[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };
        for (size_t i = 0; i < ELEMENTSOF(readonly); i++) {
                r = proc_readonly(x, readonly[i]);
                if (r < 0)
                        return r;
        }
        static const char *const masked[] = { "kcore",       "keys",          "timer_list",
                                              "sched_debug", "latency_stats", "kallsyms",
                                              "kmsg",        "acpi",          "scsi",
                                              "firmware",    "interrupts" };
        for (size_t i = 0; i < ELEMENTSOF(masked); i++) {
                r = proc_mask(x, masked[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}
