/* The main loop's control connection: connecting (registering this
 * instance, LISTEN, rescuing what an earlier process of this worker id
 * left behind, catching up on cancels missed while away), losing it, and
 * the reconnect backoff.  The grace it starts for rescues is timers.c's
 * (loop_defer_rescue). */
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "worker/daemon/daemon-internal.h"
#include "worker/daemon/notify.h"
#include "worker/daemon/queue.h"
#include "worker/db/db.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"

static void note_out_of_reach(struct loop *l)
{
        if (!l->lost_at)
                l->lost_at = bc_mono_ms();
}

void loop_disconnect(struct loop *l)
{
        if (l->listen && l->listen != l->conn)
                PQfinish(l->listen);
        PQfinish(l->conn);
        l->conn = NULL;
        l->listen = NULL;
}

void loop_lose_connection(struct loop *l, const struct bc_error *err)
{
        note_out_of_reach(l);
        log_event(LOG_WARN, "db.lost", "worker_id", l->cfg->worker_id, "error",
                  bc_error_message(err), LOG_INT("retry_ms", 100), NULL);
        loop_disconnect(l);
        l->ready_db = false;
        wmetrics_db_up(l->metrics, false);
        if (!l->draining)
                notify_status(false, "database connection lost, reconnecting");
        l->reconnect_ms = 100;
        l->next_reconnect = bc_mono_ms() + l->reconnect_ms;
}

/* Called for every failed control statement: a lost connection is retried
 * later, a statement error is logged and the loop goes on. */
void loop_control_failed(struct loop *l, const char *what, struct bc_error *err)
{
        if (db_connection_lost(l->conn)) {
                loop_lose_connection(l, err);
        } else {
                log_event(LOG_ERROR, "db.error", "worker_id", l->cfg->worker_id, "call", what,
                          "error", bc_error_message(err), NULL);
        }
        bc_error_clear(err);
}

static void catch_up_cancels(struct loop *l)
{
        _cleanup_free_ char *running = slots_running_ids(&l->slots);
        if (!running || !*running)
                return;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_free_ char *ids = NULL;
        if (queue_cancel_requested(l->conn, running, &ids, &err) < 0) {
                loop_control_failed(l, "cancel_requested", &err);
                return;
        }
        char one[40];
        for (const char *rest = loop_next_id(ids, one); rest; rest = loop_next_id(rest, one))
                slots_stop(&l->slots, one, JOB_STOP_CANCEL);
}

/* LISTEN on the control connection, or on a direct one when the control
 * connection goes through PgBouncer; nothing with --poll-only. */
static int open_listen(struct loop *l, PGconn *conn, PGconn **ret_listen, struct bc_error *err)
{
        *ret_listen = NULL;
        if (l->cfg->poll_only)
                return 0;
        PGconn *listen = l->cfg->listen_database_url
                                 ? db_connect(l->cfg->listen_database_url, "boxcar-listen", err)
                                 : conn;
        if (listen && queue_listen(listen, err) >= 0) {
                *ret_listen = listen;
                return 0;
        }
        if (listen != conn)
                PQfinish(listen);
        return -EPROTO;
}

/* Before the first claim: jobs this name still holds belong to a process
 * of the same name that is gone (kill -9, a restarted host or pod). */
static int rescue_orphans(struct loop *l, PGconn *conn, struct bc_error *err)
{
        int n = queue_rescue_orphans(conn, l->cfg->worker_id, l->instance, err);
        if (n > 0)
                log_event(LOG_WARN, "jobs.rescued", "worker_id", l->cfg->worker_id,
                          LOG_INT("count", n), "reason",
                          "left behind by an earlier process of this worker id", NULL);
        return n < 0 ? n : 0;
}

void loop_connect(struct loop *l)
{
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = db_connect(l->cfg->database_url, "boxcar-worker", &err);
        PGconn *listen = NULL;
        if (conn && open_listen(l, conn, &listen, &err) >= 0 &&
            queue_register(conn, l->cfg, l->instance, &err) >= 0 &&
            rescue_orphans(l, conn, &err) >= 0 &&
            (!l->cfg->webhook_default_url ||
             queue_set_default_webhook(conn, l->cfg->webhook_default_url, &err) >= 0) &&
            (!l->draining || queue_set_state(conn, l->cfg->worker_id, "draining", &err) >= 0)) {
                l->conn = conn;
                l->listen = listen;
                l->next_lead = 0;
                l->ready_db = true;
                wmetrics_db_up(l->metrics, true);
                l->want_claim = true;
                l->next_heartbeat = 0;
                l->last_beat_ms = 0;
                log_event(LOG_INFO, "db.connected", "worker_id", l->cfg->worker_id, NULL);
                if (l->lost_at && bc_mono_ms() - l->lost_at >= ms(l->cfg->lease_s) / 3)
                        loop_defer_rescue(l, "the database was out of reach");
                l->lost_at = 0;
                /* READY=1 here, the first time: registered, orphans
                 * rescued, LISTEN on, the next loop pass claims. */
                if (!l->draining) {
                        char queues[256] = "";
                        for (char *const *q = l->cfg->queues; *q; q++)
                                snprintf(queues + strlen(queues), sizeof(queues) - strlen(queues),
                                         "%s%s", q == l->cfg->queues ? "" : ",", *q);
                        notify_status(true, "serving %s with %u slots as %s", queues,
                                      l->cfg->concurrency, l->cfg->worker_id);
                }
                catch_up_cancels(l);
                return;
        }
        if (listen && listen != conn)
                PQfinish(listen);
        PQfinish(conn);
        note_out_of_reach(l);
        log_event(LOG_WARN, "db.connect_failed", "worker_id", l->cfg->worker_id, "error",
                  bc_error_message(&err), LOG_INT("retry_ms", l->reconnect_ms), NULL);
        bc_error_clear(&err);
        l->next_reconnect = bc_mono_ms() + l->reconnect_ms;
        l->reconnect_ms = l->reconnect_ms * 2 > 5000 ? 5000 : l->reconnect_ms * 2;
}
