#include "worker/exec/sandbox_pool.h"

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

/* Ready beyond what is in use, per kind in use. */
#define PREFETCH 2
/* How long demand is remembered (the pool shrinks to the prefetch after). */
#define DEMAND_WINDOW_MS 60000
/* Sandboxes being made at once: a refill must not starve running jobs. */
#define MAX_STARTING 4
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
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
/* After a take, while the kind still has a ready sandbox, its refill
 * waits this long: the taken sandbox's job is starting (the handoff, its
 * process woken, the exec), and a build started with it took the CPU that
 * process was woken on.  The nice above does not stop that: the scheduler
 * lets a running task finish its slice (EEVDF's run-to-parity, ~1.5 ms on
 * 2 CPUs) before a waking one of higher priority, and the other CPU, gone
 * idle meanwhile, did not take it (traced: woken, then 1.35 ms waiting).
 * Over the start of 400 jobs at 50/s, the job's process waited for a CPU
 * p75 193 us, p90 1.18 ms; with the wait, 26 us and 245 us.  A kind left
 * with no ready sandbox (a burst) is refilled at once: its next job would
 * start cold. */
#define REFILL_DELAY_MS 4
/* A discarded sandbox that has not exited by then is killed. */
#define DISCARD_GRACE_MS 5000
#define MAX_DYING 64
/* Images kept warm at once (each a kind per network); beyond, jobs on
 * further images start cold. */
#define MAX_IMAGE_KINDS 8
#define MAX_KINDS (2 + MAX_IMAGE_KINDS)

/* Sandboxes of one network kind on one root: the host's (kinds 0 and 1,
 * always there) or an image's (made while jobs ask for it, gone once
 * nobody has for a demand window). */
struct pool_kind {
        enum sandbox_network network;
        char sha[STORAGE_SHA256_HEX_LEN + 1];  /* "" for the host's root */
        /* The pool's own reference to the image in the cache: its tree
         * must not be evicted while sandboxes have it mounted. */
        struct storage_cache_entry *image;
        struct sandbox_warm *items;   /* starting and ready */
        size_t n;
        unsigned in_use;
        unsigned peak_cur, peak_prev; /* most in use in this and the last window */
        uint64_t last_take_ms;
};

struct dying {
        struct sandbox_warm w;
        uint64_t since_ms;
};

struct sandbox_pool {
        char *helper, *cgroup_parent;
        struct sandbox_warm_limits limits;   /* each sandbox's before its job */
        unsigned max;
        struct metrics *m;
        pthread_mutex_t mu;
        pthread_t thread;
        int wake_fd;
        bool stop;
        struct storage_cache *images;   /* may be NULL: no image kinds */
        struct pool_kind kinds[MAX_KINDS];
        size_t n_kinds;
        uint64_t window_start_ms;
        uint64_t backoff_until_ms;
        unsigned backoff_ms;
        struct dying dying[MAX_DYING];  /* under mu */
        size_t n_dying;
};

static const char *const l_state[] = { "state", NULL };
static const char *const l_path[] = { "path", NULL };
static const double handoff_buckets[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005,
                                          0.01, 0.025, 0.05, 0.1 };

static const struct metrics_desc families[] = {
        { "boxcar_warm_sandboxes",
          "Warm sandboxes by state: starting, ready; in_use: sandboxed jobs running (warm or cold).",
          METRICS_GAUGE, l_state, NULL, 0, 0 },
        { "boxcar_sandbox_starts_total",
          "Sandboxes started for jobs: warm (from the pool) or cold (the pool was empty, "
          "disabled, or a warm sandbox failed at handoff).", METRICS_COUNTER, l_path, NULL, 0, 0 },
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

static unsigned target(const struct sandbox_pool *p, const struct pool_kind *k, uint64_t now)
{
        unsigned peak = k->peak_cur > k->peak_prev ? k->peak_cur : k->peak_prev;
        if (k->in_use > peak)
                peak = k->in_use;
        /* The host-network kind and images are made only while they are
         * asked for. */
        bool wanted = (k->network == SANDBOX_NET_NONE && !k->sha[0]) ||
                      (k->last_take_ms && now - k->last_take_ms < DEMAND_WINDOW_MS);
        /* Ready ones, whatever is in use: when several slots free up at
         * once (a claim fills them together), each must find one. */
        unsigned t = wanted ? peak + PREFETCH : 0;
        return t < p->max ? t : p->max;
}

/* How long the kind's refill still waits after its last take (see
 * REFILL_DELAY_MS): 0 once due. */
static uint64_t refill_wait_ms(const struct pool_kind *k, uint64_t now)
{
        if (!k->last_take_ms || now - k->last_take_ms >= REFILL_DELAY_MS)
                return 0;
        for (size_t i = 0; i < k->n; i++)
                if (k->items[i].ready)
                        return k->last_take_ms + REFILL_DELAY_MS - now;
        return 0;
}

static void wake(struct sandbox_pool *p)
{
        uint64_t one = 1;
        (void)!write(p->wake_fd, &one, sizeof(one));
}

static void discard(struct sandbox_pool *p, struct sandbox_warm *w)
{
        sandbox_warm_discard(w);
        if (p->n_dying < MAX_DYING) {
                p->dying[p->n_dying++] = (struct dying){ .w = *w, .since_ms = bc_mono_ms() };
        } else {
                sandbox_warm_reap(w, true, p->cgroup_parent);
        }
}

static void remove_at(struct pool_kind *k, size_t i)
{
        k->items[i] = k->items[--k->n];
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
        struct sandbox_warm *items = k->items;  /* allocated once, at start */
        *k = (struct pool_kind){ .network = network, .image = *image, .items = items };
        snprintf(k->sha, sizeof(k->sha), "%s", storage_cache_entry_sha256(*image));
        *image = NULL;
        return k;
}

/* Under the lock: drops image kinds nobody asked for in a demand window
 * once their sandboxes are gone; *ret_release gets their cache
 * references, released by the caller outside the lock. */
static void drop_idle_kinds(struct sandbox_pool *p, uint64_t now,
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
        k->last_take_ms = bc_mono_ms();
        for (size_t i = 0; i < k->n && !got; i++) {
                if (!k->items[i].ready)
                        continue;
                struct bc_error err = BC_ERROR_INIT;
                /* A sandbox that died while it waited is the pool's to replace. */
                if (sandbox_warm_check(&k->items[i], &err) == 1) {
                        *ret = k->items[i];
                        remove_at(k, i);
                        got = true;
                }
                bc_error_clear(&err);
        }
        k->in_use++;
        if (k->in_use > k->peak_cur)
                k->peak_cur = k->in_use;
        pthread_mutex_unlock(&p->mu);
        /* Someone else added the kind meanwhile. */
        storage_cache_release(p->images, image);
        wake(p);
        return got;
}

void sandbox_pool_discard(struct sandbox_pool *p, struct sandbox_warm *w)
{
        pthread_mutex_lock(&p->mu);
        discard(p, w);
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

static void note_failure(struct sandbox_pool *p, const struct bc_error *err, uint64_t now)
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

/* A sandbox to start: for kind index `kind`, which stays valid until it
 * is added (kinds are dropped on the pool's thread only, and an added one
 * goes at the end). */
struct planned {
        size_t kind;
        enum sandbox_network network;
        const char *root;
};

/* Under the lock: per kind, the sandboxes to start to reach its target
 * (at most MAX_STARTING being made at once, none while backing off), or
 * one surplus ready sandbox out (shrinking is slow on purpose: demand
 * comes back in bursts).  The starts are made outside the lock
 * (start_planned): a spawn takes about a millisecond, which a job's
 * sandbox_pool_take would otherwise wait for. */
static size_t rebalance(struct sandbox_pool *p, uint64_t now, struct planned *ret)
{
        size_t starting = 0, n = 0;
        for (size_t i = 0; i < p->n_kinds; i++)
                for (size_t j = 0; j < p->kinds[i].n; j++)
                        starting += !p->kinds[i].items[j].ready;
        size_t room = now < p->backoff_until_ms || starting >= MAX_STARTING ? 0
                                                                          : MAX_STARTING - starting;
        for (size_t i = 0; i < p->n_kinds; i++) {
                struct pool_kind *k = &p->kinds[i];
                if (refill_wait_ms(k, now))
                        continue;
                unsigned t = target(p, k, now);
                for (size_t have = k->n; have < t && n < room; have++)
                        ret[n++] = (struct planned){
                                .kind = i, .network = k->network,
                                .root = k->image ? storage_cache_entry_path(k->image) : NULL };
                if (k->n <= t)
                        continue;
                for (size_t j = 0; j < k->n; j++)
                        if (k->items[j].ready) {
                                discard(p, &k->items[j]);
                                remove_at(k, j);
                                break;
                        }
        }
        return n;
}

/* Not under the lock: starts what rebalance planned; the first failure
 * backs off the rest. */
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
                        note_failure(p, &err, now);
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
                                        metrics_counter_add(p->m, "boxcar_warm_sandbox_failures_total",
                                                            NULL, 1);
                                else
                                        note_failure(p, &err, now);
                                discard(p, &k->items[j]);
                                remove_at(k, j);
                        } else {
                                if (r == 1 && !was_ready)
                                        p->backoff_ms = 0;
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
                else  /* more were discarded meanwhile */
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
        if (!may_restore_priority())
                log_event(LOG_INFO, "sandbox.pool_priority", "reason",
                          "no CAP_SYS_NICE to put a warm sandbox back at the jobs' priority once "
                          "built", "effect",
                          "warm sandboxes are made at the jobs' priority", NULL);
        else if (setpriority(PRIO_PROCESS, (id_t)gettid(), base + POOL_NICE) < 0)
                log_event(LOG_WARN, "sandbox.pool_priority", "error", strerror(errno), "effect",
                          "warm sandboxes are made at the jobs' priority", NULL);
        for (;;) {
                uint64_t now = bc_mono_ms();
                pthread_mutex_lock(&p->mu);
                if (p->stop) {
                        pthread_mutex_unlock(&p->mu);
                        break;
                }
                if (now - p->window_start_ms >= DEMAND_WINDOW_MS) {
                        for (size_t i = 0; i < p->n_kinds; i++) {
                                p->kinds[i].peak_prev = p->kinds[i].peak_cur;
                                p->kinds[i].peak_cur = p->kinds[i].in_use;
                        }
                        p->window_start_ms = now;
                }
                check_all(p, now);
                struct storage_cache_entry *idle[MAX_IMAGE_KINDS];
                size_t n_idle = 0;
                drop_idle_kinds(p, now, idle, &n_idle);
                struct planned plan[MAX_STARTING];
                size_t n_plan = rebalance(p, now, plan);
                update_gauges(p);
                size_t n = 0;
                fds[n++] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
                for (size_t i = 0; i < p->n_kinds; i++)
                        for (size_t j = 0; j < p->kinds[i].n && n < ELEMENTSOF(fds); j++)
                                fds[n++] = (struct pollfd){ .fd = p->kinds[i].items[j].ctl,
                                                            .events = POLLIN };
                int timeout = p->n_dying ? 100 : 1000;
                for (size_t i = 0; i < p->n_kinds; i++) {
                        uint64_t wait = refill_wait_ms(&p->kinds[i], now);
                        if (wait && wait < (uint64_t)timeout)
                                timeout = (int)wait;
                }
                if (p->backoff_until_ms > now && p->backoff_until_ms - now < (uint64_t)timeout)
                        timeout = (int)(p->backoff_until_ms - now);
                pthread_mutex_unlock(&p->mu);
                for (size_t i = 0; i < n_idle; i++)
                        storage_cache_release(p->images, idle[i]);
                reap_dying(p, now, false);
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
                        discard(p, &p->kinds[i].items[j]);
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
