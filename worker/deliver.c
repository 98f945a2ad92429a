#include "worker/deliver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "worker/db.h"
#include "worker/log.h"
#include "worker/wmetrics.h"
#include "worker/webhook_post.h"
#include "worker/webhook_sign.h"
#include "version.h"

#define CLAIM_BATCH "5"
/* A due retry is found within this long even without a NOTIFY. */
#define IDLE_POLL_MS 1000

struct delivery {
        const char *id, *job_id, *url, *body;
        int attempt;
};

static void wait_for_work(struct deliverer *d, unsigned ms)
{
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ms / 1000;
        until.tv_nsec += (long)(ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&d->lock);
        while (!d->kicks && !d->closing)
                if (pthread_cond_timedwait(&d->wake, &d->lock, &until) == ETIMEDOUT)
                        break;
        if (d->kicks)
                d->kicks--;
        pthread_mutex_unlock(&d->lock);
}

static void log_outcome(struct deliverer *d, const struct delivery *dl,
                        const struct webhook_response *resp, const char *new_status)
{
        _cleanup_free_ char *url = webhook_url_for_log(dl->url);
        const char *event = !new_status ? "webhook.lease_lost"
                            : strcmp(new_status, "delivered") == 0 ? "webhook.delivered"
                            : strcmp(new_status, "failed") == 0 ? "webhook.failed"
                                                                 : "webhook.retry";
        wmetrics_webhook(d->metrics, event + strlen("webhook."));
        enum log_level level = strcmp(event, "webhook.delivered") == 0 ? LOG_DEBUG : LOG_WARN;
        /* No response (refused, timed out): no http_status field. */
        if (resp->status > 0)
                log_event(level, event, "webhook_id", dl->id, "job_id", dl->job_id, "url", url,
                          LOG_INT("http_status", resp->status), LOG_INT("attempt", dl->attempt),
                          "error", resp->error, NULL);
        else
                log_event(level, event, "webhook_id", dl->id, "job_id", dl->job_id, "url", url,
                          LOG_INT("attempt", dl->attempt), "error", resp->error, NULL);
}

/* One attempt: sign with the current time, post, record the outcome. */
static int deliver_one(struct deliverer *d, PGconn *conn, const struct delivery *dl,
                       struct bc_error *err)
{
        long long now = (long long)time(NULL);
        _cleanup_free_ char *signature = NULL;
        int r = webhook_sign(d->secrets, dl->id, now, dl->body, strlen(dl->body), &signature, err);
        if (r < 0)
                return r;
        struct webhook_request req = {
                .url = dl->url, .msg_id = dl->id, .timestamp = now, .signature = signature,
                .body = dl->body, .body_len = strlen(dl->body),
                .timeout_s = d->cfg->webhook_timeout_s, .user_agent = "boxcar/" BOXCAR_VERSION,
        };
        struct webhook_response resp = { 0 };
        r = webhook_post(&req, &resp, err);
        if (r < 0)
                return r;
        char status[16], retry_after[32];
        snprintf(status, sizeof(status), "%ld", resp.status);
        snprintf(retry_after, sizeof(retry_after), "%.3f", resp.retry_after_s);
        const char *p[] = { dl->id, d->cfg->worker_id, status, resp.error,
                            resp.retry_after_s >= 0 ? retry_after : NULL,
                            d->cfg->webhook_schedule };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.delivery_result($1, $2, $3::int, $4, $5::float8, $6::interval[])",
                6, p, err);
        if (res)
                log_outcome(d, dl, &resp, PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0));
        webhook_response_done(&resp);
        return res ? 0 : -EPROTO;
}

/* Claims a batch and delivers it.  Returns how many rows it claimed, or a
 * negative errno when the database failed. */
static int deliver_batch(struct deliverer *d, PGconn *conn, struct bc_error *err)
{
        char lease[32];
        /* An attempt cannot outlast its timeout; past this the row is free for
         * another worker (this one died mid-delivery). */
        snprintf(lease, sizeof(lease), "%.0f seconds", 2 * d->cfg->webhook_timeout_s + 5);
        const char *p[] = { d->cfg->worker_id, CLAIM_BATCH, lease };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select id, job_id, url, body, attempts "
                      "from boxcar.claim_deliveries($1, $2::int, $3::interval)", 3, p, err);
        if (!res)
                return -EPROTO;
        for (int i = 0; i < PQntuples(res) && !(d->closing && i > 0); i++) {
                struct delivery dl = { PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                                       PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
                                       atoi(PQgetvalue(res, i, 4)) };
                int r = deliver_one(d, conn, &dl, err);
                if (r < 0)
                        return r;
        }
        return PQntuples(res);
}

static void *deliver_main(void *arg)
{
        struct deliverer *d = arg;
        PGconn *conn = NULL;
        unsigned backoff = 100;
        while (!d->closing) {
                struct bc_error err = BC_ERROR_INIT;
                if (!conn || db_connection_lost(conn)) {
                        PQfinish(conn);
                        conn = db_connect(d->cfg->database_url, "boxcar-webhooks", &err);
                }
                int n = conn ? deliver_batch(d, conn, &err) : -ECONNREFUSED;
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
        PQfinish(conn);
        return NULL;
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
        int r = webhook_secrets_parse(secret, &d->secrets, err);
        if (r < 0)
                return bc_error_prefix(err, "BOXCAR_WEBHOOK_SECRET");
        d->threads = calloc(cfg->webhook_concurrency, sizeof(pthread_t));
        if (!d->threads)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        for (unsigned i = 0; i < cfg->webhook_concurrency; i++) {
                r = pthread_create(&d->threads[i], NULL, deliver_main, d);
                if (r != 0)
                        return bc_error_set(err, BC_INTERNAL, r, "webhook thread: %s", strerror(r));
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
        for (unsigned i = 0; i < d->n; i++)
                pthread_join(d->threads[i], NULL);
        free(d->threads);
        d->threads = NULL;
        d->n = 0;
        webhook_secrets_free(d->secrets);
        d->secrets = NULL;
        pthread_cond_destroy(&d->wake);
        pthread_mutex_destroy(&d->lock);
}
