/* Shared by the slots' files only (slots.c the threads, slot_services.c
 * the job services a slot gives its job, reporter.c the reporter thread);
 * the worker's API is slots.h. */
#ifndef BC_WORKER_DAEMON_SLOTS_INTERNAL_H
#define BC_WORKER_DAEMON_SLOTS_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/dynbuf.h"
#include "worker/daemon/queue.h"
#include "worker/daemon/slots.h"
#include "worker/job/services.h"

struct slot {
        struct slots *owner;
        unsigned index;
        pthread_t thread;
        pthread_cond_t wake;
        struct claimed_job *job; /* under owner->lock */
        bool busy;               /* assigned and not yet collected */
        bool finished;           /* the thread is done with the job */
        uint64_t assigned_ms;
        _Atomic int stop;                  /* enum job_stop */
        _Atomic bool reporting;            /* the job ended; its outcome is being recorded */
        int cancel_fd;                     /* eventfd the job's supervisor polls */
        const struct claimed_job *current; /* the slot thread's job */
        /* Events kept back to go with a later call: comma-separated JSON
         * objects, and when the first was kept (0: none). */
        struct dynbuf events;
        uint64_t events_since_ms;
        /* The report handed to the reporter thread (under report_lock). */
        struct queue_report_row row;
        struct slot *report_next;
        bool report_done;
        bool report_retried; /* recorded after a lost connection */
        int report_rc;       /* 1 held, 0 not held, <0 not recorded */
        /* The slot thread's: its result was recorded, counted in the
         * owner's releasing until the slot is finished. */
        bool releasing;
        /* When its job started running (bc_mono_ms), 0 once its result is
         * queued for the reporter (or it has none): for the reporter, a
         * result that may come soon. */
        _Atomic uint64_t running_since_ms;
};

/* ---- slot_services.c ---- */
/* The services of job run by sl (ctx: the slot). */
void slot_services(struct slot *sl, const struct claimed_job *job, struct job_services *ret);
/* Whether job's claim committed (claim_gate.h), waiting until it is
 * decided: the one place the worker asks. */
bool slot_claim_held(const struct claimed_job *job);
/* The events kept back to go with the result, as a JSON array (caller
 * frees), or NULL if none; and forgetting them. */
char *slot_kept_events(const struct slot *sl);
void slot_forget_events(struct slot *sl);

/* ---- reporter.c ---- */
/* The reporter thread (arg: the slots). */
void *slots_reporter_main(void *arg);
/* Hands the outcome (and the job's kept-back events) to the reporter and
 * waits until it is recorded: the slot is free only then. */
void slot_report(struct slot *sl, const struct claimed_job *job, const struct job_outcome *o);
/* A slot whose job ended with no result to record (its claim did not
 * hold): no longer one the reporter waits for. */
void slot_no_report(struct slot *sl);

#endif
