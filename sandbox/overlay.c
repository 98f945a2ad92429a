/* A job's workspace over a cached artifact version: an overlay whose
 * lower layer is the version's extracted tree (shared, never written) and
 * whose upper and work directories lie on the job's own filesystem.
 *
 * Mounted by the worker, in its private mount namespace, and handed to
 * the sandbox as a plain --workspace directory (cloned with open_tree in
 * the cold and the warm path alike): the sandbox needs no new privilege
 * and no overlay code.  The kernel refuses an idmapped mount of an
 * overlay, so the tree is owned by the job's uid to begin with (the cache
 * stores it so, see storage_cache_set_owner): the sandbox then binds it
 * without an idmap.  As root each sandbox's job now has host ids of its
 * own (sandbox.h, Host identities), which no tree can be owned by ahead: the worker then
 * extracts bases instead (sandbox_overlay_available says so).
 *
 * Why the bounds still hold: every write lands in the upper directory,
 * on the job's ext4 of disk_mb and `files` inodes (statfs of the overlay
 * reports that filesystem, which the sandbox checks); the lower is
 * read-only through the overlay whatever its modes (a change is a copy-up,
 * a removal a whiteout, both in the upper). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

static bool overlay_supported(void)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/filesystems", "re");
        char line[128];
        while (f && fgets(line, sizeof(line), f))
                if (strcmp(line, "nodev\toverlay\n") == 0)
                        return true;
        return false;
}

bool sandbox_overlay_available(char *why, size_t n)
{
        const char *reason = NULL;
        char ws[128] = "";
        if (!sandbox_workspace_available(ws, sizeof(ws)))
                reason = ws;
        else if (!overlay_supported())
                reason = "the kernel has no overlay filesystem (modprobe overlay)";
        /* As root, where workspaces are made, every sandbox runs its job as
         * host ids of its own (sandbox.h, Host identities), known only once the sandbox is:
         * the tree would have to be idmapped to them, which the kernel
         * refuses for an overlay. */
        else
                reason = "each sandbox's job has host ids of its own (--uid-range), and an "
                         "overlay cannot be idmapped to them";
        if (why && n)
                snprintf(why, n, "%s", reason ? reason : "");
        return reason == NULL;
}

/* mount(2) options are a comma-separated list, and lowerdir a
 * colon-separated one: a path with either (or a backslash, their escape)
 * cannot be named. */
static bool nameable(const char *p)
{
        return strpbrk(p, ",:\\") == NULL;
}

static int make_owned_dir(const char *path, uid_t uid, gid_t gid, mode_t mode,
                          struct bc_error *err)
{
        if (mkdir(path, mode) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mkdir %s: %m", path);
        if (chown(path, uid, gid) < 0 || chmod(path, mode) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "chown %s: %m", path);
        return 0;
}

int sandbox_overlay_mount(const char *lower, const char *state_dir, const char *mountpoint,
                          uid_t uid, gid_t gid, struct bc_error *err)
{
        char upper[4096], work[4096], opts[3 * 4096 + 64];
        snprintf(upper, sizeof(upper), "%s/upper", state_dir);
        snprintf(work, sizeof(work), "%s/work", state_dir);
        if (!nameable(lower) || !nameable(state_dir))
                return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL,
                                    "overlay: %s or %s has ',', ':' or '\\' in its path", lower,
                                    state_dir);
        int r = make_owned_dir(state_dir, 0, 0, 0700, err);
        /* The upper's root is the workspace's root: the job's own. */
        if (r >= 0)
                r = make_owned_dir(upper, uid, gid, 0755, err);
        if (r >= 0)
                r = make_owned_dir(work, 0, 0, 0700, err);
        if (r < 0)
                return r;
        /* redirect_dir and metacopy off: a merged name is then either in
         * the upper or the lower's at the same path, which the worker
         * relies on to cache the job's new version cheaply
         * (fs_overlay_flatten); index off, as by default. */
        snprintf(opts, sizeof(opts),
                 "lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off",
                 lower, upper, work);
        if (mount("overlay", mountpoint, "overlay", MS_NOSUID | MS_NODEV | MS_NOATIME, opts) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mount overlay on %s: %m",
                                    mountpoint);
        return 0;
}
