#include "worker/loop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "worker/db.h"
#include "worker/deliver.h"
#include "worker/log.h"
#include "worker/queue.h"
#include "worker/slots.h"
#include "worker/store.h"

struct loop {
        const struct worker_config *cfg;
        struct slots slots;
        struct store store;
        struct deliverer deliverer;
        PGconn *conn;              /* control connection: LISTEN, claim, heartbeat */
        int signal_fd;
        bool want_claim;
        bool draining;
        bool stopping_all;         /* drain deadline passed or second signal */
        unsigned reconnect_ms;     /* current backoff */
        uint64_t next_reconnect, next_poll, next_heartbeat, next_rescue, drain_deadline;
};

static uint64_t ms(double seconds)
{
        return (uint64_t)(seconds * 1000);
}

static void lose_connection(struct loop *l, const struct bc_error *err)
{
        log_event(LOG_WARN, "db.lost", "worker_id", l->cfg->worker_id, "error",
                  bc_error_message(err), "retry_ms", "100", NULL);
        PQfinish(l->conn);
        l->conn = NULL;
        l->reconnect_ms = 100;
        l->next_reconnect = slots_now_ms() + l->reconnect_ms;
}

/* Called for every failed control statement: a lost connection is retried
 * later, a statement error is logged and the loop goes on. */
static void control_failed(struct loop *l, const char *what, struct bc_error *err)
{
        if (db_connection_lost(l->conn)) {
                lose_connection(l, err);
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
                control_failed(l, "cancel_requested", &err);
                return;
        }
        for (char *id = ids; id && *id;) {
                size_t n = strcspn(id, " ");
                char one[40];
                snprintf(one, sizeof(one), "%.*s", (int)n, id);
                slots_stop(&l->slots, one, JOB_STOP_CANCEL);
                id += n + (id[n] == ' ');
        }
}

static void try_connect(struct loop *l)
{
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = db_connect(l->cfg->database_url, "boxcar-worker", &err);
        if (conn && queue_listen(conn, &err) >= 0 && queue_register(conn, l->cfg, &err) >= 0 &&
            (!l->cfg->webhook_default_url ||
             queue_set_default_webhook(conn, l->cfg->webhook_default_url, &err) >= 0) &&
            (!l->draining || queue_set_state(conn, l->cfg->worker_id, "draining", &err) >= 0)) {
                l->conn = conn;
                l->want_claim = true;
                l->next_heartbeat = 0;
                log_event(LOG_INFO, "db.connected", "worker_id", l->cfg->worker_id, NULL);
                catch_up_cancels(l);
                return;
        }
        PQfinish(conn);
        char retry[16];
        snprintf(retry, sizeof(retry), "%u", l->reconnect_ms);
        log_event(LOG_WARN, "db.connect_failed", "worker_id", l->cfg->worker_id, "error",
                  bc_error_message(&err), "retry_ms", retry, NULL);
        bc_error_clear(&err);
        l->next_reconnect = slots_now_ms() + l->reconnect_ms;
        l->reconnect_ms = l->reconnect_ms * 2 > 5000 ? 5000 : l->reconnect_ms * 2;
}

static bool wanted_queue(const struct loop *l, const char *queue)
{
        for (char *const *q = l->cfg->queues; *q; q++)
                if (strcmp(*q, queue) == 0)
                        return true;
        return false;
}

static void handle_notifies(struct loop *l)
{
        if (!PQconsumeInput(l->conn)) {
                struct bc_error err = BC_ERROR_INIT;
                db_conn_error(l->conn, &err);
                lose_connection(l, &err);
                bc_error_clear(&err);
                return;
        }
        for (PGnotify *n = PQnotifies(l->conn); n; n = PQnotifies(l->conn)) {
                if (strcmp(n->relname, "boxcar_jobs") == 0 && wanted_queue(l, n->extra))
                        l->want_claim = true;
                else if (strcmp(n->relname, "boxcar_cancel") == 0)
                        slots_stop(&l->slots, n->extra, JOB_STOP_CANCEL);
                else if (strcmp(n->relname, "boxcar_webhooks") == 0)
                        deliverer_kick(&l->deliverer);
                PQfreemem(n);
        }
}

static void claim(struct loop *l)
{
        unsigned n = slots_free(&l->slots);
        struct claimed_job **jobs = NULL;
        size_t got = 0;
        struct bc_error err = BC_ERROR_INIT;
        l->want_claim = false;
        l->next_poll = slots_now_ms() + ms(l->cfg->poll_interval_s);
        if (queue_claim(l->conn, l->cfg, n, &jobs, &got, &err) < 0) {
                control_failed(l, "claim", &err);
                return;
        }
        for (size_t i = 0; i < got; i++)
                slots_assign(&l->slots, jobs[i]);
        free(jobs);
        /* A full batch means more may be waiting: claim again as soon as a
         * slot frees up, without waiting for a notification. */
        l->want_claim = got == n;
}

static void heartbeat(struct loop *l)
{
        uint64_t sent = slots_now_ms();
        l->next_heartbeat = sent + ms(l->cfg->lease_s / 3);
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_free_ char *held = NULL;
        if (queue_heartbeat(l->conn, l->cfg, &held, &err) < 0) {
                control_failed(l, "heartbeat", &err);
                return;
        }
        slots_stop_unheld(&l->slots, held, sent);
}

static void rescue(struct loop *l)
{
        l->next_rescue = slots_now_ms() + ms(l->cfg->lease_s / 2);
        struct bc_error err = BC_ERROR_INIT;
        int n = queue_rescue(l->conn, &err);
        if (n < 0) {
                control_failed(l, "rescue_expired", &err);
                return;
        }
        if (n > 0) {
                char count[16];
                snprintf(count, sizeof(count), "%d", n);
                log_event(LOG_INFO, "jobs.rescued", "worker_id", l->cfg->worker_id, "count", count,
                          NULL);
        }
}

static void start_drain(struct loop *l, const char *why)
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
        l->drain_deadline = slots_now_ms() + ms(l->cfg->drain_timeout_s);
        log_event(LOG_INFO, "worker.draining", "worker_id", l->cfg->worker_id, "reason", why,
                  NULL);
        struct bc_error err = BC_ERROR_INIT;
        if (l->conn && queue_set_state(l->conn, l->cfg->worker_id, "draining", &err) < 0)
                control_failed(l, "set_worker_state", &err);
}

static void handle_signals(struct loop *l)
{
        struct signalfd_siginfo si;
        while (read(l->signal_fd, &si, sizeof(si)) == sizeof(si))
                start_drain(l, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
}

static int next_timeout(const struct loop *l)
{
        uint64_t now = slots_now_ms();
        uint64_t next = now + 60000;
        if (!l->conn)
                next = l->next_reconnect < next ? l->next_reconnect : next;
        else {
                if (!l->draining && slots_free(&l->slots) && l->next_poll < next)
                        next = l->next_poll;
                if (l->next_heartbeat < next)
                        next = l->next_heartbeat;
                if (l->next_rescue < next)
                        next = l->next_rescue;
        }
        if (l->draining && !l->stopping_all && l->drain_deadline < next)
                next = l->drain_deadline;
        if (l->stopping_all && !l->slots.hard && l->drain_deadline + 10000 < next)
                next = l->drain_deadline + 10000;
        return next <= now ? 0 : (int)(next - now);
}

static void do_timers(struct loop *l)
{
        uint64_t now = slots_now_ms();
        if (!l->conn && now >= l->next_reconnect)
                try_connect(l);
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
        if (l->conn && now >= l->next_heartbeat && l->slots.busy)
                heartbeat(l);
        else if (l->conn && now >= l->next_heartbeat)
                l->next_heartbeat = now + ms(l->cfg->lease_s / 3);
        if (l->conn && now >= l->next_rescue)
                rescue(l);
        if (l->conn && !l->draining && slots_free(&l->slots) &&
            (l->want_claim || now >= l->next_poll))
                claim(l);
}

static int setup_signals(struct loop *l, struct bc_error *err)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        /* Blocked before the slot threads start, so only signalfd sees them. */
        if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
                return bc_error_set(err, BC_INTERNAL, errno, "sigmask: %m");
        signal(SIGPIPE, SIG_IGN);
        l->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (l->signal_fd < 0)
                return bc_error_set(err, BC_INTERNAL, errno, "signalfd: %m");
        return 0;
}

static int setup_work_dir(const struct worker_config *cfg, struct bc_error *err)
{
        _cleanup_free_ char *jobs = NULL;
        if (asprintf(&jobs, "%s/jobs", cfg->work_dir) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if ((mkdir(cfg->work_dir, 0700) < 0 && errno != EEXIST) ||
            (mkdir(jobs, 0700) < 0 && errno != EEXIST))
                return bc_error_set(err, BC_CONFIG, errno, "--work-dir %s: %m", cfg->work_dir);
        return 0;
}

static void run_loop(struct loop *l)
{
        while (!(l->draining && l->slots.busy == 0)) {
                struct pollfd p[3] = {
                        { .fd = l->signal_fd, .events = POLLIN },
                        { .fd = l->slots.done_fd, .events = POLLIN },
                        { .fd = l->conn ? PQsocket(l->conn) : -1, .events = POLLIN },
                };
                int n = poll(p, 3, next_timeout(l));
                if (n < 0 && errno != EINTR)
                        break;
                if (p[0].revents)
                        handle_signals(l);
                if (p[1].revents)
                        slots_collect(&l->slots);
                if (l->conn && p[2].revents)
                        handle_notifies(l);
                do_timers(l);
        }
}

int worker_run(const struct worker_config *cfg, struct bc_error *err)
{
        struct loop l = { .cfg = cfg, .signal_fd = -1, .reconnect_ms = 100 };
        int r = setup_work_dir(cfg, err);
        if (r >= 0)
                r = setup_signals(&l, err);
        _cleanup_free_ char *cache_dir = NULL;
        if (r >= 0 && asprintf(&cache_dir, "%s/volumes", cfg->work_dir) < 0)
                r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        bool store_open_ok = false;
        if (r >= 0) {
                r = store_open(&l.store, cache_dir, cfg->volume_cache_bytes,
                               (long)cfg->artifact_url_ttl_s, err);
                store_open_ok = r >= 0;
        }
        if (r >= 0)
                r = slots_start(&l.slots, cfg, &l.store, err);
        const char *no_webhooks = NULL;
        bool deliverer_ok = false;
        if (r >= 0) {
                r = deliverer_start(&l.deliverer, cfg, &no_webhooks, err);
                deliverer_ok = true;
        }
        if (r < 0) {
                if (deliverer_ok)
                        deliverer_stop(&l.deliverer);
                if (l.slots.slot)
                        slots_join(&l.slots);
                if (store_open_ok)
                        store_close(&l.store);
                if (l.signal_fd >= 0)
                        close(l.signal_fd);
                return r;
        }
        char conc[16];
        snprintf(conc, sizeof(conc), "%u", cfg->concurrency);
        log_event(LOG_INFO, "worker.started", "worker_id", cfg->worker_id, "concurrency", conc,
                  "sandbox", cfg->sandbox == BACKEND_NAMESPACE ? "namespace" : "none",
                  "s3", l.store.s3 ? "configured" : "not configured",
                  "version", BOXCAR_VERSION, NULL);
        if (no_webhooks)
                log_event(LOG_WARN, "webhooks.disabled", "worker_id", cfg->worker_id, "reason",
                          no_webhooks, "detail", "this worker delivers no webhooks; workers "
                          "with a secret deliver them", NULL);
        try_connect(&l);
        run_loop(&l);
        if (l.conn) {
                struct bc_error ignored = BC_ERROR_INIT;
                queue_set_state(l.conn, cfg->worker_id, "stopped", &ignored);
                bc_error_clear(&ignored);
        }
        slots_join(&l.slots);
        deliverer_stop(&l.deliverer);
        store_close(&l.store);
        PQfinish(l.conn);
        close(l.signal_fd);
        log_event(LOG_INFO, "worker.stopped", "worker_id", cfg->worker_id, NULL);
        return 0;
}
