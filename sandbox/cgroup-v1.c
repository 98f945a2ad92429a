/* cgroup v1 backend: one directory per controller hierarchy.  Used where
 * the controllers are mounted as v1 (older distributions, this project's
 * CI machine); the pid namespace, not the cgroup, is what kills the tree. */
#include "sandbox/cgroup-backend-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/cleanup.h"
#include "sandbox/cgroup-fs-internal.h"

static const char *const controllers[] = { "memory", "pids", "cpu", "cpuacct" };

static int *index_of(struct sbx_cgroup *cg, size_t i)
{
        int *slots[] = { &cg->memory_dir, &cg->pids_dir, &cg->cpu_dir, &cg->cpuacct_dir };
        return slots[i];
}

/* Creates the sandbox directory in each mounted hierarchy, once per
 * hierarchy (cpu and cpuacct are often co-mounted). */
static int make_dirs(struct sbx_cgroup *cg, struct bc_error *err)
{
        dev_t devs[CG_MAX_DIRS];
        char self[8192];
        if (cg_read_file("/proc/self", "cgroup", self, sizeof(self)) < 0)
                self[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                char mnt[128];
                snprintf(mnt, sizeof(mnt), "/sys/fs/cgroup/%s", controllers[i]);
                struct statfs sf;
                struct stat st;
                if (statfs(mnt, &sf) < 0 || sf.f_type != CGROUP_SUPER_MAGIC || stat(mnt, &st) < 0)
                        continue;
                bool dup = false;
                for (size_t d = 0; d < cg->n_dirs; d++)
                        /* cppcheck-suppress uninitvar ; devs[0..n_dirs) are set as the dirs are added */
                        if (devs[d] == st.st_dev) {
                                *index_of(cg, i) = (int)d;
                                dup = true;
                        }
                if (dup)
                        continue;
                _cleanup_free_ char *own = cg_own_path_in(self, controllers[i]);
                _cleanup_free_ char *parent = NULL;
                if (asprintf(&parent, "%s%s", mnt, own && strcmp(own, "/") ? own : "") < 0) {
                        parent = NULL;
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                }
                int r = cg_make_dir(parent, &cg->dirs[cg->n_dirs], err);
                if (r < 0)
                        return r;
                devs[cg->n_dirs] = st.st_dev;
                *index_of(cg, i) = (int)cg->n_dirs++;
        }
        return cg->n_dirs ? 0
                          : bc_error_set(err, BC_SANDBOX_SETUP, ENOENT, "no cgroup v1 hierarchy");
}

static int missing(const char *what, struct bc_error *err)
{
        return bc_error_set(err, BC_SANDBOX_SETUP, ENOTSUP,
                            "cgroup v1: the %s controller is not mounted", what);
}

/* parent: --cgroup-parent, a v2 notion; v1 hierarchies need no
 * delegation dance, so each sandbox goes under the helper's own cgroup. */
/* memsw = memory: no swap.  Absent when swap accounting is off, and then
 * there is nothing to swap to. */
static int write_memsw(const char *d, const char *v, struct bc_error *err)
{
        struct bc_error local = BC_ERROR_INIT;
        int r = cg_write(d, "memory.memsw.limit_in_bytes", v, &local);
        if (r < 0 && local.errnum == ENOENT)
                r = 0;
        if (r < 0)
                bc_error_move(err, &local);
        bc_error_clear(&local);
        return r;
}

/* The kernel keeps memory <= memsw at every write: from no limit (a new
 * cgroup), memory first; raising a limit set before (a warm sandbox's,
 * sandbox/warm.c), memsw first, which is what EINVAL says. */
static int write_memory(const char *d, const char *v, struct bc_error *err)
{
        struct bc_error local = BC_ERROR_INIT;
        int r = cg_write(d, "memory.limit_in_bytes", v, &local);
        if (r < 0 && local.errnum == EINVAL) {
                bc_error_clear(&local);
                r = write_memsw(d, v, err);
                if (r >= 0)
                        r = cg_write(d, "memory.limit_in_bytes", v, err);
                return r;
        }
        if (r < 0)
                bc_error_move(err, &local);
        bc_error_clear(&local);
        return r < 0 ? r : write_memsw(d, v, err);
}

static int v1_limit(struct sbx_cgroup *cg, const struct cg_limits *l, struct bc_error *err)
{
        int r = 0;
        char v[64];
        if (l->memory_mb) {
                if (cg->memory_dir < 0)
                        return missing("memory", err);
                const char *d = cg->dirs[cg->memory_dir];
                snprintf(v, sizeof(v), "%" PRIu64, l->memory_mb << 20);
                r = write_memory(d, v, err);
                if (r >= 0)
                        (void)cg_write(d, "memory.swappiness", "0", NULL);
                if (r < 0)
                        return r;
        }
        if (l->pids) {
                if (cg->pids_dir < 0)
                        return missing("pids", err);
                snprintf(v, sizeof(v), "%" PRIu32, l->pids);
                r = cg_write(cg->dirs[cg->pids_dir], "pids.max", v, err);
                if (r < 0)
                        return r;
        }
        if (l->cpus > 0) {
                if (cg->cpu_dir < 0)
                        return missing("cpu", err);
                long quota = (long)(l->cpus * 100000.0);
                if (quota < 1000)
                        quota = 1000;
                snprintf(v, sizeof(v), "%ld", quota);
                r = cg_write(cg->dirs[cg->cpu_dir], "cpu.cfs_period_us", "100000", err);
                if (r >= 0)
                        r = cg_write(cg->dirs[cg->cpu_dir], "cpu.cfs_quota_us", v, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int v1_create(struct sbx_cgroup *cg, const struct cg_limits *l, const char *parent,
                     struct bc_error *err)
{
        (void)parent;
        int r = make_dirs(cg, err);
        return r < 0 ? r : v1_limit(cg, l, err);
}

static int v1_attach(struct sbx_cgroup *cg, pid_t pid, struct bc_error *err)
{
        char v[32];
        snprintf(v, sizeof(v), "%d", (int)pid);
        for (size_t i = 0; i < cg->n_dirs; i++) {
                int r = cg_write(cg->dirs[i], "cgroup.procs", v, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int v1_self_attach_fds(struct sbx_cgroup *cg, int *fds, size_t max)
{
        size_t n = 0;
        for (size_t i = 0; i < cg->n_dirs && n < max; i++) {
                char p[4096];
                if (snprintf(p, sizeof(p), "%s/tasks", cg->dirs[i]) >= (int)sizeof(p))
                        goto fail;
                int fd = open(p, O_WRONLY | O_CLOEXEC);
                if (fd < 0)
                        goto fail;
                fds[n++] = fd;
        }
        return (int)n;
fail:
        while (n > 0)
                close(fds[--n]);
        return 0; /* the supervisor attaches by pid instead */
}

static void v1_kill_all(struct sbx_cgroup *cg)
{
        /* Any hierarchy lists every task; pids is the one made for this. */
        int d = cg->pids_dir >= 0 ? cg->pids_dir : 0;
        if (cg->n_dirs)
                cg_kill_procs(cg->dirs[d]);
}

static void v1_stats(struct sbx_cgroup *cg, struct cg_stats *ret)
{
        if (cg->memory_dir >= 0)
                (void)cg_read_key(cg->dirs[cg->memory_dir], "memory.oom_control", "oom_kill",
                                  &ret->oom_kills);
        uint64_t ns;
        if (cg->cpuacct_dir >= 0 &&
            cg_read_u64(cg->dirs[cg->cpuacct_dir], "cpuacct.usage", &ns) == 0) {
                ret->cpu_us = ns / 1000;
                ret->have_cpu = true;
        }
}

const struct cg_backend cg_backend_v1 = {
        .name = "v1",
        .version = SANDBOX_CGROUP_V1,
        .create = v1_create,
        .limit = v1_limit,
        .attach = v1_attach,
        .self_attach_fds = v1_self_attach_fds,
        .kill_all = v1_kill_all,
        .stats = v1_stats,
};
