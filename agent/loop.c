/* The agent's one loop: poll every fd it serves, then handle what is
 * ready in an order that keeps pointers valid (pipes first, then the
 * worker's frames, then the reaping that frees what the pipes belonged
 * to), and start over. */
#include "agent/agent.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/code.h"
#include "agent/files.h"
#include "agent/run.h"

enum watch_kind {
        WATCH_CONN,
        WATCH_SIGNALS,
        WATCH_RUN_STDIN,
        WATCH_RUN_OUTPUT,
        WATCH_LEFTOVER,
        WATCH_CODE_REQUEST,
        WATCH_CODE_ANSWER,
        WATCH_CODE_OUTPUT,
};

/* What a pollfd is for. */
struct watch {
        enum watch_kind kind;
        void *obj;
        int index; /* RUN_OUTPUT, CODE_OUTPUT: which pipe */
};

struct pollset {
        struct pollfd *fds;
        struct watch *w;
        size_t n, alloc;
};

static int watch(struct pollset *ps, int fd, short events, enum watch_kind kind, void *obj,
                 int index)
{
        if (fd < 0)
                return 0;
        if (ps->n == ps->alloc) {
                size_t n = ps->alloc ? ps->alloc * 2 : 32;
                struct pollfd *fds = realloc(ps->fds, n * sizeof(*fds));
                if (!fds)
                        return -ENOMEM;
                ps->fds = fds;
                struct watch *w = realloc(ps->w, n * sizeof(*w));
                if (!w)
                        return -ENOMEM;
                ps->w = w;
                ps->alloc = n;
        }
        ps->fds[ps->n] = (struct pollfd){ .fd = fd, .events = events };
        ps->w[ps->n] = (struct watch){ .kind = kind, .obj = obj, .index = index };
        ps->n++;
        return 0;
}

/* The connection and the signals first (handled last, see dispatch). */
static int build(struct agent *a, struct pollset *ps)
{
        ps->n = 0;
        bool reading = !conn_backlogged(&a->conn);
        int r = watch(ps, a->conn.fd, POLLIN | (conn_pending(&a->conn) ? POLLOUT : 0), WATCH_CONN,
                      NULL, 0);
        if (r == 0)
                r = watch(ps, a->sigfd, POLLIN, WATCH_SIGNALS, NULL, 0);
        for (struct run *x = a->runs; x && r == 0; x = x->next) {
                r = watch(ps, x->stdin_fd, POLLOUT, WATCH_RUN_STDIN, x, 0);
                for (int i = 0; i < 2 && r == 0 && reading; i++)
                        r = watch(ps, x->out[i].fd, POLLIN, WATCH_RUN_OUTPUT, x, i);
        }
        for (size_t i = 0; i < LEFTOVERS_MAX && r == 0; i++)
                r = watch(ps, a->leftovers.fd[i], POLLIN, WATCH_LEFTOVER, &a->leftovers.fd[i], 0);
        for (int l = 0; l < CODE_LANGS && r == 0; l++) {
                struct interp *in = &a->interps[l];
                if (in->req_sent < in->req.len)
                        r = watch(ps, in->req_fd, POLLOUT, WATCH_CODE_REQUEST, in, 0);
                if (r == 0)
                        r = watch(ps, in->res_fd, POLLIN, WATCH_CODE_ANSWER, in, 0);
                /* An idle interpreter's output is dropped, so never held. */
                for (int i = 0; i < 2 && r == 0 && (reading || !in->seq); i++)
                        r = watch(ps, in->out[i].fd, POLLIN, WATCH_CODE_OUTPUT, in, i);
        }
        return r;
}

static void on_frame(struct agent *a, const struct sw_header *h, const char *payload)
{
        switch (h->type) {
        case SW_RUN:
                run_start(a, h->seq, payload, h->len);
                break;
        case SW_KILL:
                if (!run_kill(a, h->seq))
                        code_kill(a, h->seq);
                break;
        case SW_FILES:
                files_start(a, h->seq, payload, h->len);
                break;
        case SW_CODE:
                code_start(a, h->seq, payload, h->len);
                break;
        default:
                /* A newer worker's request: it gets no answer, which it
                 * will take as this agent not knowing it. */
                fprintf(stderr, "boxcar-session-agent: frame type %u of job %u ignored\n", h->type,
                        h->seq);
                break;
        }
}

static void on_conn(struct agent *a, short revents)
{
        if (revents & POLLOUT)
                conn_flush(&a->conn);
        if (!(revents & (POLLIN | POLLHUP | POLLERR)))
                return;
        conn_read(&a->conn);
        for (;;) {
                struct sw_header h;
                const char *payload;
                int r = sw_stream_take(&a->conn.in, &h, &payload);
                if (r < 0) {
                        fprintf(stderr,
                                "boxcar-session-agent: a frame over %u bytes: hanging up\n",
                                SW_PAYLOAD_MAX);
                        a->conn.dead = true;
                }
                if (r <= 0)
                        return;
                on_frame(a, &h, payload);
        }
}

/* Reaps every child that has ended: a command's or an interpreter's. */
static void on_signals(struct agent *a)
{
        struct signalfd_siginfo si;
        while (read(a->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                ;
        for (;;) {
                int wstatus;
                struct rusage ru;
                pid_t pid = wait4(-1, &wstatus, WNOHANG, &ru);
                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid <= 0)
                        return;
                if (!run_reaped(a, pid, wstatus, &ru))
                        code_reaped(a, pid, wstatus);
        }
}

static void on_ready(struct agent *a, const struct watch *w)
{
        struct run *x = w->obj;
        struct interp *in = w->obj;
        switch (w->kind) {
        case WATCH_RUN_STDIN:
                run_feed_stdin(x);
                break;
        case WATCH_RUN_OUTPUT:
                relay_read(&a->conn, x->seq, &x->out[w->index], false);
                break;
        case WATCH_LEFTOVER:
                leftovers_read(w->obj);
                break;
        case WATCH_CODE_REQUEST:
                code_write_request(in);
                break;
        case WATCH_CODE_ANSWER:
                code_read_answer(a, in);
                break;
        case WATCH_CODE_OUTPUT:
                relay_read(&a->conn, in->seq, &in->out[w->index], false);
                break;
        case WATCH_CONN:
        case WATCH_SIGNALS:
                break;
        }
}

/* Pipes first: nothing they do frees another watch's object.  Then the
 * worker's frames (they start things, and stop them only by signal), then
 * the reaping, which frees commands whose fds were polled above.  A watch
 * whose fd an earlier handler closed is skipped. */
static void dispatch(struct agent *a, const struct pollset *ps)
{
        for (size_t i = 2; i < ps->n; i++) {
                if (!ps->fds[i].revents)
                        continue;
                const struct watch *w = &ps->w[i];
                const struct run *x = w->obj;
                const struct interp *in = w->obj;
                int now = w->kind == WATCH_RUN_STDIN      ? x->stdin_fd
                          : w->kind == WATCH_RUN_OUTPUT   ? x->out[w->index].fd
                          : w->kind == WATCH_LEFTOVER     ? *(const int *)w->obj
                          : w->kind == WATCH_CODE_REQUEST ? in->req_fd
                          : w->kind == WATCH_CODE_ANSWER  ? in->res_fd
                                                          : in->out[w->index].fd;
                if (now == ps->fds[i].fd)
                        on_ready(a, w);
        }
        if (ps->fds[0].revents)
                on_conn(a, ps->fds[0].revents);
        if (ps->fds[1].revents)
                on_signals(a);
}

void agent_loop(struct agent *a)
{
        struct pollset ps = { 0 };
        conn_flush(&a->conn);
        while (!a->conn.dead) {
                bool more_files = files_step(a);
                if (build(a, &ps) < 0) {
                        fprintf(stderr, "boxcar-session-agent: out of memory\n");
                        break;
                }
                int timeout = more_files && !conn_backlogged(&a->conn) ? 0 : -1;
                int n = poll(ps.fds, ps.n, timeout);
                if (n < 0 && errno != EINTR) {
                        perror("boxcar-session-agent: poll");
                        break;
                }
                if (n > 0)
                        dispatch(a, &ps);
                if (conn_pending(&a->conn))
                        conn_flush(&a->conn);
        }
        free(ps.fds);
        free(ps.w);
}
