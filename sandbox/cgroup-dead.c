/* A helper killed before its teardown (SIGKILL: by the OOM killer, by an
 * operator, or by the worker for one that was stuck) leaves its empty
 * cgroup behind; the worker that reaped it removes it, and a worker
 * starting removes those that no worker reaped (its predecessor was
 * killed with SIGKILL).  Only the names a helper makes
 * (boxcar-sandbox-<pid>, where it makes them) are touched, only when that
 * pid is gone, and only an empty cgroup can be removed. */
#include "sandbox/cgroup-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/cleanup.h"
#include "sandbox/cgroup-fs-internal.h"

/* Its processes were killed with it; the cgroup empties a moment later. */
static void remove_dir(const char *parent, pid_t pid)
{
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/boxcar-sandbox-%d", parent, (int)pid) >=
            (int)sizeof(path))
                return;
        for (int tries = 0; tries < 20; tries++) {
                if (rmdir(path) == 0 || errno != EBUSY)
                        return;
                nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
        }
}

/* Calls fn on each directory a helper of this process makes its cgroups
 * in: on v1 this process's own cgroup in each hierarchy a helper uses, on
 * v2 cgroup_parent or this process's own cgroup. */
static void each_parent(const char *cgroup_parent, void (*fn)(const char *parent, void *arg),
                        void *arg)
{
        const char *v2_root = NULL;
        const struct cg_backend *b = cg_detect(&v2_root);
        if (!b)
                return;
        if (b->version == SANDBOX_CGROUP_V2) {
                if (cgroup_parent) {
                        fn(cgroup_parent, arg);
                        return;
                }
                _cleanup_free_ char *own = cg_own_path(NULL);
                _cleanup_free_ char *parent = NULL;
                if (asprintf(&parent, "%s%s", v2_root, own && strcmp(own, "/") ? own : "") >= 0)
                        fn(parent, arg);
                return;
        }
        static const char *const hierarchies[] = { "memory", "pids", "cpu", "cpuacct" };
        char self[8192];
        if (cg_read_file("/proc/self", "cgroup", self, sizeof(self)) < 0)
                return;
        for (size_t i = 0; i < ELEMENTSOF(hierarchies); i++) {
                char mnt[64];
                snprintf(mnt, sizeof(mnt), "/sys/fs/cgroup/%s", hierarchies[i]);
                struct statfs sf;
                if (statfs(mnt, &sf) < 0 || sf.f_type != CGROUP_SUPER_MAGIC)
                        continue;
                _cleanup_free_ char *own = cg_own_path_in(self, hierarchies[i]);
                _cleanup_free_ char *parent = NULL;
                if (asprintf(&parent, "%s%s", mnt, own && strcmp(own, "/") ? own : "") < 0)
                        return;
                fn(parent, arg);
        }
}

static void remove_in(const char *parent, void *pid)
{
        remove_dir(parent, *(pid_t *)pid);
}

void sandbox_cgroup_remove_dead(pid_t pid, const char *cgroup_parent)
{
        each_parent(cgroup_parent, remove_in, &pid);
}

/* The pid a helper's cgroup is named after, or 0 for any other name. */
static pid_t helper_pid(const char *name)
{
        static const char prefix[] = "boxcar-sandbox-";
        if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
                return 0;
        const char *digits = name + sizeof(prefix) - 1;
        if (*digits < '1' || *digits > '9')
                return 0;
        char *end;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        return end != digits && !*end && !errno && pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

static void sweep_in(const char *parent, void *removed)
{
        _cleanup_(closedirp) DIR *d = opendir(parent);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                pid_t pid = helper_pid(de->d_name);
                /* A helper still running (of this worker or another) keeps
                 * its cgroup; one still emptying is left (EBUSY). */
                if (!pid || kill(pid, 0) == 0 || errno != ESRCH)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == 0)
                        (*(unsigned *)removed)++;
        }
}

unsigned sandbox_cgroup_sweep_dead(const char *cgroup_parent)
{
        unsigned removed = 0;
        each_parent(cgroup_parent, sweep_in, &removed);
        return removed;
}
