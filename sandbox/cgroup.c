/* Backend choice and the parts shared by the cgroup v1 and v2 backends. */
#include "sandbox/cgroup-internal.h"

#include <errno.h>
#include <fcntl.h>
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

static bool v2_has_controllers(const char *root)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[512] = "";
        if (!f || !fgets(line, sizeof(line), f))
                return false;
        return strstr(line, "memory") || strstr(line, "pids") || strstr(line, "cpu");
}

const struct cg_backend *cg_detect(const char **ret_v2_root)
{
        struct statfs sf;
        if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
                *ret_v2_root = "/sys/fs/cgroup";
                return &cg_backend_v2;
        }
        /* Hybrid layout: v2 at unified/ is only worth it when the controllers
         * were given to it; otherwise they are on the v1 mounts. */
        if (statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC &&
            v2_has_controllers("/sys/fs/cgroup/unified")) {
                *ret_v2_root = "/sys/fs/cgroup/unified";
                return &cg_backend_v2;
        }
        static const char *const v1[] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
                                          "/sys/fs/cgroup/cpu" };
        for (size_t i = 0; i < ELEMENTSOF(v1); i++)
                if (statfs(v1[i], &sf) == 0 && sf.f_type == CGROUP_SUPER_MAGIC)
                        return &cg_backend_v1;
        return NULL;
}

int cg_write(const char *dir, const char *file, const char *value, struct bc_error *err)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, file) < 0) {
                path = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        _cleanup_fd_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open %s: %s", path, strerror(errno));
        size_t len = strlen(value);
        ssize_t n;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)len)
                return bc_error_set(err, BC_SANDBOX_SETUP, n < 0 ? errno : EIO, "write '%s' to %s: %s",
                                    value, path, n < 0 ? strerror(errno) : "short write");
        return 0;
}

static FILE *cg_fopen(const char *dir, const char *file)
{
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
                return NULL;
        return fopen(path, "re");
}

int cg_read_file(const char *dir, const char *file, char *buf, size_t size)
{
        char path[4096];
        if (size == 0 || snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        _cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = 0;
        while (len < size - 1) {
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        return 0;
}

int cg_read_key(const char *dir, const char *file, const char *key, uint64_t *ret)
{
        _cleanup_fclose_ FILE *f = cg_fopen(dir, file);
        if (!f)
                return -errno;
        char line[256];
        size_t klen = strlen(key);
        *ret = 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
                        *ret = strtoull(line + klen + 1, NULL, 10);
        return 0;
}

int cg_read_u64(const char *dir, const char *file, uint64_t *ret)
{
        _cleanup_fclose_ FILE *f = cg_fopen(dir, file);
        unsigned long long v;
        if (!f)
                return -errno;
        if (fscanf(f, "%llu", &v) != 1)
                return -EINVAL;
        *ret = v;
        return 0;
}

static bool has_controller(const char *list, const char *want)
{
        size_t n = strlen(want);
        for (const char *p = list; p && *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && strncmp(p, want, n) == 0)
                        return true;
                p += len;
                if (*p == ',')
                        p++;
        }
        return false;
}

char *cg_own_path_in(const char *proc_cgroup, const char *controller)
{
        for (const char *line = proc_cgroup; line && *line;) {
                size_t len = strcspn(line, "\n");
                const char *end = line + len;
                const char *c1 = memchr(line, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
                if (c2) {
                        _cleanup_free_ char *ctrls = strndup(c1 + 1, (size_t)(c2 - c1 - 1));
                        if (!ctrls)
                                return NULL;
                        bool match = controller ? has_controller(ctrls, controller)
                                                : (strncmp(line, "0:", 2) == 0 && *ctrls == '\0');
                        if (match)
                                return strndup(c2 + 1, (size_t)(end - c2 - 1));
                }
                line = *end ? end + 1 : end;
        }
        return NULL;
}

char *cg_own_path(const char *controller)
{
        char buf[8192];
        if (cg_read_file("/proc/self", "cgroup", buf, sizeof(buf)) < 0)
                return NULL;
        return cg_own_path_in(buf, controller);
}

int cg_make_dir(const char *parent, char **ret_path, struct bc_error *err)
{
        char *path = NULL;
        if (asprintf(&path, "%s/boxcar-sandbox-%d", parent, (int)getpid()) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        /* EEXIST: a leftover of an earlier helper with our pid (killed by
         * SIGKILL), empty by now since its pid namespace died with it. */
        int r = mkdir(path, 0755);
        if (r < 0 && errno == EEXIST && rmdir(path) == 0)
                r = mkdir(path, 0755);
        if (r < 0) {
                int e = errno;
                bc_error_set(err, BC_SANDBOX_SETUP, e, "mkdir %s: %s", path, strerror(e));
                free(path);
                return -e;
        }
        *ret_path = path;
        return 0;
}

void cg_kill_procs(const char *dir)
{
        for (int round = 0; round < 100; round++) {
                _cleanup_fclose_ FILE *f = cg_fopen(dir, "cgroup.procs");
                int pid, n = 0;
                while (f && fscanf(f, "%d", &pid) == 1) {
                        kill(pid, SIGKILL);
                        n++;
                }
                if (n == 0)
                        return;
                struct timespec ts = { 0, 1000000 };
                nanosleep(&ts, NULL);
        }
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
        *cg = (struct sbx_cgroup){ .memory_dir = -1, .pids_dir = -1, .cpu_dir = -1, .cpuacct_dir = -1 };
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
