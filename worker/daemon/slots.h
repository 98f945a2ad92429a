/* The job slots of one worker: --concurrency threads, each running one job
 * at a time, and a reporter thread recording their results, so a slow or
 * reconnecting report never stalls the main loop's claims.  A slot is its
 * job's services (worker/job/services.h): its events, live output and
 * lookups go through the slots' shared connections, and nothing about a
 * job is written, or reported, unless its claim committed. */
#ifndef BC_WORKER_DAEMON_SLOTS_H
#define BC_WORKER_DAEMON_SLOTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "worker/config/config.h"
#include "worker/job/job.h"

struct backend;
struct sandbox_pool;
struct slot;
struct store;

struct slots {
        const struct worker_config *cfg;
        struct store *store;
        struct metrics *metrics;  /* or NULL */
        struct ws_pool *ws_pool;  /* or NULL; set before slots_start */
        struct dir_bin *dirs;     /* or NULL; set before slots_start */
        struct disk_budget *disk; /* or NULL; set before slots_start */
        /* For the namespace backend (backend.h, backend_options), set
         * before slots_start: the job cgroups' parent (or NULL; not copied,
         * it must outlive the reaper's drain) and the warm sandboxes (or
         * NULL; stopped after slots_join). */
        const char *cgroup_parent;
        struct sandbox_pool *sandbox_pool;
        struct backend *backend; /* made by slots_start, freed by slots_join */
        const char *instance;    /* the worker's instance id; set before slots_start */
        /* The live sessions (worker/session/): made by slots_start under
         * the namespace backend with --max-sessions above 0, else NULL;
         * stopped by slots_join once no job runs (a final checkpoint each). */
        struct session_registry *sessions;
        /* --secret-keys: loaded by slots_start, freed by slots_join; or NULL. */
        struct secret_keyring *secret_keys;
        struct db_pool *db; /* the slots' shared connections */
        struct slot *slot;
        unsigned n;
        unsigned busy; /* main thread's count of assigned slots */
        int done_fd;   /* eventfd: readable when a slot finished */
        pthread_mutex_t lock;
        _Atomic bool closing; /* threads exit once idle */
        _Atomic bool hard;    /* stop retrying reports: exiting now */
        /* The reporter thread records finished slots' results, several
         * per call (boxcar.report_batch); a queue of slots under
         * report_lock. */
        pthread_t reporter;
        bool reporter_started;
        pthread_mutex_t report_lock;
        pthread_cond_t report_wake;     /* the reporter: work queued */
        pthread_cond_t report_recorded; /* the slots: a batch is done */
        struct slot *report_head, *report_tail;
        bool report_stop;
        /* Slots whose result is recorded and that are not yet finished:
         * a batch's slots free up together, for one claim to fill. */
        _Atomic unsigned releasing;
};

/* Chooses the jobs' backend (cfg->sandbox) and starts cfg->concurrency
 * slot threads.  Signals must already be blocked in the caller, so the
 * threads inherit the mask. */
int slots_start(struct slots *s, const struct worker_config *cfg, struct store *store,
                struct bc_error *err);

/* Hands job to an idle slot (takes ownership).  Returns 0, or -EBUSY when
 * every slot is busy (the job is not taken then). */
int slots_assign(struct slots *s, struct claimed_job *job);

/* Marks slots that finished as idle; call when done_fd is readable.
 * The slots of a batch of results recorded together finish within
 * moments of each other: it waits for the rest of them (at most
 * --report-wait), so that one claim fills them all rather than one
 * claim each.  Returns how many became free. */
unsigned slots_collect(struct slots *s);

unsigned slots_free(const struct slots *s);

/* Asks the slot running job_id (or every busy slot when job_id is NULL) to
 * stop for the given reason.  Returns how many slots were asked. */
unsigned slots_stop(struct slots *s, const char *job_id, enum job_stop why);

/* Space-separated ids of the jobs the slots run (caller frees). */
char *slots_running_ids(struct slots *s);

/* Drops jobs from ids_held-complement: stops every running job whose id is
 * not in held (space-separated) and that was assigned before since_ms. */
void slots_stop_unheld(struct slots *s, const char *held, uint64_t since_ms);

/* Waits for the threads to finish their jobs and exit, then frees. */
void slots_join(struct slots *s);

#endif
