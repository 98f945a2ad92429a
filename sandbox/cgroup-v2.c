/* cgroup v2 backend: one directory, controllers enabled in the parent's
 * subtree_control.  The "no internal processes" rule means the parent
 * must hold no processes of its own once controllers are enabled for its
 * children.  The helper's own cgroup is the worker's, which holds the
 * worker: so the worker moves itself into a leaf at startup and passes
 * its original cgroup as --cgroup-parent (sandbox_cgroup_prepare_worker);
 * the sandboxes are then the leaf's siblings. */
#include "sandbox/cgroup-backend-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "sandbox/cgroup-fs-internal.h"

/* The directory the sandbox cgroup goes in: --cgroup-parent, which must
 * lie in the v2 mount (the helper only ever writes under it), or the
 * helper's own cgroup. */
static int v2_parent(const char *root, const char *given, char **ret, struct bc_error *err)
{
        if (given) {
                size_t n = strlen(root);
                if (strncmp(given, root, n) != 0 || (given[n] != '\0' && given[n] != '/'))
                        return bc_error_set(
                                err, BC_SANDBOX_SETUP, EINVAL,
                                "--cgroup-parent %s is not under the cgroup v2 mount %s", given,
                                root);
                *ret = strdup(given);
        } else {
                _cleanup_free_ char *own = cg_own_path(NULL);
                if (asprintf(ret, "%s%s", root, own && strcmp(own, "/") ? own : "") < 0)
                        *ret = NULL;
        }
        return *ret ? 0 : bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
}

/* Makes sure the controllers the limits need are enabled for parent's
 * children: one read when they are (the delegated case), one write
 * otherwise.  A failure here is the usual v2 pitfall, so it says why. */
static int v2_enable(const char *parent, const struct cg_limits *l, struct bc_error *err)
{
        unsigned need = (l->memory_mb ? CG_CTRL_MEMORY : 0) | (l->pids ? CG_CTRL_PIDS : 0) |
                        (l->cpus > 0 ? CG_CTRL_CPU : 0);
        if (!need)
                return 0; /* a warm sandbox's cgroup, made before its limits */
        char buf[512];
        int r = cg_read_file(parent, "cgroup.subtree_control", buf, sizeof(buf));
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r,
                                    "read %s/cgroup.subtree_control: %s", parent, strerror(-r));
        unsigned missing = need & ~cg_v2_parse_controllers(buf);
        if (!missing)
                return 0;
        if (cg_v2_format_enable(missing, buf, sizeof(buf)) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOBUFS, "controller list too long");
        struct bc_error local = BC_ERROR_INIT;
        r = cg_write(parent, "cgroup.subtree_control", buf, &local);
        if (r < 0) {
                int e = local.errnum;
                bc_error_clear(&local);
                return bc_error_set(err, BC_SANDBOX_SETUP, e,
                                    "cgroup v2: cannot enable '%s' for the children of %s: %s%s",
                                    buf, parent, strerror(e),
                                    e == EBUSY ? " (it holds processes, and cgroup v2 forbids "
                                                 "controllers below a cgroup with processes: "
                                                 "give the helper --cgroup-parent, as the "
                                                 "worker does on a delegated cgroup)"
                                    : e == ENOENT || e == EINVAL
                                            ? " (controller not delegated to it)"
                                            : "");
        }
        return 0;
}

/* memory, pids and cpu limits of the cgroup at d. */
static int v2_write_limits(const char *d, const struct cg_limits *l, struct bc_error *err)
{
        int r = 0;
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

static int v2_create(struct sbx_cgroup *cg, const struct cg_limits *l, const char *given,
                     struct bc_error *err)
{
        const char *root = NULL;
        if (cg_hierarchy(&root) != SANDBOX_CGROUP_V2 || !root)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOENT, "cgroup v2 not mounted");
        _cleanup_free_ char *parent = NULL;
        int r = v2_parent(root, given, &parent, err);
        if (r >= 0)
                r = v2_enable(parent, l, err);
        if (r >= 0)
                r = cg_make_dir(parent, &cg->dirs[0], err);
        if (r < 0)
                return r;
        cg->n_dirs = 1;
        cg->memory_dir = cg->pids_dir = cg->cpu_dir = cg->cpuacct_dir = 0;
        return v2_write_limits(cg->dirs[0], l, err);
}

/* Limits for a cgroup made without them (a warm sandbox's, at handoff):
 * the controllers are enabled on its parent first, as create does. */
static int v2_limit(struct sbx_cgroup *cg, const struct cg_limits *l, struct bc_error *err)
{
        _cleanup_free_ char *parent = strdup(cg->dirs[0]);
        if (!parent)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
                *slash = '\0';
        int r = v2_enable(parent, l, err);
        return r < 0 ? r : v2_write_limits(cg->dirs[0], l, err);
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
        .limit = v2_limit,
        .attach = v2_attach,
        .kill_all = v2_kill_all,
        .stats = v2_stats,
};
