/* The cgroup filesystem's primitives (see cgroup-fs-internal.h): which
 * hierarchy is mounted where, reading and writing its files, the
 * helper's own cgroup, the sandbox's directory, v2 controller lists.
 * The backends and cgroup.c are built on them; nothing here calls back
 * into those. */
#include "sandbox/cgroup-fs-internal.h"

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

enum sandbox_cgroup_version cg_hierarchy(const char **ret_v2_root)
{
        struct statfs sf;
        if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
                *ret_v2_root = "/sys/fs/cgroup";
                return SANDBOX_CGROUP_V2;
        }
        /* Hybrid layout: v2 at unified/ is only worth it when the controllers
         * were given to it; otherwise they are on the v1 mounts. */
        if (statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC &&
            v2_has_controllers("/sys/fs/cgroup/unified")) {
                *ret_v2_root = "/sys/fs/cgroup/unified";
                return SANDBOX_CGROUP_V2;
        }
        static const char *const v1[] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
                                          "/sys/fs/cgroup/cpu" };
        for (size_t i = 0; i < ELEMENTSOF(v1); i++)
                if (statfs(v1[i], &sf) == 0 && sf.f_type == CGROUP_SUPER_MAGIC)
                        return SANDBOX_CGROUP_V1;
        return SANDBOX_CGROUP_NONE;
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
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open %s: %s", path,
                                    strerror(errno));
        size_t len = strlen(value);
        ssize_t n;
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)len)
                return bc_error_set(err, BC_SANDBOX_SETUP, n < 0 ? errno : EIO,
                                    "write '%s' to %s: %s", value, path,
                                    n < 0 ? strerror(errno) : "short write");
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

static const struct {
        const char *name;
        unsigned bit;
} ctrl_names[] = {
        { "memory", CG_CTRL_MEMORY },
        { "pids", CG_CTRL_PIDS },
        { "cpu", CG_CTRL_CPU },
};

unsigned cg_v2_parse_controllers(const char *list)
{
        unsigned bits = 0;
        for (const char *p = list; p && *p;) {
                p += strspn(p, " \t\n");
                size_t len = strcspn(p, " \t\n");
                for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++)
                        if (len == strlen(ctrl_names[i].name) &&
                            strncmp(p, ctrl_names[i].name, len) == 0)
                                bits |= ctrl_names[i].bit;
                p += len;
        }
        return bits;
}

int cg_v2_format_enable(unsigned bits, char *buf, size_t size)
{
        size_t len = 0;
        if (size == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++) {
                if (!(bits & ctrl_names[i].bit))
                        continue;
                int n = snprintf(buf + len, size - len, "%s+%s", len ? " " : "",
                                 ctrl_names[i].name);
                if (n < 0 || (size_t)n >= size - len)
                        return -ENOBUFS;
                len += (size_t)n;
        }
        return 0;
}
