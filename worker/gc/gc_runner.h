/* The worker's storage collections: on a thread of their own, with a
 * connection of their own, so that S3 deletes never hold up the main
 * loop; one at a time per replica, and one at a time across replicas (an
 * advisory lock). */
#ifndef BC_WORKER_GC_GC_RUNNER_H
#define BC_WORKER_GC_GC_RUNNER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "storage/storage.h"

struct metrics;

struct gc_runner {
        const char *database_url;        /* not owned */
        const struct storage_config *s3; /* not owned; NULL: collections are skipped */
        struct metrics *metrics;         /* not owned; may be NULL */
        double grace_s;
        pthread_t thread;
        bool started;         /* thread to join */
        atomic_bool running;  /* a collection is under way */
        atomic_bool stopping; /* gc_runner_join: the sweep ends early */
};

/* Starts a collection unless one is under way (then nothing). */
void gc_runner_kick(struct gc_runner *r);
/* Ends the collection under way, if any, at its next object (the rest
 * waits for the next one) and waits for it. */
void gc_runner_join(struct gc_runner *r);

#endif
