/* SW_RUN: a command of the session, from its start (SA_STARTED) to its
 * main process's exit (SA_EXIT).  Its stdin is fed from the request, its
 * output relayed; what it leaves running keeps the pipes, which go to the
 * leftovers when it exits (relay.h). */
#ifndef BC_AGENT_RUN_H
#define BC_AGENT_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "agent/spawn.h"

struct run {
        struct run *next;
        uint32_t seq;
        pid_t pid;                  /* also its process group's and session's id (setsid) */
        struct spawn_report report; /* why it did not exec, if it did not */
        int stdin_fd;               /* -1 once every byte is written or the reader left */
        char *stdin_data;           /* the request's stdin, a copy */
        size_t stdin_len, stdin_off;
        struct relay out[2]; /* stdout, stderr */
        char *argv0, *cwd;   /* for the message of a failed start */
};

/* Starts the command of a SW_RUN payload: SA_STARTED, or SA_EXIT at once
 * when it cannot be started at all (a malformed request, no process). */
void run_start(struct agent *a, uint32_t seq, const char *payload, size_t len);
/* SIGKILLs job seq's process group: false when seq is no running command. */
bool run_kill(struct agent *a, uint32_t seq);
/* pid was reaped: if it is a command's, its last output and SA_EXIT go
 * out and the command is forgotten (true). */
bool run_reaped(struct agent *a, pid_t pid, int wstatus, const struct rusage *ru);
/* Writes what r's stdin pipe takes (the loop calls it on POLLOUT). */
void run_feed_stdin(struct run *r);
/* The worker hung up: every command's group is killed, and they are
 * forgotten unreaped (the agent is about to exit). */
void run_kill_all(struct agent *a);

#endif
