/* The claim protocol of the main loop: claiming jobs into free slots,
 * settling a claim whose rows came before its commit (the claim gate, and
 * the jobs left in doubt when the commit's answer is lost), and handing
 * back the jobs the database says this worker holds that none of its
 * slots runs.  Runs on the main loop's thread, on the control
 * connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "worker/daemon/daemon-internal.h"
#include "worker/daemon/queue.h"
#include "worker/db/db.h"
#include "worker/exec/claim_gate.h"
#include "worker/exec/sandbox_pool.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"

/* The next id of a space-separated list (a heartbeat's, a query's) into
 * one; the rest of the list, or NULL at its end. */
const char *loop_next_id(const char *list, char one[40])
{
        if (!list || !*list)
                return NULL;
        size_t n = strcspn(list, " ");
        snprintf(one, 40, "%.*s", (int)(n < 39 ? n : 39), list);
        return list + n + (list[n] == ' ');
}

/* The jobs of a claim whose rows came before its commit (queue_claim's
 * pending): in their slots, being prepared, while the database makes the
 * claim durable; then the gate lets them start, or stops them unstarted.
 * One whose claim committed unseen (the answer lost with the connection)
 * is held in the database without running here: loop_heartbeat() releases it. */
static bool settle_claim(struct loop *l, struct claimed_job **jobs, size_t got)
{
        /* Without a gate (out of memory), the jobs wait here for the commit. */
        struct claim_gate *gate = got ? claim_gate_new((unsigned)got + 1) : NULL;
        for (size_t i = 0; gate && i < got; i++) {
                jobs[i]->gate = gate;
                slots_assign(&l->slots, jobs[i]);
        }
        struct bc_error err = BC_ERROR_INIT;
        bool committed = queue_claim_commit(l->conn, &err) == 0;
        bool unknown = !committed && db_connection_lost(l->conn);
        /* Until the gate is decided no slot is done with its job: every
         * jobs[i] is still there. */
        for (size_t i = 0; i < got; i++) {
                if (committed)
                        wmetrics_claimed(l->metrics, jobs[i]->queue, jobs[i]->pickup_s);
                else if (gate)
                        slots_stop(&l->slots, jobs[i]->id, JOB_STOP_LOST);
                if (unknown)
                        in_doubt_add(&l->in_doubt, jobs[i]->id);
        }
        if (!committed)
                log_event(LOG_WARN, "claim.not_committed", "worker_id", l->cfg->worker_id,
                          LOG_INT("jobs", (long long)got), "error", bc_error_message(&err),
                          "effect",
                          "its jobs were stopped before they started; they stay "
                          "queued (or are released by the next heartbeat)",
                          NULL);
        claim_gate_decide(gate, committed);
        claim_gate_unref(gate);
        for (size_t i = 0; !gate && i < got; i++) {
                if (committed)
                        slots_assign(&l->slots, jobs[i]);
                else
                        claimed_job_free(jobs[i]);
        }
        if (!committed)
                loop_control_failed(l, "claim", &err);
        return committed;
}

void loop_claim(struct loop *l)
{
        unsigned n = slots_free(&l->slots);
        struct claimed_job **jobs = NULL;
        size_t got = 0;
        bool pending = false;
        struct bc_error err = BC_ERROR_INIT;
        l->want_claim = false;
        l->next_poll = bc_mono_ms() + ms(l->cfg->poll_interval_s);
        if (queue_claim(l->conn, l->cfg, l->instance, n, &jobs, &got, &pending, &err) < 0) {
                loop_control_failed(l, "claim", &err);
                return;
        }
        /* Their slots take warm sandboxes next: the pool starts the
         * refills now. */
        sandbox_pool_expect(l->sandbox_pool, (unsigned)got);
        bool held = pending ? settle_claim(l, jobs, got) : true;
        for (size_t i = 0; !pending && i < got; i++) {
                wmetrics_claimed(l->metrics, jobs[i]->queue, jobs[i]->pickup_s);
                slots_assign(&l->slots, jobs[i]);
        }
        free(jobs);
        if (!held)
                return;
        wmetrics_slots(l->metrics, l->slots.busy, l->slots.n);
        /* A full batch means more may be waiting: claim again as soon as a
         * slot frees up, without waiting for a notification. */
        l->want_claim = got == n;
        /* A short one may be a rate limit: claim again at its next token
         * (no notification says when), not at the next poll.  Asked only
         * while one of our queues has a rate, and once a poll interval in
         * case one was set since: not a second round trip per claim. */
        uint64_t now = bc_mono_ms();
        bool ask = got < n && (l->rated || now >= l->next_rate_check);
        if (ask)
                l->next_rate_check = now + ms(l->cfg->poll_interval_s);
        int delay = ask ? queue_claim_delay_ms(l->conn, l->cfg, &l->rated, &err) : 0;
        if (delay < 0)
                loop_control_failed(l, "claim_delay_ms", &err);
        else if (delay > 0 && bc_mono_ms() + (uint64_t)delay < l->next_poll)
                l->next_poll = bc_mono_ms() + (uint64_t)delay;
}

/* Jobs the database says this worker holds that no slot runs.  Renewed by
 * every heartbeat, they would stay "running" for as long as this process
 * lives.  A claim that committed while its answer was lost with the
 * connection (in_doubt.h): its jobs never started, and go back to the
 * queue, their attempt not counted.  Any other (a result the database
 * refused to record, after the command ran): retried as a lost attempt,
 * counted.  Claims run on this thread, so a held job claimed before the
 * heartbeat is in its slot by now. */
void loop_release_unrun(struct loop *l, const char *held)
{
        _cleanup_free_ char *running = slots_running_ids(&l->slots);
        char one[40];
        for (const char *rest = loop_next_id(held, one); rest; rest = loop_next_id(rest, one)) {
                if (!running || strstr(running, one))
                        continue;
                struct bc_error err = BC_ERROR_INIT;
                bool never_ran = in_doubt_take(&l->in_doubt, one);
                int r = never_ran ? queue_release(l->conn, l->cfg->worker_id, one, &err)
                                  : queue_retry_lost(l->conn, l->cfg->worker_id, one,
                                                     "held by its worker, which no longer ran it "
                                                     "(its result could not be recorded)",
                                                     &err);
                if (r < 0) {
                        loop_control_failed(l, never_ran ? "release" : "retry_or_fail", &err);
                        return;
                }
                if (r > 0)
                        log_event(
                                LOG_WARN, "job.released_unrun", "job_id", one, "worker_id",
                                l->cfg->worker_id, "detail",
                                never_ran
                                        ? "its claim committed unseen (the connection was lost): "
                                          "back in the queue, its attempt not counted"
                                        : "held by this worker in the database but run by none of "
                                          "its slots: retried as a lost attempt",
                                NULL);
        }
}
