/* The warm sandbox pool's sizing policy (sandbox_pool.h): per kind, as
 * many ready as were in use at once over the last demand window, or as
 * jobs arrive during one build, plus a prefetch, at most --warm-sandboxes;
 * as many made at once as that arrival rate needs; a refill held back a
 * moment after a take while enough are ready; image kinds dropped once nobody asks for them; a backoff when
 * sandboxes cannot be made.  Called on the pool's thread, under its lock;
 * the thread itself, and what the slots call, are sandbox_pool.c. */
#include "worker/exec/sandbox_pool-internal.h"

#include "worker/log/log.h"
#include "worker/metrics/metrics.h"

/* Ready beyond what is in use, per kind in use. */
#define PREFETCH 2
/* How long demand is remembered (the pool shrinks to the prefetch after). */
#define DEMAND_WINDOW_MS 60000
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
/* After a take, while the kind still has a ready sandbox, its refill
 * waits this long: the taken sandbox's job is starting (the handoff, its
 * process woken, the exec), and a build started with it took the CPU that
 * process was woken on.  The pool's nice (POOL_NICE, sandbox_pool.c) does
 * not stop that: the scheduler lets a running task finish its slice
 * (EEVDF's run-to-parity, ~1.5 ms on 2 CPUs) before a waking one of
 * higher priority, and the other CPU, gone idle meanwhile, did not take
 * it (traced: woken, then 1.35 ms waiting).  Over the start of 400 jobs at
 * 50/s, the job's process waited for a CPU p75 193 us, p90 1.18 ms; with
 * the wait, 26 us and 245 us.  A kind left with no ready sandbox (a burst)
 * is refilled at once: its next job would start cold. */
#define REFILL_DELAY_MS 4

/* The arrival rate's smoothing: each take weighs 1/8 (a burst shows
 * within a few takes, one late job does not halve the rate). */
#define RATE_WEIGHT 0.125
#define BUILD_WEIGHT 0.25

void sbpool_note_take(struct pool_kind *k, uint64_t now)
{
        if (k->last_take_ms) {
                double gap = (double)(now - k->last_take_ms);
                if (gap > DEMAND_WINDOW_MS)
                        gap = DEMAND_WINDOW_MS;
                k->gap_ms = k->gap_ms > 0 ? k->gap_ms + RATE_WEIGHT * (gap - k->gap_ms) : gap;
        }
        k->last_take_ms = now;
}

void sbpool_note_built(struct sandbox_pool *p, double build_ms)
{
        /* The first timed build replaces the starting guess outright. */
        p->build_ms = p->builds_timed ? p->build_ms + BUILD_WEIGHT * (build_ms - p->build_ms)
                                      : build_ms;
        p->builds_timed = true;
}

unsigned sbpool_ahead(const struct sandbox_pool *p, size_t i, uint64_t now)
{
        const struct pool_kind *k = &p->kinds[i];
        unsigned n = i == 0 && now < p->expect_until_ms ? p->expected : 0;
        if (!k->last_take_ms || k->gap_ms <= 0)
                return n;
        /* A rate that stopped decays: the time since the last take counts
         * as a gap once it is longer than the average one. */
        double gap = k->gap_ms;
        if ((double)(now - k->last_take_ms) > gap)
                gap = (double)(now - k->last_take_ms);
        /* Rounded up: half a take expected is one to have ready. */
        double takes = p->build_ms / (gap < 0.1 ? 0.1 : gap);
        return n + (takes > p->max ? p->max : (unsigned)(takes + 0.999));
}

unsigned sbpool_target(const struct sandbox_pool *p, size_t i, uint64_t now)
{
        const struct pool_kind *k = &p->kinds[i];
        unsigned peak = k->peak_cur > k->peak_prev ? k->peak_cur : k->peak_prev;
        if (k->in_use > peak)
                peak = k->in_use;
        /* Or the takes that come while a refill is made: what a steady
         * stream of jobs, of a rate the slots clear faster than their
         * count would show, needs ready at once. */
        unsigned ahead = sbpool_ahead(p, i, now);
        if (ahead > peak)
                peak = ahead;
        /* The host-network kind and images are made only while they are
         * asked for. */
        bool wanted = (k->network == SANDBOX_NET_NONE && !k->sha[0]) ||
                      (k->last_take_ms && now - k->last_take_ms < DEMAND_WINDOW_MS);
        /* Ready ones, whatever is in use: when several slots free up at
         * once (a claim fills them together), each must find one. */
        unsigned t = wanted ? peak + PREFETCH : 0;
        return t < p->max ? t : p->max;
}

/* How long kind i's refill still waits after its last take (see
 * REFILL_DELAY_MS): 0 once due, or when the ready ones would run out
 * before a sandbox started now is made (the rate is too high for the
 * wait). */
static uint64_t refill_wait_ms(const struct sandbox_pool *p, size_t i, uint64_t now)
{
        const struct pool_kind *k = &p->kinds[i];
        if (!k->last_take_ms || now - k->last_take_ms >= REFILL_DELAY_MS)
                return 0;
        unsigned ready = 0;
        for (size_t j = 0; j < k->n; j++)
                ready += k->items[j].ready;
        return ready > sbpool_ahead(p, i, now) ? k->last_take_ms + REFILL_DELAY_MS - now : 0;
}

void sbpool_roll_window(struct sandbox_pool *p, uint64_t now)
{
        if (now - p->window_start_ms < DEMAND_WINDOW_MS)
                return;
        for (size_t i = 0; i < p->n_kinds; i++) {
                p->kinds[i].peak_prev = p->kinds[i].peak_cur;
                p->kinds[i].peak_cur = p->kinds[i].in_use;
        }
        p->window_start_ms = now;
}

void sbpool_drop_idle_kinds(struct sandbox_pool *p, uint64_t now,
                            struct storage_cache_entry **ret_release, size_t *ret_n)
{
        for (size_t i = 2; i < p->n_kinds;) {
                struct pool_kind *k = &p->kinds[i];
                if (k->n || k->in_use || now - k->last_take_ms < DEMAND_WINDOW_MS) {
                        i++;
                        continue;
                }
                ret_release[(*ret_n)++] = k->image;
                /* Keep the items arrays: swap with the last kind. */
                struct pool_kind last = p->kinds[--p->n_kinds];
                if (i < p->n_kinds) {
                        p->kinds[p->n_kinds] = *k;
                        *k = last;
                }
        }
}

void sbpool_note_failure(struct sandbox_pool *p, const struct bc_error *err, uint64_t now)
{
        metrics_counter_add(p->m, "boxcar_warm_sandbox_failures_total", NULL, 1);
        p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_MIN_MS;
        if (p->backoff_ms > BACKOFF_MAX_MS)
                p->backoff_ms = BACKOFF_MAX_MS;
        p->backoff_until_ms = now + p->backoff_ms;
        log_event(LOG_WARN, "sandbox.warm_failed", "error", bc_error_message(err),
                  LOG_INT("retry_ms", p->backoff_ms), "effect",
                  "jobs start cold (slower) until warm sandboxes can be made", NULL);
}

/* Per kind, the sandboxes to start to reach its target (at most
 * MAX_STARTING being made at once, none while backing off), or one
 * surplus ready sandbox out (shrinking is slow on purpose: demand comes
 * back in bursts).  The starts are made outside the lock (start_planned):
 * a spawn takes about a millisecond, which a job's sandbox_pool_take
 * would otherwise wait for. */
size_t sbpool_rebalance(struct sandbox_pool *p, uint64_t now, struct planned *ret)
{
        size_t starting = 0, n = 0, most = 0;
        for (size_t i = 0; i < p->n_kinds; i++) {
                for (size_t j = 0; j < p->kinds[i].n; j++)
                        starting += !p->kinds[i].items[j].ready;
                most += sbpool_ahead(p, i, now);
        }
        /* As many at once as takes are expected over one build. */
        most = most < MIN_STARTING ? MIN_STARTING : most > MAX_STARTING ? MAX_STARTING : most;
        size_t room = now < p->backoff_until_ms || starting >= most ? 0 : most - starting;
        for (size_t i = 0; i < p->n_kinds; i++) {
                struct pool_kind *k = &p->kinds[i];
                if (refill_wait_ms(p, i, now))
                        continue;
                unsigned t = sbpool_target(p, i, now);
                for (size_t have = k->n; have < t && n < room; have++)
                        ret[n++] = (struct planned){
                                .kind = i,
                                .network = k->network,
                                .root = k->image ? storage_cache_entry_path(k->image) : NULL
                        };
                if (k->n <= t)
                        continue;
                for (size_t j = 0; j < k->n; j++)
                        if (k->items[j].ready) {
                                sbpool_discard_locked(p, &k->items[j]);
                                sbpool_remove_at(k, j);
                                break;
                        }
        }
        return n;
}

int sbpool_wait_ms(const struct sandbox_pool *p, uint64_t now, int timeout_ms)
{
        for (size_t i = 0; i < p->n_kinds; i++) {
                uint64_t wait = refill_wait_ms(p, i, now);
                if (wait && wait < (uint64_t)timeout_ms)
                        timeout_ms = (int)wait;
        }
        if (p->backoff_until_ms > now && p->backoff_until_ms - now < (uint64_t)timeout_ms)
                timeout_ms = (int)(p->backoff_until_ms - now);
        return timeout_ms;
}
