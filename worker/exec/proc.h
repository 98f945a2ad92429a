/* Runs one child process for a job: stdout/stderr drained while it runs
 * into capped tails (a job writing gigabytes never blocks or bloats the
 * worker), a wall-clock timeout and a cancel fd that kill its whole
 * process group, and its exit status and resource usage.  The child is
 * either the job's command (--sandbox none) or boxcar-sandbox. */
#ifndef BC_WORKER_EXEC_PROC_H
#define BC_WORKER_EXEC_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/dynbuf.h"
#include "common/error.h"
#include "common/tailbuf.h"

struct proc_request {
        char *const *argv;   /* argv[0] is looked up in envp's PATH */
        char *const *envp;   /* the child's whole environment */
        const char *cwd;     /* or NULL */
        double timeout_s;    /* 0: none */
        size_t output_cap;   /* bytes of tail kept per stream */
        int cancel_fd;       /* readable: stop the child now; -1: none */
        int kill_signal;     /* sent on timeout/cancel (SIGKILL, or SIGTERM for a
                                   * helper that reports before dying) */
        double kill_grace_s; /* then SIGKILL after this long */
        int pass_fd;         /* given to the child as fd 3 (a status pipe); -1: none */
        /* The read end of a pipe whose write end only the child holds (the
         * caller's copy, child_end, is closed by proc_run once the child is
         * started, whatever happens): the child writes its report there and
         * closes it before its own teardown.  Once some report came and
         * stdout/stderr are at EOF, proc_run returns without waiting for the
         * child's exit; proc_reaper reaps it. */
        struct dynbuf *report;    /* what came on report_fd; NULL: no report, wait for the exit */
        int report_fd, child_end; /* used only with report */
        /* Called once the child is collected (here or by proc_reaper, on
         * its thread, maybe after proc_run's caller is gone: reaped_ctx
         * must live until proc_reaper_drain), with its wait status; NULL:
         * nothing to do then. */
        void (*on_reaped)(void *reaped_ctx, pid_t pid, int wstatus);
        void *reaped_ctx;
        /* Instead of spawning argv: starts the process some other way (a
         * warm sandbox's handoff) with out_w/err_w as its stdout/stderr;
         * *ret_pid must be our child and lead its process group.  A
         * negative return (err set) ends proc_run with it: nothing ran. */
        int (*start)(void *start_ctx, int out_w, int err_w, pid_t *ret_pid, struct bc_error *err);
        void *start_ctx;
        bool guard; /* run under a guard that kills the process group when
                                   * the worker dies (a child that does not do it itself) */
        /* Called with each chunk of output as it arrives (stream 1 or 2), and
         * with stream 0 and no data right after the spawn and then at least
         * every 200 ms (a timer tick). */
        void (*on_output)(void *ctx, int stream, const char *data, size_t len);
        void *ctx;
};

struct proc_outcome {
        bool spawned;      /* false: the command could not be started */
        bool reaped_later; /* ended by its report: no exit status or usage here */
        int exit_code;     /* 0-255, or 128+signal */
        int signal;        /* 0, or the signal that ended it */
        bool timed_out;
        bool cancelled;
        uint64_t wall_ms, cpu_ms, max_rss_kb;
        struct timespec started_at; /* CLOCK_REALTIME at spawn */
        struct tailbuf out, err;    /* owned; freed by proc_outcome_done */
};

/* Runs req to completion.  Returns 0 when the child ran (whatever its exit
 * status) or could not be found/executed (spawned=false, exit_code 127/126
 * and a message in the err tail, as a shell would); a negative errno with
 * err set when the worker itself failed (pipes, fork).  *ret is always
 * initialised; release it with proc_outcome_done. */
int proc_run(const struct proc_request *req, struct proc_outcome *ret, struct bc_error *err);
void proc_outcome_done(struct proc_outcome *o);

#endif
