/* Whether a claim held.  The claim's rows come back before its commit is
 * durable (worker/db/db_early.c has them flushed ahead of the COMMIT), so a
 * slot prepares its job while the database flushes the claim to disk;
 * nothing of the job starts, and nothing about it is written, before the
 * gate says the claim committed.  One gate per claim, shared by its jobs
 * (reference counted): the loop thread decides it once, the slots wait. */
#ifndef BC_WORKER_EXEC_CLAIM_GATE_H
#define BC_WORKER_EXEC_CLAIM_GATE_H

#include <stdbool.h>

struct claim_gate;

/* A pending gate with refs references, or NULL (out of memory). */
struct claim_gate *claim_gate_new(unsigned refs);
/* Decides the gate (once): the claim committed, or it did not (rolled back,
 * or its answer was lost: then it is not known, and counts as not). */
void claim_gate_decide(struct claim_gate *g, bool committed);
/* Waits until the gate is decided: true when the claim committed.  A NULL
 * gate is a claim that was durable when its rows came. */
bool claim_gate_wait(struct claim_gate *g);
/* An eventfd that becomes readable when the claim commits, never when it
 * does not: for a process that is to start the job on its own (a warm
 * sandbox), which the worker stops otherwise.  -1 for a NULL gate. */
int claim_gate_fd(const struct claim_gate *g);
void claim_gate_unref(struct claim_gate *g);

#endif
