#include "worker/daemon/s3_check.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/deadline.h"
#include "worker/log/log.h"

#define RETRY_MIN_S 2
#define RETRY_MAX_S 30

struct s3_check {
        const struct storage_config *cfg;
        const char *worker_id;
        pthread_t thread;
        pthread_mutex_t lock; /* guards what follows */
        pthread_cond_t wake;
        bool stop;
        bool checked, ok;
        char why[160];
};

static void report(struct s3_check *c, bool ok, const char *why, const struct bc_error *err,
                   unsigned retry_s)
{
        if (ok)
                log_event(LOG_INFO, "s3.ready", "worker_id", c->worker_id, "bucket",
                          c->cfg->bucket, "credentials", storage_credentials_source(c->cfg), NULL);
        else
                log_event(LOG_WARN, "s3.check_failed", "worker_id", c->worker_id, "bucket",
                          c->cfg->bucket, "why", why, "error", bc_error_message(err),
                          LOG_INT("retry_s", retry_s), "effect",
                          "/readyz is 503; jobs using S3 fail and are retried", NULL);
}

static void *run(void *arg)
{
        struct s3_check *c = arg;
        unsigned retry_s = RETRY_MIN_S;
        pthread_mutex_lock(&c->lock);
        while (!c->stop) {
                pthread_mutex_unlock(&c->lock);
                char why[160];
                struct bc_error err = BC_ERROR_INIT;
                bool ok = storage_check_bucket(c->cfg, why, &err) >= 0;
                pthread_mutex_lock(&c->lock);
                /* A new reason is a change too (AccessDenied after NoSuchBucket). */
                bool changed = !c->checked || c->ok != ok || (!ok && strcmp(c->why, why) != 0);
                c->checked = true;
                c->ok = ok;
                if (!ok)
                        snprintf(c->why, sizeof(c->why), "%s", why);
                pthread_mutex_unlock(&c->lock);
                if (changed)
                        report(c, ok, why, &err, retry_s);
                bc_error_clear(&err);

                unsigned wait_s = ok ? S3_CHECK_OK_INTERVAL_S : retry_s;
                retry_s = ok ? RETRY_MIN_S : retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : retry_s * 2;
                struct timespec until = bc_monotonic_after_ms((uint64_t)wait_s * 1000);
                pthread_mutex_lock(&c->lock);
                while (!c->stop &&
                       pthread_cond_timedwait(&c->wake, &c->lock, &until) != ETIMEDOUT) {
                }
        }
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

int s3_check_start(const struct storage_config *cfg, const char *worker_id, struct s3_check **ret,
                   struct bc_error *err)
{
        struct s3_check *c = calloc(1, sizeof(*c));
        if (!c)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        c->cfg = cfg;
        c->worker_id = worker_id;
        pthread_mutex_init(&c->lock, NULL);
        /* Waits measured on the monotonic clock: a wall-clock step must
         * not stall or rush the checks. */
        bc_cond_init_monotonic(&c->wake);
        int e = pthread_create(&c->thread, NULL, run, c);
        if (e != 0) {
                pthread_cond_destroy(&c->wake);
                pthread_mutex_destroy(&c->lock);
                free(c);
                return bc_error_set(err, BC_INTERNAL, e, "S3 check thread: %s", strerror(e));
        }
        *ret = c;
        return 0;
}

bool s3_check_ready(struct s3_check *c, char *reason, size_t size)
{
        if (!c)
                return true;
        pthread_mutex_lock(&c->lock);
        bool ok = c->checked && c->ok;
        if (!ok)
                snprintf(reason, size, "s3: %s", c->checked ? c->why : "checking");
        pthread_mutex_unlock(&c->lock);
        return ok;
}

void s3_check_stop(struct s3_check *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->stop = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
        pthread_cond_destroy(&c->wake);
        pthread_mutex_destroy(&c->lock);
        free(c);
}
