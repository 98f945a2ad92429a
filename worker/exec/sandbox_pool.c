/* The warm sandbox pool (sandbox_pool.h): its thread, which makes, checks
 * and reaps sandboxes, and what the slots call (take, discard, release).
 * How many it keeps of each kind, and when, is sandbox_pool_sizing.c. */
#include "worker/exec/sandbox_pool-internal.h"

#include <errno.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "storage/storage.h"
#include "worker/log/log.h"

/* Making sandboxes ahead is background work: the pool's thread, and the
 * sandboxes it spawns, yield the CPU to the jobs' pickup path (a take, a
 * handoff, a cold start) when they compete for one.  A warm sandbox's
 * supervisor puts itself, its init and the job's process back at the
 * worker's priority once it is built (sandbox/warm.c): asleep until its
 * job, then woken ahead of the sandboxes being made.  Mildly: in a burst
 * that keeps the CPUs busy the refill falls behind (make bench, 1000
 * sandboxed jobs at concurrency 8: 156 started cold at +5, 7 at +0),
 * while at 50 jobs/s commit -> command start inside fell from 4.1-5.2 to
 * 3.1-3.6 ms (p50). */
#define POOL_NICE 5
/* While the pool is behind (a job started cold within this), it makes
 * its sandboxes at the jobs' priority: each cold start is the same build,
 * at that priority, on the job's path, so yielding to it only makes the
 * next job cold too (traced: under a saturating burst, the niced builds
 * fell behind and about one job in six started cold). */
#define BEHIND_MS 1000
/* A discarded sandbox that has not exited by then is killed. */
#define DISCARD_GRACE_MS 5000

static const char *const l_state[] = { "state", NULL };
static const char *const l_path[] = { "path", NULL };
static const double handoff_buckets[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.002,
                                          0.005,  0.01,    0.025,  0.05,  0.1 };

static const struct metrics_desc families[] = {
        { "boxcar_warm_sandboxes",
          "Warm sandboxes by state: starting, ready; in_use: sandboxed jobs running (warm or cold).",
          METRICS_GAUGE, l_state, NULL, 0, 0 },
        { "boxcar_sandbox_starts_total",
          "Sandboxes started for jobs: warm (from the pool) or cold (the pool was empty, "
          "disabled, or a warm sandbox failed at handoff).",
          METRICS_COUNTER, l_path, NULL, 0, 0 },
        { "boxcar_warm_sandbox_failures_total",
          "Warm sandboxes that could not be made or died while waiting (replaced).",
          METRICS_COUNTER, NULL, NULL, 0, 0 },
        { "boxcar_sandbox_handoff_seconds",
          "From the worker handing a job to a warm sandbox to the job's start inside it.",
          METRICS_HISTOGRAM, NULL, handoff_buckets,
          sizeof(handoff_buckets) / sizeof(handoff_buckets[0]), 0 },
};

void sandbox_pool_count_start(struct metrics *m, bool warm)
{
        const char *l[] = { warm ? "warm" : "cold" };
        metrics_counter_add(m, "boxcar_sandbox_starts_total", l, 1);
}

void sandbox_pool_observe_handoff(struct metrics *m, double seconds)
{
        metrics_histogram_observe(m, "boxcar_sandbox_handoff_seconds", NULL,
                                  seconds < 0 ? 0 : seconds);
}

static void wake(struct sandbox_pool *p)
{
        uint64_t one = 1;
        (void)!write(p->wake_fd, &one, sizeof(one));
}

void sbpool_discard_locked(struct sandbox_pool *p, struct sandbox_warm *w)
{
        sandbox_warm_discard(w);
        if (p->n_dying < MAX_DYING) {
                p->dying[p->n_dying++] = (struct dying){ .w = *w, .since_ms = bc_mono_ms() };
        } else {
                sandbox_warm_reap(w, true, p->cgroup_parent);
        }
}

/* Under the lock: the kind of (network, image sha or NULL), or NULL. */
static struct pool_kind *find_kind(struct sandbox_pool *p, enum sandbox_network network,
                                   const char *sha)
{
        if (!sha)
                return &p->kinds[network == SANDBOX_NET_HOST];
        for (size_t i = 2; i < p->n_kinds; i++)
                if (p->kinds[i].network == network && strcmp(p->kinds[i].sha, sha) == 0)
                        return &p->kinds[i];
        return NULL;
}

/* Under the lock: a new image kind holding *image (taken over), or NULL
 * when MAX_IMAGE_KINDS are in use. */
static struct pool_kind *add_kind(struct sandbox_pool *p, enum sandbox_network network,
                                  struct storage_cache_entry **image)
{
        if (p->n_kinds >= MAX_KINDS)
                return NULL;
        struct pool_kind *k = &p->kinds[p->n_kinds++];
        struct sandbox_warm *items = k->items; /* allocated once, at start */
        *k = (struct pool_kind){ .network = network, .image = *image, .items = items };
        snprintf(k->sha, sizeof(k->sha), "%s", storage_cache_entry_sha256(*image));
        *image = NULL;
        return k;
}

static double elapsed_ms(const struct timespec *since)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)(t.tv_sec - since->tv_sec) * 1e3 +
               (double)(t.tv_nsec - since->tv_nsec) / 1e6;
}

/* Under the lock: w came ready (made, so the pool is not failing). */
static void note_ready(struct sandbox_pool *p, const struct sandbox_warm *w)
{
        p->backoff_ms = 0;
        sbpool_note_built(p, elapsed_ms(&w->started));
}

static bool started_before(const struct sandbox_warm *a, const struct sandbox_warm *b)
{
        return a->started.tv_sec != b->started.tv_sec ? a->started.tv_sec < b->started.tv_sec
                                                      : a->started.tv_nsec < b->started.tv_nsec;
}

/* A sandbox still being made is taken rather than a cold one started:
 * the cold one would be the same build from its first step, on the same
 * busy CPUs (a burst: the pool fell behind the takes), and the one being
 * made would wait for the next job.  It waits at most WAIT_BUILDS builds'
 * time (the pool's average), at least WAIT_MIN_MS, at most WAIT_MAX_MS,
 * and WAIT_MAX_MS before the pool has timed a build: its starting guess
 * (10 ms) cut builds of 300 ms short in a worker just started under
 * load, each one discarded and made again cold.  One slower than that is
 * stuck or starved: it is discarded (a stuck one kept would be the next
 * take's oldest again), and the job starts cold.  build_ms is 0 when
 * none was timed. */
#define WAIT_BUILDS 3
#define WAIT_MIN_MS 50
#define WAIT_MAX_MS 1000

static bool wait_building(struct sandbox_pool *p, struct sandbox_warm *w, double build_ms,
                          struct sandbox_warm *ret)
{
        /* Made at the pool's nice: now a job waits for it.  Best effort
         * (CAP_SYS_NICE); its supervisor does the same once built. */
        if (p->renice)
                (void)setpriority(PRIO_PGRP, (id_t)w->pid, p->job_nice);
        double bound = build_ms > 0 ? build_ms * WAIT_BUILDS : WAIT_MAX_MS;
        bound = bound < WAIT_MIN_MS ? WAIT_MIN_MS : bound > WAIT_MAX_MS ? WAIT_MAX_MS : bound;
        uint64_t deadline = bc_mono_ms() + (uint64_t)bound;
        for (;;) {
                struct bc_error err = BC_ERROR_INIT;
                int r = sandbox_warm_check(w, &err);
                uint64_t now = bc_mono_ms();
                if (r == 1) {
                        pthread_mutex_lock(&p->mu);
                        note_ready(p, w);
                        pthread_mutex_unlock(&p->mu);
                        *ret = *w;
                        return true;
                }
                if (r < 0) {
                        pthread_mutex_lock(&p->mu);
                        sbpool_note_failure(p, &err, now);
                        sbpool_discard_locked(p, w);
                        pthread_mutex_unlock(&p->mu);
                        bc_error_clear(&err);
                        wake(p);
                        return false;
                }
                if (now >= deadline)
                        break;
                struct pollfd pfd = { .fd = w->ctl, .events = POLLIN };
                (void)poll(&pfd, 1, (int)(deadline - now));
        }
        log_event(LOG_WARN, "sandbox.warm_slow", LOG_INT("waited_ms", (long long)bound),
                  LOG_INT("build_ms", (long long)build_ms), "effect",
                  "the sandbox being made is discarded; this job starts cold", NULL);
        sandbox_pool_discard(p, w);
        return false;
}

bool sandbox_pool_take(struct sandbox_pool *p, enum sandbox_network network, const char *image_sha,
                       struct sandbox_warm *ret)
{
        if (!p || (image_sha && !p->images))
                return false;
        /* A first job on an image: the pool takes its own reference (a
         * cache hit, the job holds one) before it makes sandboxes on it. */
        struct storage_cache_entry *image = NULL;
        pthread_mutex_lock(&p->mu);
        bool known = find_kind(p, network, image_sha) != NULL;
        pthread_mutex_unlock(&p->mu);
        if (!known) {
                struct bc_error err = BC_ERROR_INIT;
                if (storage_cache_acquire(p->images, NULL, image_sha, NULL, &image, &err) < 0)
                        image = NULL;
                bc_error_clear(&err);
        }
        bool got = false;
        pthread_mutex_lock(&p->mu);
        struct pool_kind *k = find_kind(p, network, image_sha);
        if (!k && image)
                k = add_kind(p, network, &image);
        if (!k) {
                pthread_mutex_unlock(&p->mu);
                storage_cache_release(p->images, image);
                return false;
        }
        uint64_t now = bc_mono_ms();
        sbpool_note_take(k, now);
        if (p->expected)
                p->expected--;
        for (size_t i = 0; i < k->n && !got; i++) {
                if (!k->items[i].ready)
                        continue;
                struct bc_error err = BC_ERROR_INIT;
                /* A sandbox that died while it waited is the pool's to replace. */
                if (sandbox_warm_check(&k->items[i], &err) == 1) {
                        *ret = k->items[i];
                        sbpool_remove_at(k, i);
                        got = true;
                }
                bc_error_clear(&err);
        }
        /* None ready: the pool is behind (it builds at the jobs'
         * priority for a while), and the sandbox being made longest is
         * this job's to wait for. */
        struct sandbox_warm building = { .ctl = -1 };
        bool wait = false;
        if (!got) {
                p->last_miss_ms = now;
                size_t oldest = k->n;
                for (size_t i = 0; i < k->n; i++)
                        if (!k->items[i].ready &&
                            (oldest == k->n || started_before(&k->items[i], &k->items[oldest])))
                                oldest = i;
                if (oldest < k->n) {
                        building = k->items[oldest];
                        sbpool_remove_at(k, oldest);
                        wait = true;
                }
        }
        k->in_use++;
        if (k->in_use > k->peak_cur)
                k->peak_cur = k->in_use;
        double build_ms = p->builds_timed ? p->build_ms : 0;
        pthread_mutex_unlock(&p->mu);
        /* Someone else added the kind meanwhile. */
        storage_cache_release(p->images, image);
        wake(p);
        if (wait)
                got = wait_building(p, &building, build_ms, ret);
        return got;
}

/* How long a claim's announcement holds: its jobs take theirs within
 * milliseconds, or not at all (unsandboxed, another kind, failed). */
#define EXPECT_MS 100

void sandbox_pool_expect(struct sandbox_pool *p, unsigned n)
{
        if (!p || !n)
                return;
        pthread_mutex_lock(&p->mu);
        uint64_t now = bc_mono_ms();
        p->expected = now < p->expect_until_ms ? p->expected + n : n;
        p->expect_until_ms = now + EXPECT_MS;
        pthread_mutex_unlock(&p->mu);
        wake(p);
}

void sandbox_pool_discard(struct sandbox_pool *p, struct sandbox_warm *w)
{
        pthread_mutex_lock(&p->mu);
        sbpool_discard_locked(p, w);
        pthread_mutex_unlock(&p->mu);
        wake(p);
}

void sandbox_pool_release(struct sandbox_pool *p, enum sandbox_network network,
                          const char *image_sha)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->mu);
        struct pool_kind *k = find_kind(p, network, image_sha);
        if (k && k->in_use)
                k->in_use--;
        pthread_mutex_unlock(&p->mu);
        wake(p);
}

/* Not under the lock: starts what sbpool_rebalance planned; the first
 * failure backs off the rest. */
static void start_planned(struct sandbox_pool *p, const struct planned *plan, size_t n,
                          uint64_t now)
{
        for (size_t i = 0; i < n; i++) {
                struct bc_error err = BC_ERROR_INIT;
                struct sandbox_warm w;
                int r = sandbox_warm_start(p->helper, plan[i].network, p->cgroup_parent,
                                           plan[i].root, &p->limits, &w, &err);
                pthread_mutex_lock(&p->mu);
                if (r < 0) {
                        sbpool_note_failure(p, &err, now);
                } else {
                        struct pool_kind *k = &p->kinds[plan[i].kind];
                        k->items[k->n++] = w;
                }
                pthread_mutex_unlock(&p->mu);
                bc_error_clear(&err);
                if (r < 0)
                        return;
        }
}

/* Under the lock: what the sandboxes said (ready, failed, died). */
static void check_all(struct sandbox_pool *p, uint64_t now)
{
        for (size_t i = 0; i < p->n_kinds; i++) {
                struct pool_kind *k = &p->kinds[i];
                for (size_t j = 0; j < k->n;) {
                        struct bc_error err = BC_ERROR_INIT;
                        bool was_ready = k->items[j].ready;
                        int r = sandbox_warm_check(&k->items[j], &err);
                        if (r < 0) {
                                if (was_ready)
                                        metrics_counter_add(p->m,
                                                            "boxcar_warm_sandbox_failures_total",
                                                            NULL, 1);
                                else
                                        sbpool_note_failure(p, &err, now);
                                sbpool_discard_locked(p, &k->items[j]);
                                sbpool_remove_at(k, j);
                        } else {
                                if (r == 1 && !was_ready)
                                        note_ready(p, &k->items[j]);
                                j++;
                        }
                        bc_error_clear(&err);
                }
        }
}

/* Reaps the discarded sandboxes outside the lock (removing a cgroup takes
 * a while); those still running go back on the list. */
static void reap_dying(struct sandbox_pool *p, uint64_t now, bool force)
{
        struct dying d[MAX_DYING];
        pthread_mutex_lock(&p->mu);
        size_t n = p->n_dying;
        memcpy(d, p->dying, n * sizeof(*d));
        p->n_dying = 0;
        pthread_mutex_unlock(&p->mu);
        for (size_t i = 0; i < n;) {
                if (sandbox_warm_reap(&d[i].w, force || now - d[i].since_ms > DISCARD_GRACE_MS,
                                      p->cgroup_parent))
                        d[i] = d[--n];
                else
                        i++;
        }
        pthread_mutex_lock(&p->mu);
        for (size_t i = 0; i < n; i++)
                if (p->n_dying < MAX_DYING)
                        p->dying[p->n_dying++] = d[i];
                else /* more were discarded meanwhile */
                        sandbox_warm_reap(&d[i].w, true, p->cgroup_parent);
        pthread_mutex_unlock(&p->mu);
}

static void update_gauges(struct sandbox_pool *p)
{
        unsigned ready = 0, starting = 0, in_use = 0;
        for (size_t i = 0; i < p->n_kinds; i++) {
                in_use += p->kinds[i].in_use;
                for (size_t j = 0; j < p->kinds[i].n; j++)
                        *(p->kinds[i].items[j].ready ? &ready : &starting) += 1;
        }
        const char *l[1];
        l[0] = "ready";
        metrics_gauge_set(p->m, "boxcar_warm_sandboxes", l, ready);
        l[0] = "starting";
        metrics_gauge_set(p->m, "boxcar_warm_sandboxes", l, starting);
        l[0] = "in_use";
        metrics_gauge_set(p->m, "boxcar_warm_sandboxes", l, in_use);
}

/* Whether a sandbox this worker spawns may put its process group back
 * from the pool's nice + 5 at the worker's: CAP_SYS_NICE, which a helper
 * exec'd by root gets exactly when it is in the bounding set.
 * Nothing else will do: the group's init and job process run as another
 * uid, whose nice only that capability may set (an RLIMIT_NICE would
 * lower the supervisor's own alone).  The least-privilege deployments
 * (deploy/README.md) do not grant it: there a sandbox made at + 5 would
 * fail when it tried to wait at the jobs' priority. */
static bool may_restore_priority(void)
{
        return prctl(PR_CAPBSET_READ, CAP_SYS_NICE, 0, 0, 0) == 1;
}

static void *pool_main(void *arg)
{
        struct sandbox_pool *p = arg;
        struct pollfd fds[1 + MAX_KINDS * 256];
        /* This thread's nice, not the worker's (Linux: per thread). */
        int base = getpriority(PRIO_PROCESS, 0);
        bool niced = false;
        if (!may_restore_priority())
                log_event(LOG_INFO, "sandbox.pool_priority", "reason",
                          "no CAP_SYS_NICE to put a warm sandbox back at the jobs' priority once "
                          "built",
                          "effect", "warm sandboxes are made at the jobs' priority", NULL);
        else if (setpriority(PRIO_PROCESS, (id_t)gettid(), base + POOL_NICE) < 0)
                log_event(LOG_WARN, "sandbox.pool_priority", "error", strerror(errno), "effect",
                          "warm sandboxes are made at the jobs' priority", NULL);
        else
                niced = true;
        bool behind = false;
        for (;;) {
                uint64_t now = bc_mono_ms();
                pthread_mutex_lock(&p->mu);
                if (p->stop) {
                        pthread_mutex_unlock(&p->mu);
                        break;
                }
                sbpool_roll_window(p, now);
                check_all(p, now);
                struct storage_cache_entry *idle[MAX_IMAGE_KINDS];
                size_t n_idle = 0;
                sbpool_drop_idle_kinds(p, now, idle, &n_idle);
                struct planned plan[MAX_STARTING];
                size_t n_plan = sbpool_rebalance(p, now, plan);
                update_gauges(p);
                size_t n = 0;
                fds[n++] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
                for (size_t i = 0; i < p->n_kinds; i++)
                        for (size_t j = 0; j < p->kinds[i].n && n < ELEMENTSOF(fds); j++)
                                fds[n++] = (struct pollfd){ .fd = p->kinds[i].items[j].ctl,
                                                            .events = POLLIN };
                int timeout = sbpool_wait_ms(p, now, p->n_dying ? 100 : 1000);
                pthread_mutex_unlock(&p->mu);
                for (size_t i = 0; i < n_idle; i++)
                        storage_cache_release(p->images, idle[i]);
                reap_dying(p, now, false);
                if (n_plan && niced) {
                        pthread_mutex_lock(&p->mu);
                        bool b = p->last_miss_ms && now - p->last_miss_ms < BEHIND_MS;
                        pthread_mutex_unlock(&p->mu);
                        /* Lowering a nice back needs CAP_SYS_NICE: niced
                         * says it is there.  A failure leaves it as it is. */
                        if (b != behind && setpriority(PRIO_PROCESS, (id_t)gettid(),
                                                       b ? base : base + POOL_NICE) == 0)
                                behind = b;
                }
                if (n_plan) {
                        /* Round again: the new ones' sockets join the poll. */
                        start_planned(p, plan, n_plan, now);
                        continue;
                }
                /* A slot may take (and close) one of these meanwhile: a stale
                 * event only makes the next round look again. */
                if (poll(fds, n, timeout) > 0 && fds[0].revents) {
                        uint64_t v;
                        (void)!read(p->wake_fd, &v, sizeof(v));
                }
        }
        return NULL;
}

int sandbox_pool_start(const char *helper, const char *cgroup_parent, unsigned max,
                       const struct sandbox_warm_limits *limits, struct storage_cache *images,
                       struct metrics *m, struct sandbox_pool **ret, struct bc_error *err)
{
        *ret = NULL;
        /* Registered whether or not there is a pool: cold starts count. */
        int r = m ? metrics_register_all(m, families, ELEMENTSOF(families), err) : 0;
        if (r < 0 || max == 0 || geteuid() != 0)
                return r;
        if (max > 256)
                max = 256;
        struct sandbox_pool *p = calloc(1, sizeof(*p));
        if (!p)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        p->max = max;
        if (limits)
                p->limits = *limits;
        p->m = m;
        p->images = images;
        p->n_kinds = 2;
        p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        p->helper = strdup(helper);
        p->cgroup_parent = cgroup_parent ? strdup(cgroup_parent) : NULL;
        p->window_start_ms = bc_mono_ms();
        errno = 0;
        p->job_nice = getpriority(PRIO_PROCESS, 0);
        p->renice = !errno && may_restore_priority();
        /* Until one is timed: a cold setup's few milliseconds, doubled
         * for the pool's nice. */
        p->build_ms = 10;
        bool ok = p->wake_fd >= 0 && p->helper && (!cgroup_parent || p->cgroup_parent);
        for (size_t i = 0; i < MAX_KINDS; i++) {
                p->kinds[i].network = i == 1 ? SANDBOX_NET_HOST : SANDBOX_NET_NONE;
                p->kinds[i].items = calloc(max, sizeof(struct sandbox_warm));
                ok &= p->kinds[i].items != NULL;
        }
        r = ok ? 0 : bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        pthread_mutex_init(&p->mu, NULL);
        if (r >= 0 && (r = -pthread_create(&p->thread, NULL, pool_main, p)) < 0)
                bc_error_set(err, BC_INTERNAL, -r, "warm sandbox pool thread: %s", strerror(-r));
        if (r < 0) {
                pthread_mutex_destroy(&p->mu);
                if (p->wake_fd >= 0)
                        close(p->wake_fd);
                for (size_t i = 0; i < MAX_KINDS; i++)
                        free(p->kinds[i].items);
                free(p->helper);
                free(p->cgroup_parent);
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

void sandbox_pool_stop(struct sandbox_pool *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_mutex_unlock(&p->mu);
        wake(p);
        pthread_join(p->thread, NULL);
        for (size_t i = 0; i < MAX_KINDS; i++) {
                for (size_t j = 0; i < p->n_kinds && j < p->kinds[i].n; j++)
                        sbpool_discard_locked(p, &p->kinds[i].items[j]);
                p->kinds[i].n = 0;
                free(p->kinds[i].items);
        }
        /* They tear themselves down on SIGTERM; give them that moment. */
        uint64_t deadline = bc_mono_ms() + DISCARD_GRACE_MS;
        while (p->n_dying && bc_mono_ms() < deadline) {
                reap_dying(p, bc_mono_ms(), false);
                if (p->n_dying)
                        usleep(10000);
        }
        reap_dying(p, bc_mono_ms(), true);
        for (size_t i = 2; i < p->n_kinds; i++)
                storage_cache_release(p->images, p->kinds[i].image);
        pthread_mutex_destroy(&p->mu);
        close(p->wake_fd);
        free(p->helper);
        free(p->cgroup_parent);
        free(p);
}
