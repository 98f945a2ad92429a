/* The jobs of claims whose commit is not known: the answer to the COMMIT
 * was lost with the connection, and the jobs were stopped before they
 * started.  Should the claim have committed, the database says the worker
 * holds them while none of its slots runs them; those, and only those, go
 * back to the queue without counting the attempt (claim.c, loop_release_unrun).
 * A few dozen at most are remembered: a lost connection during a claim is
 * rare, and the next heartbeat after the reconnection settles them. */
#ifndef BC_WORKER_DAEMON_IN_DOUBT_H
#define BC_WORKER_DAEMON_IN_DOUBT_H

#include <stdbool.h>

#define IN_DOUBT_MAX 64

struct in_doubt {
        char ids[IN_DOUBT_MAX][40];
        unsigned next; /* the oldest is overwritten past IN_DOUBT_MAX */
};

void in_doubt_add(struct in_doubt *d, const char *id);
/* True when id was added (and not taken since); it is taken. */
bool in_doubt_take(struct in_doubt *d, const char *id);

#endif
