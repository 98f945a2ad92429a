/* sandbox_detect: what isolation this host offers.  Only probes; the one
 * probe that must try something (can an unprivileged process make a user
 * namespace?) runs in a short-lived child. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "sandbox/cgroup-fs-internal.h"
#include "sandbox/cgroup-internal.h"

static bool probe_userns(void)
{
        pid_t pid = fork();
        if (pid < 0)
                return false;
        if (pid == 0) {
                /* As root, ask for nobody: the question is whether an
                 * unprivileged helper could run, not whether root can. */
                if (geteuid() == 0 && setresuid(65534, 65534, 65534) < 0)
                        _exit(2);
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return false;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static bool probe_mount_api(void)
{
        /* Invalid on purpose: EBADF/EINVAL mean the syscall exists. */
        return mount_setattr(-1, "", 0, NULL, 0) < 0 && errno != ENOSYS;
}

/* The probes call each syscall in a way that cannot change anything;
 * ENOSYS alone means the kernel lacks it. */
static bool probe_pidfd_open(void)
{
        int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
        if (fd >= 0)
                close(fd);
        return fd >= 0 || errno != ENOSYS;
}

static bool probe_clone3(void)
{
        return syscall(SYS_clone3, NULL, 0) < 0 && errno != ENOSYS;
}

static bool probe_kvm(void)
{
        int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

static bool v1_mounted(const char *ctrl)
{
        char p[128];
        struct statfs sf;
        snprintf(p, sizeof(p), "/sys/fs/cgroup/%s", ctrl);
        return statfs(p, &sf) == 0 && sf.f_type == CGROUP_SUPER_MAGIC;
}

static bool v2_enabled(const char *root, const char *ctrl)
{
        char p[256], line[512] = "";
        snprintf(p, sizeof(p), "%s/cgroup.controllers", root);
        _cleanup_fclose_ FILE *f = fopen(p, "re");
        if (!f || !fgets(line, sizeof(line), f))
                return false;
        for (char *save = NULL, *t = strtok_r(line, " \n", &save); t;
             t = strtok_r(NULL, " \n", &save))
                if (strcmp(t, ctrl) == 0)
                        return true;
        return false;
}

static void probe_cgroups(struct sandbox_caps *c)
{
        const char *root = NULL;
        const struct cg_backend *b = cg_detect(&root);
        if (!b)
                return;
        c->cgroup = b->version;
        _cleanup_free_ char *own = NULL;
        char dir[4096];
        if (b->version == SANDBOX_CGROUP_V2) {
                c->cg_memory = v2_enabled(root, "memory");
                c->cg_pids = v2_enabled(root, "pids");
                c->cg_cpu = v2_enabled(root, "cpu");
                own = cg_own_path(NULL);
                if (snprintf(dir, sizeof(dir), "%s%s", root, own ? own : "") >= (int)sizeof(dir))
                        return;
        } else {
                c->cg_memory = v1_mounted("memory");
                c->cg_pids = v1_mounted("pids");
                c->cg_cpu = v1_mounted("cpu");
                own = cg_own_path(c->cg_memory ? "memory" : "pids");
                if (snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s%s",
                             c->cg_memory ? "memory" : "pids", own ? own : "") >= (int)sizeof(dir))
                        return;
        }
        c->cg_writable = access(dir, W_OK) == 0;
        if (b->version == SANDBOX_CGROUP_V2) {
                char kill[4200];
                snprintf(kill, sizeof(kill), "%s/cgroup.kill", dir);
                c->cg_kill = own && strcmp(own, "/") != 0 ? access(kill, F_OK) == 0 : -1;
        }
        size_t n = strlen(dir);
        if (n < sizeof(c->cg_dir))
                memcpy(c->cg_dir, dir, n + 1);
        /* v2: the worker cannot stay in the cgroup it gives controllers to
         * (no internal processes), so it moves into a leaf of it. */
        c->cg_delegate = b->version == SANDBOX_CGROUP_V2 && c->cg_writable &&
                         (c->cg_memory || c->cg_pids || c->cg_cpu);
}

int sandbox_detect(struct sandbox_caps *ret, struct bc_error *err)
{
        (void)err;
        struct sandbox_caps c = { 0 };
        struct utsname u;
        if (uname(&u) == 0 && snprintf(c.kernel, sizeof(c.kernel), "%s", u.release) < 0)
                c.kernel[0] = '\0';
        c.running_as_root = geteuid() == 0;
        c.user_namespaces = probe_userns();
        c.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
        c.mount_api = probe_mount_api();
        c.pidfd_open = probe_pidfd_open();
        c.clone3 = probe_clone3();
        c.kvm = probe_kvm();
        c.workspace_fs = sandbox_workspace_available(c.workspace_fs_why,
                                                     sizeof(c.workspace_fs_why));
        c.artifact_overlay = sandbox_overlay_available(c.artifact_overlay_why,
                                                       sizeof(c.artifact_overlay_why));
        probe_cgroups(&c);
        c.backend = "namespace";
        c.backend_reason = "";
        if (!c.mount_api) {
                c.backend = "none";
                c.backend_reason = "kernel lacks open_tree/mount_setattr (need Linux >= 5.12)";
        } else if (!c.seccomp) {
                c.backend = "none";
                c.backend_reason = "kernel built without seccomp";
        } else if (!c.running_as_root && !c.user_namespaces) {
                c.backend = "none";
                c.backend_reason = "not root and unprivileged user namespaces are disabled";
        }
        *ret = c;
        return 0;
}

static const char *yn(bool b)
{
        return b ? "yes" : "no";
}

char *sandbox_caps_format(const struct sandbox_caps *c)
{
        struct dynbuf b;
        dynbuf_init(&b, 4096);
        static const char *const cg[] = { "none", "v1", "v2" };
        int r = dynbuf_printf(&b,
                              "kernel:           %s\n"
                              "running as root:  %s\n"
                              "user namespaces:  %s%s\n"
                              "seccomp:          %s\n"
                              "mount API:        %s\n"
                              "pidfd_open:       %s\n"
                              "clone3:           %s\n"
                              "cgroup:           %s (memory %s, pids %s, cpu %s; %s)\n"
                              "kvm:              %s\n"
                              "workspace fs:     %s%s\n"
                              "artifact base:    %s%s\n"
                              "project quotas:   %s%s%s\n"
                              "backend:          %s%s%s\n",
                              c->kernel, yn(c->running_as_root), yn(c->user_namespaces),
                              c->user_namespaces ? " (unprivileged)" : "", yn(c->seccomp),
                              yn(c->mount_api), yn(c->pidfd_open), yn(c->clone3),
                              cg[c->cgroup <= SANDBOX_CGROUP_V2 ? c->cgroup : 0], yn(c->cg_memory),
                              yn(c->cg_pids), yn(c->cg_cpu),
                              c->cg_writable ? "per-sandbox cgroups can be created"
                                             : "cannot create cgroups: limits unavailable",
                              yn(c->kvm),
                              c->workspace_fs ? "yes (a bounded ext4 filesystem per job: disk_mb "
                                                "and files enforced by the kernel)"
                                              : "no: ",
                              c->workspace_fs ? "" : c->workspace_fs_why,
                              c->artifact_overlay
                                      ? "overlay (the cached version, read-only, under the "
                                        "job's changes: no extraction per job)"
                                      : "extracted into each job's workspace: ",
                              c->artifact_overlay ? "" : c->artifact_overlay_why,
                              yn(c->project_quota), c->project_quota ? "" : ": ",
                              c->project_quota ? " (not used: an image per job bounds blocks and "
                                                 "inodes on any filesystem)"
                                               : c->project_quota_why,
                              c->backend ? c->backend : "none",
                              c->backend_reason && *c->backend_reason ? ": " : "",
                              c->backend_reason ? c->backend_reason : "");
        if (r >= 0 && c->cgroup == SANDBOX_CGROUP_V2)
                r = dynbuf_printf(&b, "cgroup.kill:      %s\n",
                                  c->cg_kill < 0 ? "cannot tell (in the root cgroup)"
                                                 : yn(c->cg_kill));
        if (r >= 0 && c->cg_delegate)
                r = dynbuf_printf(&b,
                                  "cgroup v2 use:    delegated leaf: the worker moves itself into "
                                  "<its cgroup>/boxcar-worker\n"
                                  "                  (here %s/boxcar-worker) and makes each job's "
                                  "cgroup next to it,\n"
                                  "                  since v2 gives no controllers below a cgroup "
                                  "that holds processes\n",
                                  c->cg_dir);
        else if (r >= 0 && c->cgroup == SANDBOX_CGROUP_V2)
                r = dynbuf_printf(&b,
                                  "cgroup v2 use:    none: %s is not writable or has no "
                                  "controllers; jobs asking\n"
                                  "                  for limits will fail (delegate the worker's "
                                  "cgroup, e.g. systemd Delegate=yes)\n",
                                  c->cg_dir[0] ? c->cg_dir : "our cgroup");
        if (r < 0) {
                dynbuf_done(&b);
                return NULL;
        }
        return dynbuf_steal(&b);
}
