/* A helper killed before its teardown (SIGKILL: by the OOM killer, by an
 * operator, or by the worker for one that was stuck) leaves its empty
 * cgroup behind; the worker that reaped it removes it.  Only the names a
 * helper of that pid makes (boxcar-sandbox-<pid>, where it makes them) are
 * touched, and only an empty cgroup can be removed. */
#include "sandbox/cgroup-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/cleanup.h"

/* Its processes were killed with it; the cgroup empties a moment later. */
static void remove_dir(const char *parent, pid_t pid)
{
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/boxcar-sandbox-%d", parent, (int)pid) >= (int)sizeof(path))
                return;
        for (int tries = 0; tries < 20; tries++) {
                if (rmdir(path) == 0 || errno != EBUSY)
                        return;
                nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
        }
}

static void remove_v1(pid_t pid)
{
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
                remove_dir(parent, pid);
        }
}

void sandbox_cgroup_remove_dead(pid_t pid, const char *cgroup_parent)
{
        const char *v2_root = NULL;
        const struct cg_backend *b = cg_detect(&v2_root);
        if (!b)
                return;
        if (b->version == SANDBOX_CGROUP_V1) {
                remove_v1(pid);
                return;
        }
        if (cgroup_parent) {
                remove_dir(cgroup_parent, pid);
                return;
        }
        _cleanup_free_ char *own = cg_own_path(NULL);
        _cleanup_free_ char *parent = NULL;
        if (asprintf(&parent, "%s%s", v2_root, own && strcmp(own, "/") ? own : "") >= 0)
                remove_dir(parent, pid);
}
