/* `boxcar worker`: the main loop.  LISTEN plus a poll fallback, claims
 * into free slots, heartbeats, rescue of expired leases, cancel requests,
 * reconnection with backoff, and drain on SIGTERM/SIGINT. */
#ifndef BC_WORKER_DAEMON_LOOP_H
#define BC_WORKER_DAEMON_LOOP_H

#include "common/error.h"
#include "worker/config/config.h"

/* Runs until drained.  Returns 0 after a clean drain, negative on a setup
 * failure (err set). */
int worker_run(const struct worker_config *cfg, struct bc_error *err);

#endif
