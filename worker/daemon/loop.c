/* The main loop of `boxcar worker` (loop.h): one thread polls the
 * signalfd, the slots' done eventfd and the LISTEN socket, then runs the
 * timers that are due.  What each event and timer does lives beside it:
 * the control connection in connection.c, claims in claim.c, the
 * periodic calls in timers.c, start-up and teardown in lifecycle.c. */
#include "worker/daemon/loop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "worker/daemon/daemon-internal.h"
#include "worker/daemon/notify.h"
#include "worker/daemon/queue.h"
#include "worker/db/db.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"
#include "worker/workdir/disk_budget.h"

static bool wanted_queue(const struct loop *l, const char *queue)
{
        for (char *const *q = l->cfg->queues; *q; q++)
                if (strcmp(*q, queue) == 0)
                        return true;
        return false;
}

/* The notifications libpq holds.  A query on the listening connection
 * (the claim, a heartbeat, schedule_tick: the control connection listens
 * unless it goes through PgBouncer) reads those that arrive meanwhile
 * along with its result, so the socket has nothing left for poll() to
 * see: they are taken after every pass of the loop too, not only when the
 * socket wakes it.  Before, such a job waited for the next notification or
 * the poll interval (in the bench, 21 ms for the next job's). */
static void take_notifies(struct loop *l)
{
        for (PGnotify *n = PQnotifies(l->listen); n; n = PQnotifies(l->listen)) {
                if (strcmp(n->relname, "boxcar_jobs") == 0 && wanted_queue(l, n->extra))
                        l->want_claim = true;
                else if (strcmp(n->relname, "boxcar_cancel") == 0)
                        slots_stop(&l->slots, n->extra, JOB_STOP_CANCEL);
                else if (strcmp(n->relname, "boxcar_webhooks") == 0)
                        deliverer_kick(&l->deliverer);
                else if (strcmp(n->relname, "boxcar_drain") == 0 &&
                         strcmp(n->extra, l->cfg->worker_id) == 0 && !l->draining)
                        loop_start_drain(l, "boxcar worker drain");
                PQfreemem(n);
        }
}

static void handle_notifies(struct loop *l)
{
        if (!PQconsumeInput(l->listen)) {
                struct bc_error err = BC_ERROR_INIT;
                db_conn_error(l->listen, &err);
                loop_lose_connection(l, &err);
                bc_error_clear(&err);
                return;
        }
        take_notifies(l);
}

void loop_start_drain(struct loop *l, const char *why)
{
        if (l->draining) {
                /* A second signal: stop now, handing every job back. */
                l->stopping_all = true;
                l->slots.hard = true;
                slots_stop(&l->slots, NULL, JOB_STOP_DRAIN);
                log_event(LOG_WARN, "worker.stop_now", "worker_id", l->cfg->worker_id, NULL);
                return;
        }
        l->draining = true;
        l->ready_draining = true;
        disk_budget_drain(l->disk);
        wmetrics_draining(l->metrics, true);
        l->drain_deadline = bc_mono_ms() + ms(l->cfg->drain_timeout_s);
        notify_stopping(why);
        log_event(LOG_INFO, "worker.draining", "worker_id", l->cfg->worker_id, "reason", why,
                  NULL);
        struct bc_error err = BC_ERROR_INIT;
        if (l->conn && queue_set_state(l->conn, l->cfg->worker_id, "draining", &err) < 0)
                loop_control_failed(l, "set_worker_state", &err);
}

static void handle_signals(struct loop *l)
{
        struct signalfd_siginfo si;
        while (read(l->signal_fd, &si, sizeof(si)) == sizeof(si))
                loop_start_drain(l, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
}

static int next_timeout(const struct loop *l)
{
        /* A notification taken after the loop's work asks for a claim now. */
        if (l->conn && l->want_claim && !l->draining && slots_free(&l->slots))
                return 0;
        uint64_t now = bc_mono_ms();
        uint64_t next = now + 60000;
        if (!l->conn)
                next = l->next_reconnect < next ? l->next_reconnect : next;
        else {
                if (!l->draining && slots_free(&l->slots) && l->next_poll < next)
                        next = l->next_poll;
                if (l->next_heartbeat < next)
                        next = l->next_heartbeat;
                if (l->leader && l->next_rescue < next)
                        next = l->next_rescue;
                if (l->leader && l->next_schedule < next)
                        next = l->next_schedule;
                if (l->leader && l->cfg->retention_s > 0 && l->next_prune < next)
                        next = l->next_prune;
                if (l->leader && l->gc.s3 && l->cfg->storage_gc_interval_s > 0 &&
                    l->next_storage_gc < next)
                        next = l->next_storage_gc;
                if (l->next_lead < next)
                        next = l->next_lead;
        }
        if (l->draining && !l->stopping_all && l->drain_deadline < next)
                next = l->drain_deadline;
        if (l->stopping_all && !l->slots.hard && l->drain_deadline + 10000 < next)
                next = l->drain_deadline + 10000;
        if (l->watchdog_ms && l->next_watchdog < next)
                next = l->next_watchdog;
        return next <= now ? 0 : (int)(next - now);
}

static void do_timers(struct loop *l)
{
        uint64_t now = bc_mono_ms();
        /* From the main loop itself: a loop stuck in a call stops the
         * pings, and systemd restarts the worker. */
        if (l->watchdog_ms && now >= l->next_watchdog) {
                notify_watchdog();
                l->next_watchdog = now + l->watchdog_ms;
        }
        if (!l->conn && now >= l->next_reconnect)
                loop_connect(l);
        if (l->draining && !l->stopping_all && now >= l->drain_deadline && l->slots.busy) {
                l->stopping_all = true;
                log_event(LOG_WARN, "worker.drain_timeout", "worker_id", l->cfg->worker_id,
                          "detail", "handing running jobs back to the queue", NULL);
                slots_stop(&l->slots, NULL, JOB_STOP_DRAIN);
        }
        /* Reports still retrying 10 s after the deadline (the database is
         * away): give up, the jobs are rescued once their leases expire. */
        if (l->stopping_all && !l->slots.hard && now >= l->drain_deadline + 10000)
                l->slots.hard = true;
        /* Also when idle: it keeps this worker's row alive in worker_status. */
        if (l->conn && now >= l->next_heartbeat)
                loop_heartbeat(l);
        if (l->conn && now >= l->next_lead)
                loop_lead(l);
        if (l->conn && l->leader && now >= l->next_rescue)
                loop_rescue(l);
        if (l->conn && l->leader && now >= l->next_schedule)
                loop_schedule_tick(l);
        if (l->conn && l->leader && l->cfg->retention_s > 0 && now >= l->next_prune)
                loop_prune(l);
        if (l->conn && l->leader && l->gc.s3 && l->cfg->storage_gc_interval_s > 0 &&
            now >= l->next_storage_gc)
                loop_storage_gc(l);
        if (l->conn && l->metrics && now >= l->next_stats)
                loop_refresh_queue_stats(l);
        if (l->conn && !l->draining && slots_free(&l->slots) &&
            (l->want_claim || now >= l->next_poll))
                loop_claim(l);
}

static void run_loop(struct loop *l)
{
        while (!(l->draining && l->slots.busy == 0)) {
                struct pollfd p[3] = {
                        { .fd = l->signal_fd, .events = POLLIN },
                        { .fd = l->slots.done_fd, .events = POLLIN },
                        { .fd = l->listen ? PQsocket(l->listen) : -1, .events = POLLIN },
                };
                int n = poll(p, 3, next_timeout(l));
                if (n < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        handle_signals(l);
                if (p[1].revents) {
                        slots_collect(&l->slots);
                        wmetrics_slots(l->metrics, l->slots.busy, l->slots.n);
                }
                if (l->listen && p[2].revents)
                        handle_notifies(l);
                do_timers(l);
                if (l->listen)
                        take_notifies(l);
        }
}

int worker_run(const struct worker_config *cfg, struct bc_error *err)
{
        struct loop l = { .cfg = cfg,
                          .signal_fd = -1,
                          .reconnect_ms = 100,
                          .watchdog_ms = notify_watchdog_interval_ms() };
        /* 1: a signal asked to stop before the database could be reached. */
        int r = loop_open(&l, err);
        if (r != 0) {
                loop_close(&l);
                return r < 0 ? r : 0;
        }
        loop_connect(&l);
        run_loop(&l);
        loop_close(&l);
        log_event(LOG_INFO, "worker.stopped", "worker_id", cfg->worker_id, NULL);
        return 0;
}
