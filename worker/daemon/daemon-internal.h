/* Private to worker/daemon: the main loop's state (struct loop) and the
 * calls between the files that share it.  loop.c runs the poll loop;
 * connection.c owns the control connection (connect, lose, reconnect);
 * claim.c the claim protocol (claim, settle, release of jobs held but
 * not run); timers.c the periodic calls (heartbeat, leadership, the
 * leader's housekeeping, queue stats); lifecycle.c what worker_run starts
 * before the loop and stops after it.  Nothing outside worker/daemon
 * includes this header; the public API is loop.h. */
#ifndef BC_WORKER_DAEMON_DAEMON_INTERNAL_H
#define BC_WORKER_DAEMON_DAEMON_INTERNAL_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/config/config.h"
#include "worker/daemon/in_doubt.h"
#include "worker/daemon/slots.h"
#include "worker/gc/gc_runner.h"
#include "worker/job/store.h"
#include "worker/webhook/deliver.h"

struct loop {
        const struct worker_config *cfg;
        char instance[33]; /* new at every start; leases are held by it */
        struct slots slots;
        struct store store;
        struct deliverer deliverer;
        struct metrics *metrics;  /* NULL without --metrics-addr */
        struct ws_pool *ws_pool;  /* ready workspace filesystems, or NULL */
        struct dir_bin *dirs;     /* kept job directories, or NULL */
        struct disk_budget *disk; /* what workspaces may take, or NULL */
        struct http_server *http;
        struct s3_check *s3_check; /* NULL without S3 */
        /* What loop_open started that loop_close must stop; with the
         * pointers above, NULL or false when it was not started. */
        struct sandbox_pool *sandbox_pool; /* warm sandboxes, or NULL */
        char *cgroup_parent;               /* of job cgroups (owned), or NULL */
        bool store_opened, deliverer_started;
        _Atomic bool ready_db; /* read by the HTTP thread */
        _Atomic bool ready_draining;
        uint64_t next_stats;
        PGconn *conn;   /* control connection: claim, heartbeat, housekeeping */
        PGconn *listen; /* LISTEN: conn itself, a direct connection, or NULL */
        bool leader;    /* holds the housekeeping lease */
        uint64_t next_lead, next_prune, next_storage_gc;
        struct gc_runner gc; /* the leader's storage collections */
        unsigned pruned;     /* jobs deleted since the last jobs.pruned report */
        int signal_fd;
        bool private_mounts; /* job mounts live in our own mount namespace */
        bool want_claim;
        bool draining;
        bool stopping_all;     /* drain deadline passed or second signal */
        unsigned reconnect_ms; /* current backoff */
        /* The leader rescues expired leases only from settled_at on: a lease
         * after the database was out of reach, or this process stalled
         * (see loop_defer_rescue). */
        uint64_t lost_at; /* the database out of reach since; 0: it is not */
        uint64_t settled_at, last_beat_ms;
        const char *deferred_why; /* not logged yet */
        uint64_t next_reconnect, next_poll, next_heartbeat, next_rescue, next_schedule,
                drain_deadline;
        uint64_t watchdog_ms, next_watchdog; /* systemd WATCHDOG=1; 0: none asked */
        bool rated;                          /* a queue of ours has a rate (claim_delay_ms) */
        uint64_t next_rate_check;
        struct in_doubt in_doubt; /* jobs of claims whose commit is not known */
};

static inline uint64_t ms(double seconds)
{
        return (uint64_t)(seconds * 1000);
}

/* loop.c */

/* Drains (stops claiming, lets the running jobs finish by the drain
 * deadline); a second call hands every running job back at once. */
void loop_start_drain(struct loop *l, const char *why);

/* lifecycle.c */

/* Starts what the loop needs, in order, into l (whose cfg, signal_fd,
 * reconnect_ms and watchdog_ms are set): 0, 1 when a signal asked to stop
 * while the database was awaited, or negative with err.  Whatever the
 * answer, loop_close(l) stops what was started. */
int loop_open(struct loop *l, struct bc_error *err);
/* Stops everything loop_open started (and the control connection), after
 * the loop or after a failed or interrupted loop_open. */
void loop_close(struct loop *l);

/* connection.c */

/* Connects, registers this instance, LISTENs: l->conn on success, else a
 * retry at l->next_reconnect with a longer backoff. */
void loop_connect(struct loop *l);
/* The control (and LISTEN) connection is gone: closed, and a reconnect
 * due in 100 ms. */
void loop_lose_connection(struct loop *l, const struct bc_error *err);
/* Called for every failed control statement: a lost connection is retried
 * later, a statement error is logged and the loop goes on.  Clears err. */
void loop_control_failed(struct loop *l, const char *what, struct bc_error *err);
/* Closes the control and LISTEN connections (NULL afterwards). */
void loop_disconnect(struct loop *l);

/* claim.c */

/* Claims up to the free slots' number of jobs into them. */
void loop_claim(struct loop *l);
/* Hands back the jobs in held (a heartbeat's ids) that no slot runs. */
void loop_release_unrun(struct loop *l, const char *held);
/* The next id of a space-separated list (a heartbeat's, a query's) into
 * one; the rest of the list, or NULL at its end. */
const char *loop_next_id(const char *list, char one[40]);

/* timers.c: each sets its own next time. */

/* Puts rescues of expired leases off until a lease from now; why is for
 * the log. */
void loop_defer_rescue(struct loop *l, const char *why);
void loop_heartbeat(struct loop *l);
void loop_lead(struct loop *l);
void loop_rescue(struct loop *l);
void loop_schedule_tick(struct loop *l);
void loop_prune(struct loop *l);
/* Every --storage-gc-interval on the leader: a storage collection on its
 * own thread (gc_runner.h). */
void loop_storage_gc(struct loop *l);
void loop_refresh_queue_stats(struct loop *l);

#endif
