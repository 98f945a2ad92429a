/* The job's directories, checked, and the idmap namespace that binds a
 * root-owned one to the job's ids (see supervise-dirs-internal.h). */
#include "sandbox/supervise-dirs-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"

/* A user namespace whose only mapping is owner -> the job's host ids, for
 * idmapped binds (only its id maps matter: the process that made it is
 * gone when it is used).  Made here, by the single-threaded supervisor.
 * Its placeholder is killed, and reaped later
 * (sbx_sup_reap_idmap_child): it has to run to die, and waiting for that
 * here waited ~0.7 ms for a CPU (the other one building the sandbox's
 * root), most of a cold start's idmap step and on its critical path. */
int sbx_sup_make_idmap(struct supervisor *s, uid_t owner, gid_t group)
{
        /* The job's ids on the host: what its processes are outside. */
        uid_t uid = s->c->host.uid;
        gid_t gid = s->c->host.gid;
        sbx_sup_reap_placeholder(&s->idmap_child, 0);
        /* clone(CLONE_VM) instead of fork: the child shares our memory, so
         * no page table is copied (the dearest part of a fork on a
         * virtualised host), and it runs nothing but pause(). */
        static char stack[16384] __attribute__((aligned(16)));
        /* The placeholder only has to exist while its maps are written
         * and the namespace is opened. */
        pid_t pid = clone(sbx_sup_placeholder_main, stack + sizeof(stack),
                          CLONE_NEWUSER | CLONE_VM | SIGCHLD, (void *)(intptr_t)getpid());
        if (pid < 0)
                return -errno;
        char map[64];
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)owner, (unsigned)uid);
        int r = sbx_sup_write_map(pid, "uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)group, (unsigned)gid);
        if (r >= 0)
                r = sbx_sup_write_map(pid, "gid_map", map);
        int fd = -1;
        if (r >= 0) {
                char path[64];
                fd = sbx_sup_open_ns_of(pid, "user", path);
                if (fd < 0)
                        r = -errno;
        }
        kill(pid, SIGKILL);
        s->idmap_child = pid;
        return r < 0 ? r : fd;
}

/* A --workspace or --scratch directory: it must exist, and with
 * --disk-mb lie on a filesystem no larger than that (fail closed: a
 * plain directory cannot be bounded).  Scratch gets its tmp/ and shm/.
 * All of it through one fd: a warm sandbox checks them at every handoff,
 * and each of about ten calls walked the path again. */
static int check_dir(struct supervisor *s, const char *dir, bool is_scratch, struct stat *ret)
{
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_fd_ int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, ret) < 0) {
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, errno, dir, "not a directory");
                return -1;
        }
        /* Bound in place, what the job leaves is on the host as it left
         * it: a set-id file (the job owns its files, and they belong to
         * the directory's owner outside) must not be set-id there. */
        struct statvfs sv;
        if (fstatvfs(fd, &sv) < 0 || !(sv.f_flag & ST_NOSUID)) {
                sbx_sup_fail(
                        s, SBX_STEP_WORKSPACE, EPERM, dir,
                        "must be on a nosuid mount: a set-id file the job makes there would be "
                        "set-id on the host (e.g. mount --bind DIR DIR; mount -o "
                        "remount,bind,nosuid,nodev DIR; the worker mounts each job's nosuid)");
                return -1;
        }
        if (s->c->disk_mb && sandbox_workspace_check_bound(dir, &sv, s->c->disk_mb, &err) < 0) {
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, err.errnum, dir, bc_error_message(&err));
                bc_error_clear(&err);
                return -1;
        }
        if (!is_scratch)
                return 0;
        static const char *const subs[] = { "tmp", "shm" };
        for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
                struct stat st;
                int e = 0;
                /* Most often there already: the worker makes them with
                 * each workspace filesystem and at each wipe
                 * (worker/workdir/ws_wipe.h). */
                if (fstatat(fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        e = errno;
                        if (e == ENOENT && mkdirat(fd, subs[i], 01777) < 0)
                                e = errno;
                        else if (e == ENOENT)
                                e = fstatat(fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
                }
                if (!e && !S_ISDIR(st.st_mode))
                        e = ENOTDIR;
                if (!e && (st.st_mode & 07777) != 01777 && fchmodat(fd, subs[i], 01777, 0) < 0)
                        e = errno;
                if (e) {
                        char p[4096];
                        snprintf(p, sizeof(p), "%s/%s", dir, subs[i]);
                        sbx_sup_fail(s, SBX_STEP_WORKSPACE, e, p,
                                     "cannot prepare the scratch directory");
                        return -1;
                }
        }
        return 0;
}

/* The user namespace mapping the workspace's owner to the job's ids, or
 * -1 with the failure recorded. */
int sbx_sup_make_workspace_idmap(struct supervisor *s, uid_t owner, gid_t group)
{
        int fd = sbx_sup_make_idmap(s, owner, group);
        if (fd < 0)
                sbx_sup_fail(s, SBX_STEP_WORKSPACE, -fd, NULL,
                             "cannot make the user namespace for the idmapped workspace");
        return fd < 0 ? -1 : fd;
}

int sbx_sup_prepare_dirs(struct supervisor *s, uid_t idmap_owner, gid_t idmap_group, bool later)
{
        const struct helper_config *c = s->c;
        struct stat ws, sc;
        if (c->workspace && check_dir(s, c->workspace, false, &ws) < 0)
                return -1;
        if (c->scratch && check_dir(s, c->scratch, true, &sc) < 0)
                return -1;
        /* As root the job's uid differs from the directory's owner: an
         * idmapped bind gives it the workspace without a chown (and the
         * host keeps the owner).  Unprivileged, the sandbox's own user
         * namespace already maps the job to us, the owner. */
        const struct stat *own = c->workspace ? &ws : c->scratch ? &sc : NULL;
        if (geteuid() != 0 || !own || (own->st_uid == c->host.uid && own->st_gid == c->host.gid)) {
                if (s->idmap_fd >= 0)
                        close(s->idmap_fd); /* made ahead, not needed */
                s->idmap_fd = -1;
                return 0;
        }
        if (s->idmap_fd >= 0 && own->st_uid == idmap_owner && own->st_gid == idmap_group)
                return 0;
        if (s->idmap_fd >= 0)
                close(s->idmap_fd);
        s->idmap_fd = -1;
        if (later) {
                s->idmap_later = true;
                s->idmap_owner = own->st_uid;
                s->idmap_group = own->st_gid;
                return 0;
        }
        s->idmap_fd = sbx_sup_make_workspace_idmap(s, own->st_uid, own->st_gid);
        return s->idmap_fd < 0 ? -1 : 0;
}
