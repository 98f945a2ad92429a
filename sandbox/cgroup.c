/* Backend choice and the sandbox cgroup over the backends (sbx_cgroup_*).
 * The parts the v1 and v2 backends share are cgroup-fs.c's. */
#include "sandbox/cgroup-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup-fs-internal.h"

const struct cg_backend *cg_detect(const char **ret_v2_root)
{
        switch (cg_hierarchy(ret_v2_root)) {
        case SANDBOX_CGROUP_V2:
                return &cg_backend_v2;
        case SANDBOX_CGROUP_V1:
                return &cg_backend_v1;
        case SANDBOX_CGROUP_NONE:
                break;
        }
        return NULL;
}

static bool wants_limits(const struct cg_limits *l)
{
        return l->memory_mb || l->pids || l->cpus > 0;
}

static int no_cgroup(struct bc_error *err)
{
        return bc_error_set(err, BC_SANDBOX_SETUP, ENOTSUP,
                            "limits asked for but no cgroup v1/v2 controllers are mounted");
}

static int create(struct sbx_cgroup *cg, const struct cg_limits *l, const char *parent,
                  bool always, struct bc_error *err)
{
        *cg = (struct sbx_cgroup){ .memory_dir = -1,
                                   .pids_dir = -1,
                                   .cpu_dir = -1,
                                   .cpuacct_dir = -1 };
        /* Nothing to limit: the pid namespace bounds the job's lifetime and
         * rusage gives its CPU time; skip the cost of a cgroup. */
        if (!always && !wants_limits(l))
                return 0;
        const char *root = NULL;
        const struct cg_backend *b = cg_detect(&root);
        if (!b)
                return always ? 0 : no_cgroup(err);
        cg->ops = b;
        struct bc_error local = BC_ERROR_INIT;
        int r = b->create(cg, l, parent, &local);
        if (r < 0) {
                sbx_cgroup_destroy(cg);
                bc_error_move(err, &local);
                return r;
        }
        return 0;
}

int sbx_cgroup_create(struct sbx_cgroup *cg, const struct cg_limits *l, const char *parent,
                      struct bc_error *err)
{
        return create(cg, l, parent, false, err);
}

int sbx_cgroup_create_unlimited(struct sbx_cgroup *cg, const char *parent, struct bc_error *err)
{
        static const struct cg_limits none = { 0 };
        return create(cg, &none, parent, true, err);
}

int sbx_cgroup_limit(struct sbx_cgroup *cg, const struct cg_limits *l, struct bc_error *err)
{
        if (!wants_limits(l))
                return 0;
        return cg->ops ? cg->ops->limit(cg, l, err) : no_cgroup(err);
}

int sbx_cgroup_attach(struct sbx_cgroup *cg, pid_t pid, struct bc_error *err)
{
        return cg->ops ? cg->ops->attach(cg, pid, err) : 0;
}

int sbx_cgroup_self_attach_fds(struct sbx_cgroup *cg, int *fds, size_t max)
{
        if (!cg->ops || !cg->ops->self_attach_fds)
                return 0;
        return cg->ops->self_attach_fds(cg, fds, max);
}

int sbx_cgroup_self_attach(const int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                ssize_t w;
                do
                        w = write(fds[i], "0", 1);
                while (w < 0 && errno == EINTR);
                if (w != 1)
                        return w < 0 ? -errno : -EIO;
                close(fds[i]);
        }
        return 0;
}

void sbx_cgroup_kill_all(struct sbx_cgroup *cg)
{
        if (cg->ops)
                cg->ops->kill_all(cg);
}

void sbx_cgroup_stats(struct sbx_cgroup *cg, struct cg_stats *ret)
{
        *ret = (struct cg_stats){ 0 };
        if (cg->ops)
                cg->ops->stats(cg, ret);
}

void sbx_cgroup_destroy(struct sbx_cgroup *cg)
{
        if (!cg)
                return;
        for (size_t i = 0; i < cg->n_dirs; i++) {
                /* rmdir fails with EBUSY until the last task is gone; the pid
                 * namespace is dead by now, so this is a short wait. */
                for (int tries = 0; tries < 200; tries++) {
                        if (rmdir(cg->dirs[i]) == 0 || errno == ENOENT)
                                break;
                        if (errno != EBUSY)
                                break;
                        struct timespec ts = { 0, 5000000 };
                        nanosleep(&ts, NULL);
                }
                free(cg->dirs[i]);
                cg->dirs[i] = NULL;
        }
        cg->n_dirs = 0;
        cg->ops = NULL;
}
