/* cgroup v2 backend: one directory, controllers enabled in the parent's
 * subtree_control.  The "no internal processes" rule means the parent
 * (the helper's own cgroup) must hold no processes of its own once
 * controllers are delegated: run the worker in a leaf of a delegated
 * subtree (systemd Delegate=yes) and the sandboxes next to it. */
#include "sandbox/cgroup-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

static int v2_create(struct sbx_cgroup *cg, const struct cg_limits *l, struct bc_error *err)
{
        const char *root = NULL;
        if (cg_detect(&root) != &cg_backend_v2 || !root)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOENT, "cgroup v2 not mounted");
        _cleanup_free_ char *own = cg_own_path(NULL);
        _cleanup_free_ char *parent = NULL;
        if (asprintf(&parent, "%s%s", root, own && strcmp(own, "/") ? own : "") < 0) {
                parent = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        /* Each separately: a controller the parent lacks must not stop the
         * others; a missing one is an error below only if a limit needs it. */
        (void)cg_write(parent, "cgroup.subtree_control", "+memory", NULL);
        (void)cg_write(parent, "cgroup.subtree_control", "+pids", NULL);
        (void)cg_write(parent, "cgroup.subtree_control", "+cpu", NULL);
        int r = cg_make_dir(parent, &cg->dirs[0], err);
        if (r < 0)
                return r;
        cg->n_dirs = 1;
        cg->memory_dir = cg->pids_dir = cg->cpu_dir = cg->cpuacct_dir = 0;
        const char *d = cg->dirs[0];
        char v[64];
        if (l->memory_mb) {
                snprintf(v, sizeof(v), "%" PRIu64, l->memory_mb << 20);
                r = cg_write(d, "memory.max", v, err);
                /* Absent without swap accounting: then there is no swap. */
                if (r >= 0)
                        (void)cg_write(d, "memory.swap.max", "0", NULL);
                /* One OOM kill takes the whole job: a half-killed tree is a
                 * worse result than a clean OOM. */
                if (r >= 0)
                        (void)cg_write(d, "memory.oom.group", "1", NULL);
                if (r < 0)
                        return r;
        }
        if (l->pids) {
                snprintf(v, sizeof(v), "%" PRIu32, l->pids);
                r = cg_write(d, "pids.max", v, err);
                if (r < 0)
                        return r;
        }
        if (l->cpus > 0) {
                long quota = (long)(l->cpus * 100000.0);
                snprintf(v, sizeof(v), "%ld 100000", quota < 1000 ? 1000 : quota);
                r = cg_write(d, "cpu.max", v, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int v2_attach(struct sbx_cgroup *cg, pid_t pid, struct bc_error *err)
{
        char v[32];
        snprintf(v, sizeof(v), "%d", (int)pid);
        return cg_write(cg->dirs[0], "cgroup.procs", v, err);
}

static void v2_kill_all(struct sbx_cgroup *cg)
{
        /* cgroup.kill (5.14+) kills atomically, racing no fork; else loop. */
        if (cg_write(cg->dirs[0], "cgroup.kill", "1", NULL) < 0)
                cg_kill_procs(cg->dirs[0]);
}

static void v2_stats(struct sbx_cgroup *cg, struct cg_stats *ret)
{
        (void)cg_read_key(cg->dirs[0], "memory.events", "oom_kill", &ret->oom_kills);
        uint64_t us;
        if (cg_read_key(cg->dirs[0], "cpu.stat", "usage_usec", &us) == 0) {
                ret->cpu_us = us;
                ret->have_cpu = true;
        }
}

const struct cg_backend cg_backend_v2 = {
        .name = "v2",
        .version = SANDBOX_CGROUP_V2,
        .create = v2_create,
        .attach = v2_attach,
        .kill_all = v2_kill_all,
        .stats = v2_stats,
};
