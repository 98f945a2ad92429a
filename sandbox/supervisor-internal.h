/* A supervisor: the state of boxcar-sandbox's supervising side, and the
 * pieces the cold supervisor (supervise.c) and a warm one (warm.c) both
 * run on it (supervisor.c).  Starting the sandbox and checking the job's
 * directories are supervise-start.c's and supervise-dirs.c's, above
 * this. */
#ifndef BC_SANDBOX_SUPERVISOR_INTERNAL_H
#define BC_SANDBOX_SUPERVISOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sandbox/cgroup-internal.h"
#include "sandbox/helper-internal.h"
#include "sandbox/seccomp-internal.h"

struct supervisor {
        const struct helper_config *c;
        struct sbx_cgroup cg;
        struct sbx_seccomp_prog seccomp;
        int cg_fds[4];
        size_t n_cg_fds;
        int sock, sigfd, timerfd, idmap_fd;
        /* Warm: the job's process's socket (our end) and the sandbox's
         * mount and network namespaces, opened at the clone, closed at the
         * handoff.  Cold (netns_later): net_ns is the namespace made for
         * the child, until GO hands it over. */
        int job_sock, mnt_ns, net_ns;
        /* Root: the job's own user namespace (its ids -> the host ids the
         * helper holds), made by sbx_sup_make_job_userns; init enters it
         * as it locks down.  -1: none (unprivileged, or handed over). */
        int job_userns;
        pid_t child;
        pid_t idmap_child;  /* the idmap namespace's placeholder: killed, not
                                   * yet reaped (0: none) */
        pid_t userns_child; /* the same for the job's user namespace */
        bool ready, reaped, sock_eof, job_reported, exec_failed;
        bool timed_out, cancelled;
        bool warm_built;   /* a warm child reported its base root done */
        bool netns_later;  /* cold, root, no network: we make the network
                                   * namespace while the child builds its root */
        bool idmap_later;  /* cold, root: the same for the idmap namespace */
        uid_t idmap_owner; /* whose ids it maps, when made later */
        gid_t idmap_group;
        struct sbx_msg failure; /* SETUP_ERROR or EXEC_ERROR received */
        bool failed;
        int job_wstatus;
        int child_wstatus; /* init's, once reaped */
        uint64_t job_cpu_us, job_rss_kb;
        uint64_t cpu_base_us;      /* the cgroup's CPU time before the job (warm setup) */
        struct timespec start;     /* the job's start (GO) */
        struct timespec got_job;   /* when the supervisor had the job */
        struct sbx_egress *egress; /* --network allow: the proxy, once set up */
};

#define SBX_SUPERVISOR_INIT(cfg)                                                              \
        {                                                                                     \
                .c = (cfg), .sock = -1, .sigfd = -1, .timerfd = -1, .idmap_fd = -1,           \
                .job_sock = -1, .mnt_ns = -1, .net_ns = -1, .job_userns = -1,                 \
                .cg = { .memory_dir = -1, .pids_dir = -1, .cpu_dir = -1, .cpuacct_dir = -1 }, \
        }

/* The pieces both run. */
void sbx_sup_fail(struct supervisor *s, enum sbx_step step, int e, const char *path,
                  const char *msg);
int sbx_sup_arm_timer(struct supervisor *s);
void sbx_sup_kill(struct supervisor *s);
int sbx_sup_prepare_signals(struct supervisor *s);
/* Blocks the signals sbx_sup_prepare_signals reads, from the helper's
 * start: one that comes before its signalfd waits for it. */
void sbx_sup_block_signals(void);
/* /proc/PID/ns/NS, opened read-only (-1 and errno on failure); its path
 * is left in path for an error message. */
int sbx_sup_open_ns_of(pid_t pid, const char *ns, char path[static 64]);
/* Writes data to /proc/PID/FILE (an id map, setgroups): 0 or -errno. */
int sbx_sup_write_map(pid_t pid, const char *file, const char *data);
/* Reaps the idmap namespace's placeholder (sbx_sup_make_idmap) and the
 * job user namespace's once they are gone: flags 0 waits for them,
 * WNOHANG does not. */
void sbx_sup_reap_idmap_child(struct supervisor *s, int flags);
/* The body of a user namespace's placeholder, a clone(CLONE_VM) child of
 * the supervisor whose pid is the argument: it pauses until killed, and
 * dies with the supervisor. */
int sbx_sup_placeholder_main(void *supervisor_pid);
/* Reaps *pid (a placeholder, 0: none) as above. */
void sbx_sup_reap_placeholder(pid_t *pid, int flags);
void sbx_sup_on_message(struct supervisor *s);
void sbx_sup_on_signal(struct supervisor *s);
void sbx_sup_on_timer(struct supervisor *s);
/* Until the sandbox's init is reaped. */
void sbx_sup_loop(struct supervisor *s);
int sbx_sup_finish(struct supervisor *s, struct sandbox_status *st);
/* The job's wall time into ret, when it started. */
void sbx_sup_set_wall(const struct supervisor *s, struct sandbox_status *ret);
/* Frees what s holds (cgroup removed, fds closed). */
void sbx_sup_done(struct supervisor *s);

#endif
