#include "worker/webhook/deliver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/deadline.h"
#include "worker/db/db.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"
#include "worker/webhook/webhook_derive.h"
#include "worker/webhook/webhook_post.h"
#include "worker/webhook/webhook_sign.h"
#include "version.h"

#define CLAIM_BATCH 5
/* A due retry is found within this long even without a NOTIFY. */
#define IDLE_POLL_MS 1000
/* Slack for the database round trips around an attempt. */
#define LEASE_MARGIN_S 5.0
/* Derived keys kept per delivery thread: (scope, endpoint, generation)
 * times master keys in use; beyond it the least recently used go. */
#define KEYCACHE_ENTRIES 256

struct delivery {
        const char *id, *job_id, *url, *body;
        int attempt;
        /* Whose secrets sign it: the job's scope, and the generations of
         * the scope-wide and of the URL's own secrets ("{2,1}"). */
        const char *scope, *scope_generations, *endpoint_generations;
};

/* An attempt made and not yet recorded: kept across a lost database
 * connection, so that a receiver's 2xx is written down once the database
 * is back rather than forgotten (the row would be tried again after its
 * lease and could end up failed although the receiver has the event). */
struct unrecorded {
        char *id, *job_id, *url;
        int attempt;
        struct webhook_response resp;
};

/* Per delivery thread: its database connection and its HTTP connections. */
struct deliver_thread {
        struct deliverer *d;
        PGconn *conn;
        struct webhook_client *http;
        struct unrecorded *pending; /* or NULL */
        struct webhook_keycache *keys;
        struct webhook_secrets *signing; /* this delivery's derived keys */
};

static void unrecorded_free(struct unrecorded *u)
{
        if (!u)
                return;
        free(u->id);
        free(u->job_id);
        free(u->url);
        webhook_response_done(&u->resp);
        free(u);
}

BC_DEFINE_CLEANUP(struct unrecorded *, unrecorded_free)

/* How long a claimed batch stays ours: every attempt of the batch in turn
 * must fit, or the rows at its end would be taken by another worker while
 * this one still posts them (two attempts counted for one, and a
 * duplicate at the receiver). */
static double lease_s(const struct deliverer *d)
{
        return (CLAIM_BATCH + 1) * d->cfg->webhook_timeout_s + LEASE_MARGIN_S;
}

static void wait_for_work(struct deliverer *d, unsigned ms)
{
        struct timespec until = bc_realtime_after_ms(ms);
        pthread_mutex_lock(&d->lock);
        while (!d->kicks && !d->closing)
                if (pthread_cond_timedwait(&d->wake, &d->lock, &until) == ETIMEDOUT)
                        break;
        if (d->kicks)
                d->kicks--;
        pthread_mutex_unlock(&d->lock);
}

static void log_outcome(struct deliverer *d, const struct unrecorded *u, const char *new_status)
{
        _cleanup_free_ char *url = webhook_url_for_log(u->url);
        const char *event = !new_status                            ? "webhook.lease_lost"
                            : strcmp(new_status, "delivered") == 0 ? "webhook.delivered"
                            : strcmp(new_status, "failed") == 0    ? "webhook.failed"
                                                                   : "webhook.retry";
        /* A 2xx that changed nothing: the row was delivered already (by a
         * duplicate attempt), nothing is wrong. */
        bool quiet = strcmp(event, "webhook.delivered") == 0 ||
                     (!new_status && u->resp.status >= 200 && u->resp.status < 300);
        wmetrics_webhook(d->metrics, event + strlen("webhook."));
        enum log_level level = quiet ? LOG_DEBUG : LOG_WARN;
        /* No response (refused, timed out): no http_status field. */
        if (u->resp.status > 0)
                log_event(level, event, "webhook_id", u->id, "job_id", u->job_id, "url", url,
                          LOG_INT("http_status", u->resp.status), LOG_INT("attempt", u->attempt),
                          "error", u->resp.error, NULL);
        else
                log_event(level, event, "webhook_id", u->id, "job_id", u->job_id, "url", url,
                          LOG_INT("attempt", u->attempt), "error", u->resp.error, NULL);
}

/* Writes the thread's unrecorded attempt down; on success it is gone. */
static int record(struct deliver_thread *t, struct bc_error *err)
{
        struct deliverer *d = t->d;
        struct unrecorded *u = t->pending;
        char status[16], retry_after[32];
        snprintf(status, sizeof(status), "%ld", u->resp.status);
        snprintf(retry_after, sizeof(retry_after), "%.3f", u->resp.retry_after_s);
        const char *p[] = { u->id,
                            d->cfg->worker_id,
                            status,
                            u->resp.error,
                            u->resp.retry_after_s >= 0 ? retry_after : NULL,
                            d->cfg->webhook_schedule };
        _cleanup_pgresult_ PGresult *res = db_exec(
                t->conn,
                "select boxcar.delivery_result($1, $2, $3::int, $4, $5::float8, $6::interval[])",
                6, p, err);
        if (!res && !db_connection_lost(t->conn)) {
                /* Not a lost connection: trying again would fail the same
                 * way and hold the thread; the row's lease brings it back. */
                log_event(LOG_WARN, "webhook.unrecorded", "webhook_id", u->id, "job_id", u->job_id,
                          "error", bc_error_message(err), NULL);
                unrecorded_free(steal_pointer(&t->pending));
                return -EPROTO;
        }
        if (!res)
                return -EPROTO;
        log_outcome(d, u, PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0));
        unrecorded_free(steal_pointer(&t->pending));
        return 0;
}

/* Webhook URLs come from job specs and enqueue callers, and are checked;
 * the receiver the operator gave this worker (BOXCAR_WEBHOOK_URL) is
 * trusted, like the S3 endpoint: its whole origin, because libcurl reuses
 * one connection for every URL of an origin. */
static const struct netguard *url_guard_for(const struct worker_config *cfg, const char *url)
{
        if (cfg->webhook_default_url && webhook_same_origin(cfg->webhook_default_url, url))
                return NULL;
        return &cfg->url_guard;
}

/* Adds the secrets of each generation in list (a PostgreSQL int[] as
 * text, "{2,1}") of (scope, endpoint) to the thread's signing set. */
static int add_generations(struct deliver_thread *t, const char *scope, const char *endpoint,
                           const char *list, struct bc_error *err)
{
        const char *p = list;
        if (*p++ != '{')
                return bc_error_set(err, BC_INTERNAL, EPROTO, "webhook generations: not an array");
        while (*p && *p != '}') {
                char *end = NULL;
                errno = 0;
                long g = strtol(p, &end, 10);
                if (errno || end == p || g < 0 || g > 1000000000 || (*end != ',' && *end != '}'))
                        return bc_error_set(err, BC_INTERNAL, EPROTO,
                                            "webhook generations: not a list of numbers");
                int r = webhook_keycache_add(t->keys, scope, endpoint, (int)g, t->signing, err);
                if (r < 0)
                        return r;
                p = *end == ',' ? end + 1 : end;
        }
        return 0;
}

/* The webhook-signature header of one attempt: one v1 signature per
 * valid secret of the delivery's scope or endpoint, over the exact bytes
 * posted. */
static int sign_delivery(struct deliver_thread *t, const struct delivery *dl, long long now,
                         char **ret_signature, struct bc_error *err)
{
        webhook_secrets_reset(t->signing);
        if (!*dl->scope)
                return bc_error_set(err, BC_INTERNAL, EPROTO, "webhook: the job has no scope");
        int r = add_generations(t, dl->scope, dl->url, dl->endpoint_generations, err);
        if (r >= 0)
                r = add_generations(t, dl->scope, "", dl->scope_generations, err);
        if (r >= 0 && webhook_secrets_count(t->signing) == 0)
                r = bc_error_set(err, BC_INTERNAL, EPROTO, "webhook: no valid secret for scope %s",
                                 dl->scope);
        if (r >= 0)
                r = webhook_sign(t->signing, dl->id, now, dl->body, strlen(dl->body),
                                 ret_signature, err);
        webhook_secrets_reset(t->signing);
        return r;
}

/* One attempt: sign with the current time, post, record the outcome.  A
 * delivery that cannot be signed is left alone (its lease brings it back)
 * and said in the log; the batch goes on. */
static int deliver_one(struct deliver_thread *t, const struct delivery *dl, struct bc_error *err)
{
        struct deliverer *d = t->d;
        long long now = (long long)time(NULL);
        _cleanup_free_ char *signature = NULL;
        int r = sign_delivery(t, dl, now, &signature, err);
        if (r < 0) {
                log_event(LOG_WARN, "webhook.unsigned", "webhook_id", dl->id, "job_id", dl->job_id,
                          "error", bc_error_message(err), NULL);
                bc_error_clear(err);
                return 0;
        }
        struct webhook_request req = {
                .url = dl->url,
                .msg_id = dl->id,
                .timestamp = now,
                .signature = signature,
                .body = dl->body,
                .body_len = strlen(dl->body),
                .timeout_s = d->cfg->webhook_timeout_s,
                .user_agent = "boxcar/" BOXCAR_VERSION,
                .guard = url_guard_for(d->cfg, dl->url),
        };
        _cleanup_(unrecorded_freep) struct unrecorded *u = calloc(1, sizeof(*u));
        if (!u)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        u->resp.retry_after_s = -1;
        u->id = strdup(dl->id);
        u->job_id = strdup(dl->job_id);
        u->url = strdup(dl->url);
        u->attempt = dl->attempt;
        if (!u->id || !u->job_id || !u->url)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        r = webhook_client_post(t->http, &req, &u->resp, err);
        if (r < 0)
                return r;
        t->pending = steal_pointer(&u);
        return record(t, err);
}

/* Claims a batch and delivers it.  Returns how many rows it claimed, or a
 * negative errno when the database failed. */
static int deliver_batch(struct deliver_thread *t, struct bc_error *err)
{
        struct deliverer *d = t->d;
        char lease[32], batch[16];
        double lease_len = lease_s(d);
        snprintf(lease, sizeof(lease), "%.0f seconds", lease_len);
        snprintf(batch, sizeof(batch), "%d", CLAIM_BATCH);
        const char *p[] = { d->cfg->worker_id, batch, lease };
        double claimed_at = bc_mono_s();
        _cleanup_pgresult_ PGresult *res = db_exec(
                t->conn,
                "select id, job_id, url, body, attempts, scope, scope_generations, "
                "endpoint_generations from boxcar.claim_signed_deliveries($1, $2::int, $3::interval)",
                3, p, err);
        if (!res)
                return -EPROTO;
        for (int i = 0; i < PQntuples(res) && !(d->closing && i > 0); i++) {
                /* Never post a row whose lease could end during the attempt:
                 * left alone, it is tried again once the lease passes. */
                if (bc_mono_s() + d->cfg->webhook_timeout_s + LEASE_MARGIN_S >
                    claimed_at + lease_len)
                        break;
                struct delivery dl = { PQgetvalue(res, i, 0),       PQgetvalue(res, i, 1),
                                       PQgetvalue(res, i, 2),       PQgetvalue(res, i, 3),
                                       atoi(PQgetvalue(res, i, 4)), PQgetvalue(res, i, 5),
                                       PQgetvalue(res, i, 6),       PQgetvalue(res, i, 7) };
                int r = deliver_one(t, &dl, err);
                if (r < 0)
                        return r;
        }
        return PQntuples(res);
}

/* One turn of a delivery thread: connect if needed, write down an attempt
 * a lost connection left unrecorded, then deliver a batch. */
static int deliver_turn(struct deliver_thread *t, struct bc_error *err)
{
        if (!t->conn || db_connection_lost(t->conn)) {
                PQfinish(t->conn);
                t->conn = db_connect(t->d->cfg->database_url, "boxcar-webhooks", err);
                if (!t->conn)
                        return -ECONNREFUSED;
        }
        if (t->pending) {
                int r = record(t, err);
                if (r < 0)
                        return r;
        }
        return deliver_batch(t, err);
}

static void *deliver_main(void *arg)
{
        struct deliver_thread *t = arg;
        struct deliverer *d = t->d;
        unsigned backoff = 100;
        while (!d->closing) {
                struct bc_error err = BC_ERROR_INIT;
                int n = deliver_turn(t, &err);
                if (n < 0) {
                        log_event(LOG_WARN, "webhook.db_error", "worker_id", d->cfg->worker_id,
                                  "error", bc_error_message(&err), NULL);
                        wait_for_work(d, backoff);
                        backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
                } else {
                        backoff = 100;
                        if (n == 0)
                                wait_for_work(d, IDLE_POLL_MS);
                }
                bc_error_clear(&err);
        }
        /* Stopping: one last chance to write down an attempt in hand. */
        if (t->pending && t->conn && !db_connection_lost(t->conn)) {
                struct bc_error err = BC_ERROR_INIT;
                record(t, &err);
                bc_error_clear(&err);
        }
        return NULL;
}

/* Frees what a thread's state holds (NULL-safe members). */
static void thread_state_done(struct deliver_thread *t)
{
        unrecorded_free(steal_pointer(&t->pending));
        webhook_client_free(steal_pointer(&t->http));
        webhook_keycache_free(steal_pointer(&t->keys));
        webhook_secrets_free(steal_pointer(&t->signing));
        PQfinish(steal_pointer(&t->conn));
}

int deliverer_start(struct deliverer *d, const struct worker_config *cfg,
                    const char **ret_disabled_reason, struct bc_error *err)
{
        struct metrics *m = d->metrics;
        memset(d, 0, sizeof(*d));
        d->metrics = m;
        d->cfg = cfg;
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->wake, NULL);
        *ret_disabled_reason = NULL;
        const char *secret = getenv("BOXCAR_WEBHOOK_SECRET");
        if (!secret || !*secret) {
                *ret_disabled_reason = "BOXCAR_WEBHOOK_SECRET is not set";
                return 0;
        }
        int r = webhook_secrets_parse(secret, &d->master, err);
        if (r < 0)
                return bc_error_prefix(err, "BOXCAR_WEBHOOK_SECRET");
        if (webhook_secrets_count(d->master) > WEBHOOK_MASTER_KEYS_MAX)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "BOXCAR_WEBHOOK_SECRET: %zu master keys, at most %d",
                                    webhook_secrets_count(d->master), WEBHOOK_MASTER_KEYS_MAX);
        d->threads = calloc(cfg->webhook_concurrency, sizeof(pthread_t));
        d->state = calloc(cfg->webhook_concurrency, sizeof(struct deliver_thread));
        if (!d->threads || !d->state)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        for (unsigned i = 0; i < cfg->webhook_concurrency; i++) {
                d->state[i].d = d;
                r = webhook_client_new(&d->state[i].http, err);
                if (r >= 0)
                        r = webhook_keycache_new(d->master, KEYCACHE_ENTRIES, &d->state[i].keys,
                                                 err);
                if (r >= 0)
                        r = webhook_secrets_new(&d->state[i].signing, err);
                if (r < 0) {
                        thread_state_done(&d->state[i]);
                        return r;
                }
                r = pthread_create(&d->threads[i], NULL, deliver_main, &d->state[i]);
                if (r != 0) {
                        thread_state_done(&d->state[i]);
                        return bc_error_set(err, BC_INTERNAL, r, "webhook thread: %s",
                                            strerror(r));
                }
                d->n++;
        }
        return 0;
}

void deliverer_kick(struct deliverer *d)
{
        pthread_mutex_lock(&d->lock);
        if (d->kicks < d->n)
                d->kicks++;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
}

void deliverer_stop(struct deliverer *d)
{
        pthread_mutex_lock(&d->lock);
        d->closing = true;
        pthread_cond_broadcast(&d->wake);
        pthread_mutex_unlock(&d->lock);
        for (unsigned i = 0; i < d->n; i++) {
                pthread_join(d->threads[i], NULL);
                struct deliver_thread *t = &d->state[i];
                if (t->pending)
                        log_event(LOG_WARN, "webhook.unrecorded", "webhook_id", t->pending->id,
                                  "job_id", t->pending->job_id, NULL);
                thread_state_done(t);
        }
        free(d->threads);
        d->threads = NULL;
        free(d->state);
        d->state = NULL;
        d->n = 0;
        webhook_secrets_free(d->master);
        d->master = NULL;
        pthread_cond_destroy(&d->wake);
        pthread_mutex_destroy(&d->lock);
}
