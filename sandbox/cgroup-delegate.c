/* cgroup v2 delegation for the worker (sandbox_cgroup_prepare_worker).
 *
 * cgroup v2's "no internal processes" rule: a non-root cgroup that holds
 * processes cannot enable controllers for its children (writing to its
 * cgroup.subtree_control fails with EBUSY).  A worker started in cgroup C
 * (a systemd service with Delegate=yes, a container's namespace root)
 * therefore cannot give its jobs' cgroups memory/pids/cpu limits while it
 * sits in C itself.  So, once, before it has threads, it moves itself into
 * a leaf C/boxcar-worker and enables the controllers in C: every job
 * cgroup is then C/boxcar-sandbox-<pid>, a sibling of the worker's leaf,
 * still bounded by whatever limits were set on C.
 *
 * The parsing and decisions are pure functions; the procedure only reads
 * and writes files under paths it is given, so the unit tests run it
 * against a tree of plain files. */
#include "sandbox/cgroup-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/cleanup.h"
#include "sandbox/cgroup-fs-internal.h"

/* Absolute, no empty/"."/".." component (a trailing slash only for "/"). */
static bool cg_path_valid(const char *p)
{
        if (p[0] != '/')
                return false;
        if (p[1] == '\0')
                return true;
        for (const char *s = p; *s; s += strcspn(s, "/")) {
                s++; /* past the '/' */
                size_t len = strcspn(s, "/");
                if (len == 0 || (len == 1 && s[0] == '.') ||
                    (len == 2 && s[0] == '.' && s[1] == '.'))
                        return false;
        }
        return true;
}

int cg_v2_parse_own(const char *proc_cgroup, char **ret)
{
        for (const char *line = proc_cgroup; line && *line;) {
                size_t len = strcspn(line, "\n");
                if (len >= 3 && strncmp(line, "0::", 3) == 0) {
                        char *path = strndup(line + 3, len - 3);
                        if (!path)
                                return -ENOMEM;
                        if (!cg_path_valid(path)) {
                                free(path);
                                return -EINVAL;
                        }
                        *ret = path;
                        return 0;
                }
                line += len;
                if (*line == '\n')
                        line++;
        }
        return -ENOENT;
}

int cg_v2_worker_parent(const char *own, char **ret)
{
        const char *slash = strrchr(own, '/');
        if (!slash)
                return -EINVAL;
        char *p;
        if (strcmp(slash + 1, CG_WORKER_LEAF) == 0)
                p = slash == own ? strdup("/") : strndup(own, (size_t)(slash - own));
        else
                p = strdup(own);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static int read_all(const char *path, char *buf, size_t size)
{
        const char *slash = strrchr(path, '/');
        if (!slash || slash == path)
                return -EINVAL;
        _cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
        return dir ? cg_read_file(dir, slash + 1, buf, size) : -ENOMEM;
}

static bool not_ours(int e)
{
        return e == EACCES || e == EPERM || e == EROFS;
}

static int count_procs(const char *dir)
{
        char buf[4096];
        if (cg_read_file(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
                return -1;
        int n = 0;
        for (const char *p = buf; *p; p++)
                n += *p == '\n';
        return n;
}

/* Enables the missing ones of avail in dir's subtree_control, in one
 * write (the kernel applies a list all-or-nothing). */
static int enable_controllers(const char *dir, unsigned avail, struct bc_error *err)
{
        char buf[512];
        int r = cg_read_file(dir, "cgroup.subtree_control", buf, sizeof(buf));
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r,
                                    "read %s/cgroup.subtree_control: %s", dir, strerror(-r));
        unsigned missing = avail & ~cg_v2_parse_controllers(buf);
        if (!missing)
                return 0;
        if (cg_v2_format_enable(missing, buf, sizeof(buf)) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOBUFS, "controller list too long");
        struct bc_error local = BC_ERROR_INIT;
        r = cg_write(dir, "cgroup.subtree_control", buf, &local);
        if (r < 0 && local.errnum == EBUSY) {
                int n = count_procs(dir);
                bc_error_clear(&local);
                return bc_error_set(
                        err, BC_SANDBOX_SETUP, EBUSY,
                        "cannot enable '%s' in %s/cgroup.subtree_control: %d other "
                        "process(es) still in %s, and cgroup v2 gives no controllers "
                        "to the children of a cgroup holding processes (run the worker "
                        "alone in its cgroup, e.g. a systemd service with Delegate=yes)",
                        buf, dir, n, dir);
        }
        if (r < 0) {
                bc_error_move(err, &local);
                return r;
        }
        return 0;
}

/* Moves the calling process into dir/CG_WORKER_LEAF, creating it.  1 when
 * done, 0 when the hierarchy is not ours to change, negative on error. */
static int enter_leaf(const char *dir, struct bc_error *err)
{
        _cleanup_free_ char *leaf = NULL;
        if (asprintf(&leaf, "%s/" CG_WORKER_LEAF, dir) < 0) {
                leaf = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        bool made = mkdir(leaf, 0755) == 0;
        if (!made && errno != EEXIST)
                return not_ours(errno) ? 0
                                       : bc_error_set(err, BC_SANDBOX_SETUP, errno, "mkdir %s: %s",
                                                      leaf, strerror(errno));
        /* "0" is the writer itself: its whole thread group moves. */
        struct bc_error local = BC_ERROR_INIT;
        int r = cg_write(leaf, "cgroup.procs", "0", &local);
        if (r < 0) {
                if (made)
                        (void)rmdir(leaf);
                if (not_ours(local.errnum)) {
                        bc_error_clear(&local);
                        return 0;
                }
                bc_error_move(err, &local);
                return r;
        }
        return 1;
}

int cg_prepare_worker_at(const struct cg_worker_paths *paths, char **ret_parent,
                         struct bc_error *err)
{
        char buf[8192];
        int r = read_all(paths->proc_cgroup, buf, sizeof(buf));
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "read %s: %s", paths->proc_cgroup,
                                    strerror(-r));
        _cleanup_free_ char *own = NULL;
        r = cg_v2_parse_own(buf, &own);
        if (r == -ENOENT) {
                *ret_parent = NULL; /* not in a v2 hierarchy at all */
                return 0;
        }
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "%s: unusable cgroup v2 path",
                                    paths->proc_cgroup);
        _cleanup_free_ char *rel = NULL;
        r = cg_v2_worker_parent(own, &rel);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, -r, "cgroup path '%s': %s", own,
                                    strerror(-r));
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "%s%s", paths->root, strcmp(rel, "/") ? rel : "") < 0) {
                dir = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        r = cg_read_file(dir, "cgroup.controllers", buf, sizeof(buf));
        if (r < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "read %s/cgroup.controllers: %s",
                                    dir, strerror(-r));
        unsigned avail = cg_v2_parse_controllers(buf);
        if (!avail) {
                *ret_parent = NULL; /* nothing delegated to this cgroup */
                return 0;
        }
        /* The leaf first: the controllers can only be enabled in dir once
         * the worker no longer lives there. */
        r = enter_leaf(dir, err);
        if (r <= 0) {
                if (r == 0)
                        *ret_parent = NULL;
                return r;
        }
        r = enable_controllers(dir, avail, err);
        if (r < 0)
                return r;
        *ret_parent = steal_pointer(&dir);
        return 0;
}

int sandbox_cgroup_prepare_worker(const char *cgroup_root, char **ret_parent, struct bc_error *err)
{
        if (!ret_parent)
                return bc_error_set(err, BC_INTERNAL, EINVAL, "NULL ret_parent");
        const char *root = cgroup_root;
        struct statfs sf;
        if (!root) {
                if (cg_hierarchy(&root) != SANDBOX_CGROUP_V2)
                        root = NULL;
        } else if (statfs(root, &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
                root = NULL;
        }
        if (!root) {
                *ret_parent = NULL; /* v1 or no cgroups: nothing to delegate */
                return 0;
        }
        const struct cg_worker_paths p = { .root = root, .proc_cgroup = "/proc/self/cgroup" };
        return cg_prepare_worker_at(&p, ret_parent, err);
}
