/* A command's output: relayed to the worker as SA_OUTPUT frames while the
 * command is the worker's job, read and dropped after (the leftovers).
 * Whatever the command left running may still hold its pipes; reading
 * them to EOF means none of it ever blocks on a full pipe or dies of
 * SIGPIPE because the agent stopped listening. */
#ifndef BC_AGENT_RELAY_H
#define BC_AGENT_RELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/conn.h"

/* One pipe the agent reads: fd -1 once it hit EOF. */
struct relay {
        int fd;
        uint8_t stream; /* 1 stdout, 2 stderr */
};

/* Reads r's pipe: one read, or with drain everything it holds now (up to
 * RELAY_DRAIN_MAX, so a writer that never pauses cannot hold the agent),
 * and sends it as output of job seq (seq 0: read and dropped).  Closes
 * the pipe at EOF. */
void relay_read(struct conn *c, uint32_t seq, struct relay *r, bool drain);

/* Pipes of commands that have ended, read until EOF and dropped.  At most
 * LEFTOVERS_MAX of them: one more closes the oldest (its writers get
 * EPIPE from then on; a session that keeps that many background writers
 * going has chosen so). */
#define LEFTOVERS_MAX 64
struct leftovers {
        int fd[LEFTOVERS_MAX]; /* -1: a free slot */
        uint64_t added[LEFTOVERS_MAX];
        uint64_t clock;
};
void leftovers_init(struct leftovers *l);
/* Takes r's pipe (if still open) over; r->fd becomes -1. */
void leftovers_add(struct leftovers *l, struct relay *r);
/* Reads and drops what slot's pipe holds; closes it at EOF. */
void leftovers_read(int *slot);
void leftovers_done(struct leftovers *l);

#endif
