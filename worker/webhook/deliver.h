/* Webhook delivery threads: any worker delivers any due row of the outbox
 * (boxcar.webhook_deliveries), leased with SKIP LOCKED so a worker dying
 * mid-delivery loses nothing, signed per Standard Webhooks with the secrets
 * of the job's scope (or of the endpoint), derived from the master key
 * (webhook_derive.h) at send time. */
#ifndef BC_WORKER_WEBHOOK_DELIVER_H
#define BC_WORKER_WEBHOOK_DELIVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "common/error.h"
#include "worker/config/config.h"

struct webhook_secrets;
struct deliver_thread;

struct deliverer {
        const struct worker_config *cfg;
        struct webhook_secrets *master; /* NULL: delivery disabled on this worker */
        struct metrics *metrics;        /* or NULL; set before deliverer_start */
        pthread_t *threads;
        struct deliver_thread *state; /* one per thread: connections, unrecorded attempt */
        unsigned n;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        unsigned kicks; /* NOTIFYs not yet seen by a thread */
        _Atomic bool closing;
};

/* Starts cfg->webhook_concurrency threads when BOXCAR_WEBHOOK_SECRET (the
 * master key) is set (a bad one, or more than WEBHOOK_MASTER_KEYS_MAX
 * entries, is an error); with no secret it starts none and says so in
 * *ret_disabled_reason (static string), leaving deliveries to workers that
 * can sign them. */
int deliverer_start(struct deliverer *d, const struct worker_config *cfg,
                    const char **ret_disabled_reason, struct bc_error *err);

/* Wakes a thread: something became due (NOTIFY boxcar_webhooks). */
void deliverer_kick(struct deliverer *d);

/* Lets in-flight deliveries finish (each bounded by its timeout), joins. */
void deliverer_stop(struct deliverer *d);

#endif
