#include "agent/run.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/spawn.h"
#include "common/cleanup.h"

/* One write to a command's stdin: what a pipe takes at once. */
#define RUN_STDIN_CHUNK 65536u

static void run_free(struct run *r)
{
        if (!r)
                return;
        if (r->stdin_fd >= 0)
                close(r->stdin_fd);
        for (int i = 0; i < 2; i++)
                if (r->out[i].fd >= 0)
                        close(r->out[i].fd);
        free(r->stdin_data);
        free(r->argv0);
        free(r->cwd);
        free(r);
}

/* A command that never started: its SA_EXIT, as if it had exited 126
 * after a failed exec, with why on its stderr. */
static void start_failed(struct agent *a, uint32_t seq, int err, const char *what)
{
        conn_send_failure(&a->conn, seq, what, NULL, err);
        struct sw_exit x = { .wstatus = 126 << 8, .exec_errno = err };
        conn_send_exit(&a->conn, seq, &x);
}

static struct run *run_new(uint32_t seq, const struct sw_run *req)
{
        struct run *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        *r = (struct run){ .seq = seq, .stdin_fd = -1, .out = { { -1, 1 }, { -1, 2 } } };
        r->argv0 = strdup(req->argv[0]);
        r->cwd = strdup(req->cwd);
        r->stdin_len = req->stdin_len;
        r->stdin_data = malloc(req->stdin_len ? req->stdin_len : 1);
        if (!r->argv0 || !r->cwd || !r->stdin_data) {
                run_free(r);
                return NULL;
        }
        if (req->stdin_len)
                memcpy(r->stdin_data, req->stdin_data, req->stdin_len);
        return r;
}

/* The three pipes and the vfork.  The child's ends are closed here on
 * every path: only the child holds them, so EOF means what it should. */
static int run_spawn(struct run *r, const struct sw_run *req)
{
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
        int e = spawn_pipe(in, 1);
        if (e == 0)
                e = spawn_pipe(out, 0);
        if (e == 0)
                e = spawn_pipe(err, 0);
        if (e == 0) {
                struct spawn_plan plan = { .argv = req->argv,
                                           .env = req->env,
                                           .cwd = req->cwd,
                                           .fds = { in[0], out[1], err[1] },
                                           .n_fds = 3 };
                e = spawn_start(&plan, &r->pid, &r->report);
        }
        int child_ends[] = { in[0], out[1], err[1] };
        for (size_t i = 0; i < ELEMENTSOF(child_ends); i++)
                if (child_ends[i] >= 0)
                        close(child_ends[i]);
        r->stdin_fd = in[1];
        r->out[0].fd = out[0];
        r->out[1].fd = err[0];
        return e;
}

void run_start(struct agent *a, uint32_t seq, const char *payload, size_t len)
{
        struct sw_run req;
        if (sw_decode_run(payload, len, &req) < 0) {
                start_failed(a, seq, EBADMSG, "boxcar-session-agent: the run request");
                return;
        }
        struct run *r = run_new(seq, &req);
        int e = r ? run_spawn(r, &req) : -ENOMEM;
        free(req.argv);
        free(req.env);
        if (e < 0) {
                run_free(r);
                start_failed(a, seq, -e, "boxcar-session-agent: starting the command");
                return;
        }
        conn_send_started(&a->conn, seq, r->pid);
        if (r->stdin_len == 0) {
                close(r->stdin_fd);
                r->stdin_fd = -1;
        }
        r->next = a->runs;
        a->runs = r;
}

bool run_kill(struct agent *a, uint32_t seq)
{
        for (struct run *r = a->runs; r; r = r->next) {
                if (r->seq != seq)
                        continue;
                /* A child whose setsid() failed has no group of its
                 * own: then the process itself. */
                if (kill(-r->pid, SIGKILL) < 0)
                        kill(r->pid, SIGKILL);
                return true;
        }
        return false;
}

void run_feed_stdin(struct run *r)
{
        while (r->stdin_fd >= 0 && r->stdin_off < r->stdin_len) {
                size_t n = r->stdin_len - r->stdin_off;
                ssize_t w = write(r->stdin_fd, r->stdin_data + r->stdin_off,
                                  n < RUN_STDIN_CHUNK ? n : RUN_STDIN_CHUNK);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN)
                        return;
                if (w < 0)
                        break; /* EPIPE: the command closed its stdin */
                r->stdin_off += (size_t)w;
        }
        if (r->stdin_fd >= 0)
                close(r->stdin_fd);
        r->stdin_fd = -1;
}

static void send_exit(struct agent *a, struct run *r, int wstatus, const struct rusage *ru)
{
        struct sw_exit x = { .wstatus = wstatus };
        const struct spawn_report *rep = &r->report;
        if (rep->step != SPAWN_STEP_NONE) {
                bool chdir_failed = rep->step == SPAWN_STEP_CHDIR;
                conn_send_failure(&a->conn, r->seq, chdir_failed ? "chdir" : "exec",
                                  chdir_failed ? r->cwd : r->argv0, rep->err);
                x.exec_errno = rep->err;
        }
        x.cpu_us = (uint64_t)ru->ru_utime.tv_sec * 1000000 + (uint64_t)ru->ru_utime.tv_usec +
                   (uint64_t)ru->ru_stime.tv_sec * 1000000 + (uint64_t)ru->ru_stime.tv_usec;
        x.max_rss_kb = (uint64_t)ru->ru_maxrss;
        conn_send_exit(&a->conn, r->seq, &x);
}

bool run_reaped(struct agent *a, pid_t pid, int wstatus, const struct rusage *ru)
{
        struct run **p = &a->runs;
        while (*p && (*p)->pid != pid)
                p = &(*p)->next;
        struct run *r = *p;
        if (!r)
                return false;
        *p = r->next;
        /* What the command wrote before it exited is in its pipes now:
         * it goes out before SA_EXIT.  Whatever writes later is what it
         * left running, and is dropped. */
        for (int i = 0; i < 2; i++)
                relay_read(&a->conn, r->seq, &r->out[i], true);
        send_exit(a, r, wstatus, ru);
        for (int i = 0; i < 2; i++)
                leftovers_add(&a->leftovers, &r->out[i]);
        groups_add_ended(&a->groups, r->pid);
        run_free(r);
        return true;
}

void run_kill_all(struct agent *a)
{
        while (a->runs) {
                struct run *r = a->runs;
                a->runs = r->next;
                if (kill(-r->pid, SIGKILL) < 0)
                        kill(r->pid, SIGKILL);
                run_free(r);
        }
}
