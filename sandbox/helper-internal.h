/* Internals shared by the boxcar-sandbox helper's steps: its parsed
 * options, the setup steps and their exit codes, and the messages the
 * sandboxed side sends back to the supervising side. */
#ifndef BC_SANDBOX_HELPER_INTERNAL_H
#define BC_SANDBOX_HELPER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/netallow.h"
#include "sandbox/sandbox.h"

/* Exit codes of the helper itself.  0..255 otherwise are the command's
 * (128+N when signal N killed it, so 137 after a timeout, OOM kill or
 * cancel); these collide with what a command may return on purpose, so
 * the status object ("setup_error", "exec_error") is the authority. */
enum {
        SBX_EXIT_USAGE = 120,     /* bad options */
        SBX_EXIT_CGROUP = 121,    /* cgroup / limits setup failed */
        SBX_EXIT_NAMESPACE = 122, /* namespaces, mounts, pivot_root failed */
        SBX_EXIT_PRIVS = 123,     /* dropping privileges, rlimits, seccomp failed */
        SBX_EXIT_WORKSPACE = 124, /* the workspace (or scratch) cannot be used as asked */
        SBX_EXIT_INTERNAL = 125,  /* anything else in the helper */
        SBX_EXIT_CANNOT_EXEC = 126,
        SBX_EXIT_NOT_FOUND = 127,
};


enum sbx_step {
        SBX_STEP_OPTIONS,
        SBX_STEP_CGROUP,
        SBX_STEP_CLONE,
        SBX_STEP_USERNS,
        SBX_STEP_MOUNT,
        SBX_STEP_PROC,
        SBX_STEP_DEV,
        SBX_STEP_WORKSPACE,
        SBX_STEP_NETWORK,
        SBX_STEP_PIVOT_ROOT,
        SBX_STEP_PRIVILEGES,
        SBX_STEP_RLIMIT,
        SBX_STEP_SECCOMP,
        SBX_STEP_EXEC,
        SBX_STEP_INTERNAL,
        _SBX_STEP_MAX,
};

const char *sbx_step_name(enum sbx_step s);
int sbx_step_exit_code(enum sbx_step s);

/* Default identity of the job inside the sandbox: nobody/nogroup. */
#define SBX_DEFAULT_UID SANDBOX_JOB_UID
#define SBX_DEFAULT_GID SANDBOX_JOB_GID

struct helper_config {
        const char *workspace;         /* NULL: an empty, discarded /workspace */
        const char *scratch;           /* NULL: /tmp and /dev/shm on a tmpfs */
        struct sandbox_bind *ro_binds; /* strings point into argv */
        size_t n_ro_binds;
        char **env; /* NULL-terminated, strings into argv */
        size_t n_env;
        char **argv;                 /* into the helper's argv */
        double timeout_s;            /* 0: none */
        uint64_t memory_mb, disk_mb; /* 0: none */
        uint32_t pids;               /* 0: none */
        double cpus;                 /* 0: none */
        enum sandbox_network network;
        struct netallow_rule *net_rules; /* --network-allow[-private] (owned) */
        size_t n_net_rules;
        bool net_private;          /* --network-private */
        const char *cgroup_parent; /* v2: --cgroup-parent; NULL: own cgroup */
        const char *image;         /* --image: the root's source; NULL: the host's */
        int status_fd;             /* -1: none */
        const char *hostname;
        uid_t uid;
        gid_t gid;
        /* --uid-range (or BOXCAR_UID_RANGE, else the default): where a
         * root helper takes the job's host ids from (sandbox.h, Host identities). */
        struct sandbox_id_range id_range;
        const char *id_range_text;
        /* The job's ids on the host.  Root: the ones this helper holds
         * (main.c), which uid/gid map to in the job's own user namespace
         * (own); unprivileged: the helper's own. */
        struct sbx_host_ids {
                uid_t uid;
                gid_t gid;
                bool own;
        } host;
        bool help;
        /* --warm: make the sandbox, then wait on control_fd for its job
         * (see warm.c); no COMMAND. */
        bool warm;
        int control_fd;
};

/* Parses the helper's command line.  Strings in *ret point into argv; the
 * arrays are owned by *ret (helper_config_done).  BC_USAGE errors. */
int helper_config_parse(int argc, char **argv, struct helper_config *ret, struct bc_error *err);
void helper_config_done(struct helper_config *c);
/* A job's options as the worker sends them to a warm sandbox: argv
 * strings, each NUL-terminated, back to back (argv[0] first).  The config
 * points into blob; *ret_argv (free it) holds the pointers.  A job may not
 * carry the sandbox's own options (--warm, --control-fd, --status-fd). */
int helper_config_parse_blob(char *blob, size_t len, char ***ret_argv, struct helper_config *ret,
                             struct bc_error *err);
/* Parses and frees options shaped like a worker's job, for a warm
 * sandbox's job process to run the parser once before its job (child.c):
 * false if they no longer parse. */
bool helper_config_warm_up(void);
/* The same, read from fd (a memfd of at most SBX_JOB_OPTIONS_MAX bytes);
 * *ret_blob (free it after the config) holds the strings. */
int helper_config_read_fd(int fd, char **ret_blob, char ***ret_argv, struct helper_config *ret,
                          struct bc_error *err);
/* The --help text (static). */
const char *helper_usage(void);

/* Strict number parsing shared by options and argv building. */
int sbx_parse_u64(const char *s, uint64_t max, uint64_t *ret);
int sbx_parse_double(const char *s, double min, double max, double *ret);
/* Checks a bind destination: absolute, normalised, no "..", not "/",
 * not inside /proc, /dev, /sys or /workspace. 0 or -EINVAL. */
int sbx_check_dest(const char *dest);
/* Checks a --cgroup-parent: absolute, normalised, shorter than 1 KiB.
 * Whether it lies in the cgroup v2 mount is checked when it is used. */
int sbx_check_cgroup_parent(const char *dir);
/* Checks an --image directory: the same shape (absolute, normalised,
 * shorter than 1 KiB); whether it is a directory is checked when used. */
int sbx_check_image(const char *dir);
bool sbx_env_entry_valid(const char *kv);

/* Status JSON, produced by the helper (sandbox_status_parse reads it). */
char *sbx_status_to_json(const struct sandbox_status *s);
/* Writes it to fd as one line (nothing when fd < 0 or on error). */
void sbx_status_write(int fd, const struct sandbox_status *st);
/* The end of a run as the caller sees it: a setup or exec failure as one
 * line on err_fd, then the status on status_fd, which is then closed.  The
 * job's processes and mounts are all gone by then; what follows (removing
 * the cgroup, freeing the other namespaces) is the helper's own teardown,
 * which the worker does not wait for: it takes the status's EOF as the
 * job's end.  A cold supervisor as root removes the cgroup before, while
 * the mount namespace is let go (sbx_supervise). */
void sbx_report(int status_fd, int err_fd, const struct sandbox_status *st);

/* Messages over the SOCK_SEQPACKET pair between the supervisor (outside)
 * and the sandbox's init/job (inside).  Fixed size: one datagram each. */
enum sbx_msg_type {
        SBX_MSG_GO = 1,      /* supervisor -> child: continue */
        SBX_MSG_READY,       /* child -> supervisor: mounts done (+ fd) */
        SBX_MSG_SETUP_ERROR, /* child -> supervisor, then _exit */
        SBX_MSG_EXEC_ERROR,  /* job -> supervisor, then _exit(126/127) */
        SBX_MSG_JOB_STATUS,  /* init -> supervisor: the job's wait status */
        SBX_MSG_WARM,        /* warm supervisor -> worker: ready for a job */
        SBX_MSG_JOB,         /* worker -> warm supervisor -> child: the job (+ fds) */
        SBX_MSG_EGRESS,      /* child -> supervisor: the egress sockets (+ fds) */
        SBX_MSG_START,       /* warm supervisor -> job process: exec the job */
};

/* The largest job options blob a warm sandbox takes (argv + env). */
#define SBX_JOB_OPTIONS_MAX (16 << 20)

/* Most fds one message carries (see ipc.c). */
#define SBX_MSG_FDS_MAX 80

struct sbx_msg {
        uint32_t type;
        int32_t step;
        int32_t errnum;
        int32_t wstatus;
        uint64_t cpu_us, max_rss_kb;
        char path[512];
        char message[256];
};

/* Sends one message (with fd attached when fd >= 0). */
int sbx_msg_send(int sock, const struct sbx_msg *m, int fd);
/* The same with up to SBX_MSG_FDS_MAX fds. */
int sbx_msg_send_fds(int sock, const struct sbx_msg *m, const int *fds, size_t n);
/* Receives one message and its fds (more than max: -EBADMSG, all closed). */
int sbx_msg_recv_fds(int sock, struct sbx_msg *ret, int *fds, size_t max, size_t *ret_n);
/* Receives one message; *ret_fd gets an attached fd or -1.  Returns 1 on
 * a message, 0 on EOF, negative errno on error. */
int sbx_msg_recv(int sock, struct sbx_msg *ret, int *ret_fd);
/* Fills a SETUP_ERROR / EXEC_ERROR message. */
void sbx_msg_error(struct sbx_msg *m, enum sbx_msg_type type, enum sbx_step step, int errnum,
                   const char *path, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
