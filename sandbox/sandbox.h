/* The sandbox module: everything the worker needs to run a job isolated.
 *
 * The worker never isolates anything in its own (multi-threaded) process.
 * It builds an argv with sandbox_argv_build(), starts the single-threaded
 * `boxcar-sandbox` helper with it, drains the job's stdout/stderr, reads
 * the helper's one JSON status object from the status pipe and decodes it
 * with sandbox_status_parse().  Cancelling a job is sending SIGTERM to the
 * helper: it kills the whole sandbox and still writes its status.
 *
 * Nothing here logs; every fallible function returns 0 or a negative errno
 * and fills *err. */
#ifndef BC_SANDBOX_SANDBOX_H
#define BC_SANDBOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/error.h"

struct sandbox_bind {
        const char *src;  /* host path */
        const char *dest; /* absolute path inside the sandbox */
};

enum sandbox_network {
        SANDBOX_NET_NONE,  /* a fresh network namespace with loopback only */
        SANDBOX_NET_HOST,  /* the host's network (only if the queue allows it) */
        SANDBOX_NET_ALLOW, /* a fresh namespace whose only way out is the
                            * supervisor's egress proxy, for the allow-list
                            * (sandbox/egress-internal.h) */
};

/* Zero for a numeric limit means "not set" (the helper's default applies). */
struct sandbox_opts {
        const char *workspace; /* host dir, bound rw at /workspace (no copy) */
        const char *scratch;   /* host dir whose tmp/ and shm/ are bound at
                                           * /tmp and /dev/shm; NULL: a tmpfs */
        const struct sandbox_bind *ro_binds;
        size_t n_ro_binds;
        char *const *env;  /* "K=V", NULL-terminated; may be NULL */
        char *const *argv; /* command, NULL-terminated, non-empty */
        double timeout_s;
        uint64_t memory_mb;
        uint32_t pids;
        double cpus;
        uint64_t disk_mb;
        enum sandbox_network network;
        /* cgroup v2: the directory (absolute, under the cgroup mount) the
         * per-sandbox cgroup is made in, from sandbox_cgroup_prepare_worker;
         * NULL: the helper's own cgroup.  Ignored on v1. */
        const char *cgroup_parent;
        /* A root filesystem (an unpacked image, absolute host path) to run
         * on instead of the host's system directories; NULL: the host's. */
        const char *image;
        /* SANDBOX_NET_ALLOW: the rules ("pypi.org:443", ...); those whose
         * net_allow_private[i] is true may reach private addresses (the
         * worker's --allow-private-egress; NULL: none may); net_private:
         * every rule may reach every special address but the metadata
         * service (the helper's --network-private, which the worker never
         * sets). */
        char *const *net_allow;
        const bool *net_allow_private;
        size_t n_net_allow;
        bool net_private;
};

/* Builds the argv that execs `helper_path` (argv[0]) for these options, the
 * status object going to status_fd (omitted when status_fd < 0).  Every
 * string is copied: *ret_argv owns them and outlives o.  Validates the
 * options (absolute bind destinations, "K=V" env entries, non-empty
 * command, sane numbers) with BC_BAD_SPEC errors naming the field.
 * Free with sandbox_argv_free(). */
int sandbox_argv_build(const struct sandbox_opts *o, const char *helper_path, int status_fd,
                       char ***ret_argv, struct bc_error *err);
/* NULL-safe. */
void sandbox_argv_free(char **argv);

/* ---- Job workspaces: a bounded filesystem per job (workspace.c) ----
 *
 * The worker gives every job a filesystem of its own: a sparse ext4 image
 * of disk_mb in the job's directory, attached to an autoclear loop device
 * and mounted nosuid,nodev.  The kernel then bounds the bytes really
 * allocated (holes and hard links cannot beat it) and the inodes, and the
 * files live on disk, not in the job's memory cgroup.  Needs root, loop
 * devices, ext4 and mke2fs; where they are missing, jobs fail closed. */

/* Inodes besides the job's files: root, lost+found, the workspace and
 * scratch directories, ext4's reserved inodes. */
#define SANDBOX_WORKSPACE_SPARE_INODES 32

/* Whether this host can make workspace filesystems; *why says what is
 * missing when it cannot ("" when it can). */
bool sandbox_workspace_available(char *why, size_t n);
/* Whether ext4 project quotas work on this kernel (a probe: formats and
 * mounts a small image under /tmp); *why says why not.  For `boxcar
 * sandbox detect` only: workspaces are bounded by their own filesystem
 * whatever the answer. */
bool sandbox_workspace_project_quota(char *why, size_t n);
/* The inode count of a workspace: files, capped at one per 4 KiB of
 * disk_mb, plus SANDBOX_WORKSPACE_SPARE_INODES. */
uint64_t sandbox_workspace_inodes(uint64_t disk_mb, uint64_t files);
/* Creates image (must not exist; sparse, disk_mb MiB), formats it with
 * room for `files` files and mounts it at mountpoint (made if missing),
 * owned by root.  BC_SANDBOX_SETUP errors.  On failure nothing stays
 * mounted or attached; the image file may remain (the caller removes the
 * job's directory). */
int sandbox_workspace_make(const char *image, const char *mountpoint, uint64_t disk_mb,
                           uint64_t files, struct bc_error *err);
/* Unmounts it (lazily when busy); the loop device detaches by itself.
 * Not mounted is not an error. */
int sandbox_workspace_unmount(const char *mountpoint, struct bc_error *err);
/* Unmounts every mount below dir (what a killed worker left under its
 * --work-dir); *ret_n counts them. */
int sandbox_workspace_cleanup(const char *dir, unsigned *ret_n, struct bc_error *err);
/* Unmounts every mount below dir, then removes dir's tree without following
 * a symlink or entering a mount that stayed (a job's directory, a pool's). */
void sandbox_workspace_remove_dir(const char *dir);
/* The removal alone, for a directory known to hold no mount. */
void sandbox_workspace_remove_tree(const char *dir);
/* For the worker, ONCE at startup while single-threaded (unshare of the
 * mount namespace needs an unshared fs_struct): moves the process into a
 * mount namespace of its own, a slave of the host's (host mounts still
 * appear in it, ours never propagate out).  The workspace mounts then die
 * with the worker however it dies, kill -9 included, and their autoclear
 * loop devices with them.  The helpers it starts inherit the namespace. */
int sandbox_workspace_private_mounts(struct bc_error *err);
struct statvfs;
/* 0 when dir, whose filesystem's fstatvfs() is sv, lies on a filesystem
 * of at most disk_mb MiB, so that limit holds whatever is written there;
 * else BC_SANDBOX_SETUP saying why. */
int sandbox_workspace_check_bound(const char *dir, const struct statvfs *sv, uint64_t disk_mb,
                                  struct bc_error *err);

/* ---- Warm sandboxes (warm_client.c; the helper's side: warm.c) ----
 *
 * A warm sandbox is a boxcar-sandbox --warm process that has made
 * everything but the job: namespaces, the root, /proc and /dev, its
 * cgroup.  The worker keeps a pool of them and hands a claimed job to one;
 * the job then starts in about a millisecond instead of a cold setup's
 * ten.  One sandbox runs one job and is then gone, as a cold one is.
 * Start and discard from the thread that lives as long as the pool: the
 * helper dies with that thread (PR_SET_PDEATHSIG). */
struct sandbox_warm {
        pid_t pid; /* the helper (its process group's leader) */
        int ctl;   /* our end of its control socket; -1 after handoff */
        enum sandbox_network network;
        bool ready;
        struct timespec started; /* CLOCK_MONOTONIC at the spawn */
};

/* The limits a warm sandbox's cgroup takes while it is made and waits (as
 * sandbox_opts': 0, none): a job asking the same ones, the spec's defaults
 * for most jobs, has none to write at its handoff. */
struct sandbox_warm_limits {
        uint64_t memory_mb;
        uint32_t pids;
        double cpus;
};

/* image: the root the sandbox is built on (as sandbox_opts.image), NULL
 * for the host's; its jobs must name the same image.  The string is
 * copied.  limits: NULL for none. */
int sandbox_warm_start(const char *helper, enum sandbox_network network, const char *cgroup_parent,
                       const char *image, const struct sandbox_warm_limits *limits,
                       struct sandbox_warm *ret, struct bc_error *err);
/* Non-blocking: 1 when ready (and still alive), 0 not yet, negative when it
 * failed or died (err says why; discard it). */
int sandbox_warm_check(struct sandbox_warm *w, struct bc_error *err);
/* Hands a ready sandbox its job: argv as sandbox_argv_build made it with
 * status_fd -1 (argv[0] is ignored), the job's stdout and stderr, and where
 * the status goes.  With go_fd (-1: none), the sandbox prepares the job,
 * then starts it only once go_fd is readable (the job's claim committed:
 * an eventfd); SIGTERM stops it unstarted.  The caller keeps its copies
 * of the fds.  After 0 the job is the sandbox's: wait for w->pid as for a
 * cold helper (it exits when the job is over, SIGTERM cancels).
 * Negative: the sandbox is unusable (discard it) and nothing of the job
 * ran. */
int sandbox_warm_handoff(struct sandbox_warm *w, char *const *argv, int out_w, int err_w,
                         int status_w, int go_fd, struct bc_error *err);
/* Tells an unused sandbox to go (SIGTERM: it tears itself down). */
void sandbox_warm_discard(struct sandbox_warm *w);
/* Reaps a discarded one: true once it is gone (force: SIGKILL first).  A
 * sandbox killed before its teardown has its cgroup removed here
 * (cgroup_parent as given to sandbox_warm_start). */
bool sandbox_warm_reap(struct sandbox_warm *w, bool force, const char *cgroup_parent);

/* For a helper of this pid that was killed (so never removed its cgroup)
 * and has been reaped: removes the cgroup it made, if still there and
 * empty.  cgroup_parent: as the helper was given (--cgroup-parent), or
 * NULL. */
void sandbox_cgroup_remove_dead(pid_t pid, const char *cgroup_parent);

/* At a worker's start: removes the empty cgroups of helpers whose pid is
 * gone (boxcar-sandbox-<pid>, where this worker's helpers make theirs),
 * which their worker, killed with SIGKILL, never reaped.  Returns how many. */
unsigned sandbox_cgroup_sweep_dead(const char *cgroup_parent);

/* cgroup v2 delegation, for the worker; call it ONCE at startup, before
 * the process has a second thread (the move below takes the whole thread
 * group, and nothing may race it).
 *
 * Why: cgroup v2's "no internal processes" rule lets a cgroup enable
 * controllers for its children (cgroup.subtree_control) only while it
 * holds no processes itself.  A worker living in its cgroup C could never
 * give its jobs' cgroups memory/pids/cpu limits (EBUSY).  So, when
 * cgroup_root (NULL: where the helper looks, /sys/fs/cgroup or the hybrid
 * unified mount) is a cgroup2 mount with controllers for C, this reads C
 * from /proc/self/cgroup ("0::/path"; the root of a cgroup namespace, as
 * in a container, is treated the same), creates the leaf C/boxcar-worker,
 * moves the whole process into it, enables whichever of memory, pids and
 * cpu C offers in C/cgroup.subtree_control, and returns C: the directory
 * to pass as sandbox_opts.cgroup_parent, so job cgroups are siblings of
 * the worker's leaf.  Idempotent: a worker already in C/boxcar-worker
 * returns C again.
 *
 * *ret_parent is NULL (and 0 returned) when there is nothing to delegate:
 * not v2, no controllers for C, or C not writable by us; jobs then get
 * their cgroups under the helper's own cgroup, and a job that asks for a
 * limit fails with a message saying why.  Negative errno with err set
 * (BC_SANDBOX_SETUP) when v2 is ours but the procedure failed, e.g. other
 * processes still live in C (EBUSY).  On success the caller owns and
 * frees *ret_parent. */
int sandbox_cgroup_prepare_worker(const char *cgroup_root, char **ret_parent,
                                  struct bc_error *err);

/* The helper's status, decoded.  exit_code is what the helper exits with
 * for the command: its exit status, or 128+signal when it was killed
 * (signal is then non-zero).  setup_failed means the command never ran;
 * setup_step/setup_path/setup_errno/message say why.  exec_failed means
 * the sandbox was fine but the command could not be executed (exit_code
 * 126 or 127, message says why): the job's fault, not the host's.
 * sandbox_killed means the sandbox's init was killed from outside while
 * the job ran (signal says by which): not the job's fault either, and it
 * may have run in part. */
struct sandbox_status {
        int exit_code;
        int signal;
        bool timed_out, oom_killed, cancelled, sandbox_killed;
        uint64_t wall_ms, cpu_ms, max_rss_kb;
        /* The helper's time from having the job (its start, or a warm
         * sandbox's handoff) to the job's start. */
        uint64_t setup_us;
        bool setup_failed;
        bool exec_failed;
        int setup_errno;
        char *setup_step; /* owned; NULL unless setup_failed */
        char *setup_path; /* owned; NULL when no path applies */
        char *message;    /* owned; NULL when nothing failed */
        /* SANDBOX_NET_ALLOW: what went through the egress proxy, and the
         * first refused attempts ("name:port" or "address:port", owned). */
        bool has_network;
        uint64_t net_bytes_out, net_bytes_in, net_connections, net_refused;
        char **net_refused_list;
        size_t n_net_refused_list;
};

/* Decodes one status object (len bytes, need not be NUL-terminated, at most
 * 64 KiB).  Unknown keys are ignored; missing counters read as 0.  On
 * success *ret is overwritten (its old contents are not freed) and must
 * be released with sandbox_status_done(). */
int sandbox_status_parse(const char *json, size_t len, struct sandbox_status *ret,
                         struct bc_error *err);
/* Frees the strings and zeroes s.  NULL-safe. */
void sandbox_status_done(struct sandbox_status *s);

enum sandbox_cgroup_version {
        SANDBOX_CGROUP_NONE = 0,
        SANDBOX_CGROUP_V1,
        SANDBOX_CGROUP_V2,
};

/* ---- An artifact base under a workspace (overlay.c) ----------------- */

/* The identity jobs run as (boxcar-sandbox's default --uid/--gid, which
 * the worker uses): nobody/nogroup. */
#define SANDBOX_JOB_UID 65534
#define SANDBOX_JOB_GID 65534

/* Whether a job's workspace can be an overlay over a cached artifact
 * version (root, workspace filesystems, the overlay filesystem); *why
 * says what is missing ("" when nothing).  Where not, the worker
 * extracts the base into the workspace, as before. */
bool sandbox_overlay_available(char *why, size_t n);
/* Mounts at mountpoint (nosuid, nodev) an overlay of lower (read-only,
 * never modified) with its upper and work directories made under
 * state_dir (which must not exist, and must lie on the filesystem that is
 * to bound the job's writes).  The upper's root, hence the workspace's,
 * belongs to uid:gid.  Undo with sandbox_workspace_unmount(mountpoint). */
int sandbox_overlay_mount(const char *lower, const char *state_dir, const char *mountpoint,
                          uid_t uid, gid_t gid, struct bc_error *err);

/* What isolation this host offers, for `boxcar sandbox detect`. */
struct sandbox_caps {
        bool running_as_root;
        bool user_namespaces;           /* an unprivileged user namespace can be made */
        bool seccomp;                   /* seccomp filters can be installed */
        bool mount_api;                 /* open_tree/move_mount/mount_setattr (>= 5.12) */
        bool kvm;                       /* /dev/kvm is usable */
        bool workspace_fs;              /* per-job workspace filesystems can be made */
        char workspace_fs_why[128];     /* why not, when not */
        bool artifact_overlay;          /* an artifact base is an overlay over the cache */
        char artifact_overlay_why[128]; /* why not (then extracted per job) */
        bool project_quota;             /* ext4 project quotas work here (unused:
                                     * informational, see README); not probed
                                     * by sandbox_detect (it formats and
                                     * mounts an image): the caller fills it */
        char project_quota_why[160];
        enum sandbox_cgroup_version cgroup;
        bool cg_memory, cg_pids, cg_cpu; /* controllers the backend can use */
        bool cg_writable;                /* we may create a per-sandbox cgroup */
        bool cg_delegate;                /* v2: the worker moves into a leaf of its
                                     * cgroup and puts jobs next to it */
        char cg_dir[256];                /* our cgroup directory, when known */
        bool pidfd_open;                 /* >= 5.3: the worker waits on job pidfds */
        bool clone3;                     /* >= 5.3: refused inside sandboxes (ENOSYS) */
        int cg_kill;                     /* v2 >= 5.14: 1 yes, 0 no, -1 cannot tell
                                     * (we sit in the root cgroup, which has
                                     * no cgroup.kill) */
        char kernel[64];                 /* uname release */
        const char *backend;             /* static string: "namespace" or "none" */
        const char *backend_reason;      /* static string: why, when not "namespace" */
};

/* Probes the host; never changes it (the userns probe is a short-lived
 * child).  Returns 0 even when some probes fail: their fields read false. */
int sandbox_detect(struct sandbox_caps *ret, struct bc_error *err);

/* Human-readable, multi-line report of c; caller frees.  NULL on ENOMEM. */
char *sandbox_caps_format(const struct sandbox_caps *c);

/* ---- Host identities for sandboxes (hostid.c) ----
 *
 * As root, every sandbox runs its job as a host uid and gid of its own, taken from a configured
 * range, so that no two sandboxes, and no sandbox and host account,
 * share the kernel's per-user counters (RLIMIT_NPROC, inotify instances,
 * message queue bytes, pipe buffers, pending signals) or can signal or
 * ptrace each other.
 *
 * An id is held by an exclusive flock() on one file per id under a
 * runtime directory, taken by the sandbox's supervisor (boxcar-sandbox)
 * for the sandbox's whole life: every worker and helper on the host
 * shares the directory, and the kernel drops the lock however the holder
 * dies, kill -9 included, so an id is never leaked. */

/* The default: 65536 ids from 0x70000000, above what systemd (its
 * dynamic users and nspawn containers end below 0x70000000) and
 * useradd/podman's subordinate ids (from 100000) hand out. */
#define SANDBOX_ID_RANGE_DEFAULT "1879048192-1879113727"
#define SANDBOX_ID_LOCK_DIR "/run/boxcar/ids"

struct sandbox_id_range {
        uint32_t first;
        uint32_t count;
};

/* "FIRST-LAST" (inclusive, decimal).  Refused: 0 (root), the ids that
 * mean "none" ((uid_t)-1, 65535 for 16-bit interfaces), a range that
 * includes them, or LAST < FIRST.  BC_USAGE errors naming the problem. */
int sandbox_id_range_parse(const char *s, struct sandbox_id_range *ret, struct bc_error *err);

/* 0 when no account or group of etc_dir's passwd and group files, and no
 * subordinate range of its subuid and subgid files (missing files count
 * as empty), lies in r; else BC_USAGE naming the first entry found. */
int sandbox_id_range_check_host(const struct sandbox_id_range *r, const char *etc_dir,
                                struct bc_error *err);

/* Takes a free id of r: creates lock_dir (0700) if missing, then tries
 * ids from a random one onwards, each with a non-blocking flock() on
 * lock_dir/ID.  *ret_fd holds the lock (O_CLOEXEC): keep it open as long
 * as the id is in use.  -EAGAIN (BC_SANDBOX_SETUP) when all are held. */
int sandbox_id_acquire(const char *lock_dir, const struct sandbox_id_range *r, uint32_t *ret_id,
                       int *ret_fd, struct bc_error *err);
/* Gives the id back: closes fd (fd < 0: nothing).  Its file stays, for
 * the next holder: never remove one while sandboxes run. */
void sandbox_id_release(int fd);

/* sandbox_id_range_check_host, skipped when a previous check of r passed
 * (a stamp in lock_dir) and no file of etc_dir changed since: a few
 * stat() calls per sandbox instead of reading the account files. */
int sandbox_id_range_check_host_cached(const struct sandbox_id_range *r, const char *etc_dir,
                                       const char *lock_dir, struct bc_error *err);

/* For the worker: the range its helpers are to use (parsed and checked
 * against /etc as above; NULL or "" keeps the default), passed to every
 * boxcar-sandbox it starts as --uid-range.  Call once at startup. */
int sandbox_id_range_set(const char *spec, struct bc_error *err);
/* The range set (or the default), as its "FIRST-LAST" text. */
const char *sandbox_id_range_get(void);

#endif
