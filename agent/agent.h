/* The session agent's state: the one connection to the worker and what it
 * runs for it (commands, file operations, kept interpreters).  The agent
 * is one thread and one poll loop (loop.c); every module below is driven
 * by it and never blocks. */
#ifndef BC_AGENT_AGENT_H
#define BC_AGENT_AGENT_H

#include "agent/code.h"
#include "agent/conn.h"
#include "agent/groups.h"
#include "agent/relay.h"

struct run;
struct files_req;

struct agent {
        struct conn conn;
        int sigfd;               /* SIGCHLD (signalfd) */
        const char *workspace;   /* where relative paths of SW_FILES start */
        struct run *runs;        /* commands not reaped yet (run.h) */
        struct files_req *files; /* SW_FILES still to do, oldest first (files.h) */
        struct interp interps[CODE_LANGS];
        struct leftovers leftovers;
        struct groups groups;
};

/* Serves the worker's frames until the connection ends. */
void agent_loop(struct agent *a);

#endif
