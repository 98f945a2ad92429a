/* Identity and capabilities of the sandboxed processes.  Order matters:
 * securebits and the bounding set need CAP_SETPCAP, so they go before the
 * uid switch, which (for a non-zero uid) also clears the permitted set;
 * capset() then clears whatever a user namespace's uid-0-less mapping
 * left, and the checks at the end make a silent failure impossible. */
#include "sandbox/privs-internal.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/securebits.h>
#include <math.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail(struct bc_error *err, const char *what)
{
        int e = errno;
        return bc_error_set(err, BC_SANDBOX_SETUP, e, "%s: %s", what, strerror(e));
}

/* Each drop is a new set of credentials (and an RCU-freed old one), ~1
 * us: only the capabilities still in the set are dropped, so a second
 * call (sbx_drop_privileges after the child's own) costs reads. */
int sbx_drop_bounding_set(struct bc_error *err)
{
        for (int cap = 0; cap < 64; cap++) {
                int in_set = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
                if (in_set < 0 && errno == EINVAL && cap > 0)
                        return 0; /* past the kernel's last one */
                if (in_set < 0 || (in_set && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0))
                        return fail(err, "PR_CAPBSET_DROP");
        }
        return 0;
}

static int clear_capsets(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2];
        memset(d, 0, sizeof(d));
        return (int)syscall(SYS_capset, &h, d);
}

static bool capsets_empty(void)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) < 0)
                return false;
        for (int i = 0; i < 2; i++)
                if (d[i].effective || d[i].permitted || d[i].inheritable)
                        return false;
        return true;
}

int sbx_drop_privileges(uid_t uid, gid_t gid, struct bc_error *err)
{
        /* No root-grants-caps on exec, no keeping caps across setuid, no
         * ambient raise: locked, so nothing inside can undo them. */
        unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
                return fail(err, "PR_SET_SECUREBITS");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return fail(err, "PR_CAP_AMBIENT_CLEAR_ALL");
        int dropped = sbx_drop_bounding_set(err);
        if (dropped < 0)
                return dropped;
        if (setgroups(1, &gid) < 0 && errno != EPERM)
                return fail(err, "setgroups");
        if (setresgid(gid, gid, gid) < 0)
                return fail(err, "setresgid");
        if (setresuid(uid, uid, uid) < 0)
                return fail(err, "setresuid");
        if (clear_capsets() < 0)
                return fail(err, "capset");
        uid_t r, e, s;
        if (getresuid(&r, &e, &s) < 0 || r != uid || e != uid || s != uid || !capsets_empty() ||
            prctl(PR_CAPBSET_READ, 0, 0, 0, 0) != 0) {
                errno = EPERM;
                return fail(err, "privileges still held after dropping them");
        }
        return 0;
}

/* The CPUs we may run on: one syscall, where sysconf() would parse /sys
 * or, without /sys (inside the sandbox), all of /proc/stat. */
static int cpus_usable(void)
{
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return 1;
        int n = CPU_COUNT(&set);
        return n > 0 ? n : 1;
}

static int set_limit(int res, rlim_t v)
{
        struct rlimit cur;
        if (getrlimit(res, &cur) < 0)
                return -1;
        /* Never raise: an unprivileged helper cannot, and must not try. */
        if (cur.rlim_max != RLIM_INFINITY && v > cur.rlim_max)
                v = cur.rlim_max;
        struct rlimit l = { v, v };
        return setrlimit(res, &l);
}

int sbx_set_rlimits(const struct helper_config *c, bool have_cgroup, struct bc_error *err)
{
        if (set_limit(RLIMIT_CORE, 0) < 0)
                return fail(err, "RLIMIT_CORE");
        if (set_limit(RLIMIT_NOFILE, 65536) < 0)
                return fail(err, "RLIMIT_NOFILE");
        /* No RLIMIT_FSIZE: its SIGXFSZ would pre-empt the scratch tmpfs's
         * ENOSPC, which is the documented way a full disk shows. */
        if (c->timeout_s > 0) {
                /* CPU seconds per process: a backstop if the supervisor were
                 * ever stopped; generous so it never fires before the wall
                 * clock on a multi-threaded job. */
                double cpus = c->cpus > 0 ? c->cpus : (double)cpus_usable();
                if (set_limit(RLIMIT_CPU, (rlim_t)ceil(c->timeout_s * cpus) + 2) < 0)
                        return fail(err, "RLIMIT_CPU");
        }
        if (!have_cgroup) {
                /* Without cgroups these are all there is.  NPROC counts the
                 * uid across the whole host (or user namespace), so it is
                 * weaker than pids.max, but it stops a fork bomb. */
                if (c->pids && set_limit(RLIMIT_NPROC, c->pids) < 0)
                        return fail(err, "RLIMIT_NPROC");
                if (c->memory_mb && set_limit(RLIMIT_DATA, (rlim_t)c->memory_mb << 20) < 0)
                        return fail(err, "RLIMIT_DATA");
        }
        return 0;
}

int sbx_cloexec_from(int first, struct bc_error *err)
{
        if (syscall(SYS_close_range, (unsigned)first, ~0u, CLOSE_RANGE_CLOEXEC) < 0)
                return fail(err, "close_range");
        return 0;
}
