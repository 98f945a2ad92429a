/* SW_CODE: the kept interpreters, one per language, started at a
 * session's first code job of that language (with its env and cwd) and
 * kept for the next ones, so what one job defines or imports is there for
 * the next.  Each runs a wrapper (wrappers.h) that takes requests on a
 * pipe and answers on another; its stdout and stderr are relayed as the
 * current job's output (dropped between jobs).  An interpreter that dies
 * during a job ends it (SW_CODE_CRASHED); the next job gets a fresh one. */
#ifndef BC_AGENT_CODE_H
#define BC_AGENT_CODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/relay.h"
#include "agent/spawn.h"
#include "common/dynbuf.h"

enum code_lang { CODE_PYTHON, CODE_NODE, CODE_LANGS };

struct interp {
        pid_t pid;                  /* 0: none running */
        struct spawn_report report; /* why it did not exec, if it did not */
        int req_fd;                 /* the wrapper's fd 3: requests */
        struct dynbuf req;
        size_t req_sent;
        int res_fd; /* the wrapper's fd 4: answers */
        struct dynbuf res;
        struct relay out[2]; /* stdout, stderr */
        uint32_t seq;        /* the code job it runs; 0: idle */
        bool killed;         /* by SW_KILL */
        bool garbled;        /* it answered something that is no answer */
        bool reaped;         /* being forgotten: its pid may be anyone's now */
};

struct agent;

void code_init(struct agent *a);
/* Runs the code of a SW_CODE payload (SA_CODE_DONE at once when it
 * cannot: a malformed request, an unknown language, a busy or missing
 * interpreter). */
void code_start(struct agent *a, uint32_t seq, const char *payload, size_t len);
/* SIGKILLs the interpreter running job seq: false when none does. */
bool code_kill(struct agent *a, uint32_t seq);
/* Writes what in's request pipe takes (POLLOUT). */
void code_write_request(struct interp *in);
/* Reads in's answer pipe (POLLIN); a whole answer ends the job. */
void code_read_answer(struct agent *a, struct interp *in);
/* pid was reaped: true if it was an interpreter (its job, if any, ends
 * CRASHED or NO_INTERP). */
bool code_reaped(struct agent *a, pid_t pid, int wstatus);
/* The worker hung up: every interpreter's group is killed. */
void code_kill_all(struct agent *a);
void code_done(struct agent *a);

#endif
