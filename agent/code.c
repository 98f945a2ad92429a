#include "agent/code.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/spawn.h"
#include "agent/wrappers.h"
#include "common/cleanup.h"

/* A request: a short head, the source and the arguments (a payload's
 * worth at most). */
#define CODE_REQUEST_MAX (SW_PAYLOAD_MAX + 64u)
/* An answer: the wrappers cap the value at 4 MiB and the error at 64 KiB;
 * more than this is no answer of theirs. */
#define CODE_ANSWER_MAX (5u << 20)
/* The answer's head ("<status> <value bytes> <error bytes>\n"). */
#define CODE_HEAD_MAX 64

struct lang {
        const char *name; /* as SW_CODE names it */
        const char *prog; /* what is looked up in PATH */
        const char *flag1, *flag2;
        const char *wrapper;
};

/* -u: unbuffered stdout/stderr, so output and the answer keep their order
 * even when the code never flushes. */
static const struct lang langs[CODE_LANGS] = {
        [CODE_PYTHON] = { "python", "python3", "-u", "-c", agent_python_wrapper },
        [CODE_NODE] = { "node", "node", "-e", NULL, agent_node_wrapper },
};

static void interp_init(struct interp *in)
{
        *in = (struct interp){ .req_fd = -1, .res_fd = -1, .out = { { -1, 1 }, { -1, 2 } } };
        dynbuf_init(&in->req, CODE_REQUEST_MAX);
        dynbuf_init(&in->res, CODE_ANSWER_MAX);
}

static void close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

void code_init(struct agent *a)
{
        for (int i = 0; i < CODE_LANGS; i++)
                interp_init(&a->interps[i]);
}

/* A job's end that needs no interpreter's word. */
static void answer_now(struct agent *a, uint32_t seq, uint8_t status, int wstatus, const char *fmt,
                       ...) __attribute__((format(printf, 5, 6)));
static void answer_now(struct agent *a, uint32_t seq, uint8_t status, int wstatus, const char *fmt,
                       ...)
{
        char error[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error, sizeof(error), fmt, ap);
        va_end(ap);
        struct sw_code_done d = { .status = status,
                                  .return_value = "null",
                                  .error = error,
                                  .wstatus = wstatus };
        conn_send_code_done(&a->conn, seq, &d);
}

/* The wrapper's fds: 0 an empty pipe (EOF at once: code that reads stdin
 * gets nothing rather than the agent's), 1 and 2 the output pipes, 3 the
 * requests, 4 the answers. */
static int interp_spawn(struct interp *in, const struct lang *l, char **env, const char *cwd)
{
        int p[5][2];
        for (int i = 0; i < 5; i++)
                p[i][0] = p[i][1] = -1;
        /* Which end is the agent's, per child fd. */
        static const int agent_end[5] = { 1, 0, 0, 1, 0 };
        int r = 0;
        for (int i = 0; i < 5 && r == 0; i++)
                r = spawn_pipe(p[i], agent_end[i]);
        close_fd(&p[0][1]);
        if (r == 0) {
                char *argv[] = { (char *)l->prog, (char *)l->flag1, (char *)l->flag2,
                                 (char *)l->wrapper, NULL };
                if (!l->flag2) {
                        argv[2] = (char *)l->wrapper;
                        argv[3] = NULL;
                }
                struct spawn_plan plan = { .argv = argv,
                                           .env = env,
                                           .cwd = cwd,
                                           .fds = { p[0][0], p[1][1], p[2][1], p[3][0], p[4][1] },
                                           .n_fds = 5 };
                r = spawn_start(&plan, &in->pid, &in->report);
        }
        for (int i = 0; i < 5; i++)
                close_fd(&p[i][1 - agent_end[i]]);
        in->req_fd = p[3][1];
        in->res_fd = p[4][0];
        in->out[0].fd = p[1][0];
        in->out[1].fd = p[2][0];
        if (r < 0) {
                close_fd(&in->req_fd);
                close_fd(&in->res_fd);
                close_fd(&in->out[0].fd);
                close_fd(&in->out[1].fd);
                in->pid = 0;
        }
        return r;
}

void code_start(struct agent *a, uint32_t seq, const char *payload, size_t len)
{
        struct sw_code c;
        if (sw_decode_code(payload, len, &c) < 0) {
                answer_now(a, seq, SW_CODE_ERROR, 0,
                           "boxcar-session-agent: a malformed code request");
                return;
        }
        _cleanup_free_ char **env = c.env;
        int li = 0;
        while (li < CODE_LANGS && strcmp(langs[li].name, c.language) != 0)
                li++;
        if (li == CODE_LANGS) {
                answer_now(a, seq, SW_CODE_NO_INTERP, 0,
                           "language \"%s\": the session keeps python and node interpreters",
                           c.language);
                return;
        }
        const struct lang *l = &langs[li];
        struct interp *in = &a->interps[li];
        if (in->seq) {
                answer_now(a, seq, SW_CODE_ERROR, 0, "the %s interpreter is still running job %u",
                           l->name, in->seq);
                return;
        }
        int r = in->pid ? 0 : interp_spawn(in, l, env, c.cwd);
        if (r < 0) {
                answer_now(a, seq, SW_CODE_NO_INTERP, 0, "%s: %s", l->prog, strerror(-r));
                return;
        }
        dynbuf_reset(&in->req);
        in->req_sent = 0;
        r = dynbuf_printf(&in->req, "%zu %zu\n", strlen(c.source), strlen(c.arguments));
        if (r == 0)
                r = dynbuf_addstr(&in->req, c.source);
        if (r == 0)
                r = dynbuf_addstr(&in->req, c.arguments);
        if (r < 0) {
                answer_now(a, seq, SW_CODE_ERROR, 0, "the code request: %s", strerror(-r));
                return;
        }
        dynbuf_reset(&in->res);
        in->seq = seq;
        in->killed = in->garbled = false;
}

bool code_kill(struct agent *a, uint32_t seq)
{
        for (int i = 0; i < CODE_LANGS; i++) {
                struct interp *in = &a->interps[i];
                if (!in->pid || in->seq != seq)
                        continue;
                in->killed = true;
                if (kill(-in->pid, SIGKILL) < 0)
                        kill(in->pid, SIGKILL);
                return true;
        }
        return false;
}

void code_write_request(struct interp *in)
{
        while (in->req_fd >= 0 && in->req_sent < in->req.len) {
                ssize_t n = write(in->req_fd, in->req.data + in->req_sent,
                                  in->req.len - in->req_sent);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0) {
                        /* EPIPE: it is gone; its reaping says how. */
                        close_fd(&in->req_fd);
                        return;
                }
                in->req_sent += (size_t)n;
        }
}

/* The answer's head: 1 with its numbers once whole, 0 while not yet,
 * -EBADMSG when it is no head of an answer. */
static int answer_head(const struct dynbuf *res, unsigned *status, size_t *vlen, size_t *elen,
                       size_t *head)
{
        size_t scan = res->len < CODE_HEAD_MAX ? res->len : CODE_HEAD_MAX;
        const char *nl = scan ? memchr(res->data, '\n', scan) : NULL;
        if (!nl)
                return res->len >= CODE_HEAD_MAX ? -EBADMSG : 0;
        char text[CODE_HEAD_MAX + 1];
        size_t n = (size_t)(nl - res->data);
        memcpy(text, res->data, n);
        text[n] = '\0';
        char tail;
        if (sscanf(text, "%u %zu %zu%c", status, vlen, elen, &tail) != 3 || *status > 1 ||
            *vlen > CODE_ANSWER_MAX || *elen > CODE_ANSWER_MAX)
                return -EBADMSG;
        *head = n + 1;
        return 1;
}

/* The job's output is all in its pipes when the answer comes (the
 * wrappers flush before they answer): it goes out first. */
static void finish(struct agent *a, struct interp *in, const struct sw_code_done *d)
{
        for (int i = 0; i < 2; i++)
                relay_read(&a->conn, in->seq, &in->out[i], true);
        conn_send_code_done(&a->conn, in->seq, d);
        in->seq = 0;
        dynbuf_reset(&in->res);
}

static void garbled(struct interp *in)
{
        in->garbled = true;
        if (in->reaped)
                return;
        if (kill(-in->pid, SIGKILL) < 0)
                kill(in->pid, SIGKILL);
}

static void take_answer(struct agent *a, struct interp *in)
{
        unsigned status;
        size_t vlen, elen, head;
        int r = answer_head(&in->res, &status, &vlen, &elen, &head);
        if (r < 0 || (r == 1 && !in->seq)) {
                garbled(in);
                return;
        }
        if (r == 0 || in->res.len < head + vlen + elen)
                return;
        if (in->res.len > head + vlen + elen) {
                garbled(in); /* one answer per request, nothing after it */
                return;
        }
        _cleanup_free_ char *value = strndup(in->res.data + head, vlen);
        _cleanup_free_ char *error = strndup(in->res.data + head + vlen, elen);
        if (!value || !error) {
                garbled(in);
                return;
        }
        struct sw_code_done d = { .status = (uint8_t)status,
                                  .return_value = value,
                                  .error = error };
        finish(a, in, &d);
}

void code_read_answer(struct agent *a, struct interp *in)
{
        char buf[65536];
        while (in->res_fd >= 0 && !in->garbled) {
                ssize_t n = read(in->res_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        close_fd(&in->res_fd);
                        break;
                }
                if (dynbuf_add(&in->res, buf, (size_t)n) < 0) {
                        garbled(in);
                        return;
                }
        }
        if (in->res.len && !in->garbled)
                take_answer(a, in);
}

static void crashed(struct agent *a, struct interp *in, const struct lang *l, int wstatus)
{
        const struct spawn_report *rep = &in->report;
        if (rep->step != SPAWN_STEP_NONE) {
                if (rep->step == SPAWN_STEP_EXEC && rep->err == ENOENT)
                        answer_now(a, in->seq, SW_CODE_NO_INTERP, wstatus,
                                   "%s: not found in the session's PATH", l->prog);
                else
                        answer_now(a, in->seq, SW_CODE_NO_INTERP, wstatus, "%s %s: %s",
                                   rep->step == SPAWN_STEP_CHDIR ? "chdir for" : "exec", l->prog,
                                   strerror(rep->err));
        } else if (in->killed) {
                answer_now(a, in->seq, SW_CODE_CRASHED, wstatus, "killed");
        } else if (in->garbled) {
                answer_now(a, in->seq, SW_CODE_CRASHED, wstatus,
                           "the %s interpreter's wrapper answered out of turn (killed)", l->name);
        } else if (WIFSIGNALED(wstatus)) {
                answer_now(a, in->seq, SW_CODE_CRASHED, wstatus,
                           "the %s interpreter was killed by signal %d (%s)", l->name,
                           WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
        } else {
                answer_now(a, in->seq, SW_CODE_CRASHED, wstatus,
                           "the %s interpreter exited with status %d", l->name,
                           WEXITSTATUS(wstatus));
        }
}

/* Forgets a reaped interpreter: its pipes go to the leftovers (what it
 * left running may still write), the next job starts a fresh one. */
static void interp_forget(struct agent *a, struct interp *in)
{
        groups_add_ended(&a->groups, in->pid);
        close_fd(&in->req_fd);
        close_fd(&in->res_fd);
        for (int i = 0; i < 2; i++)
                leftovers_add(&a->leftovers, &in->out[i]);
        dynbuf_reset(&in->req);
        dynbuf_reset(&in->res);
        in->req_sent = 0;
        in->pid = 0;
        in->seq = 0;
        in->killed = in->garbled = in->reaped = false;
        in->report = (struct spawn_report){ .step = SPAWN_STEP_NONE };
}

bool code_reaped(struct agent *a, pid_t pid, int wstatus)
{
        for (int i = 0; i < CODE_LANGS; i++) {
                struct interp *in = &a->interps[i];
                if (in->pid != pid)
                        continue;
                in->reaped = true;
                /* An answer it wrote before it ended still counts. */
                code_read_answer(a, in);
                if (in->seq) {
                        for (int j = 0; j < 2; j++)
                                relay_read(&a->conn, in->seq, &in->out[j], true);
                        crashed(a, in, &langs[i], wstatus);
                }
                interp_forget(a, in);
                return true;
        }
        return false;
}

void code_kill_all(struct agent *a)
{
        for (int i = 0; i < CODE_LANGS; i++) {
                struct interp *in = &a->interps[i];
                if (in->pid && kill(-in->pid, SIGKILL) < 0)
                        kill(in->pid, SIGKILL);
        }
}

void code_done(struct agent *a)
{
        for (int i = 0; i < CODE_LANGS; i++) {
                struct interp *in = &a->interps[i];
                close_fd(&in->req_fd);
                close_fd(&in->res_fd);
                close_fd(&in->out[0].fd);
                close_fd(&in->out[1].fd);
                dynbuf_done(&in->req);
                dynbuf_done(&in->res);
        }
}
