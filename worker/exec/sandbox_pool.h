/* The worker's pool of warm sandboxes (see sandbox.h, "Warm sandboxes").
 *
 * A thread keeps sandboxes ready per kind (network kind, and root: the
 * host's, or an image's; an image kind appears with the first job on it,
 * holds its own reference to the image in the cache, and goes away with
 * its sandboxes once no job asked for it for a minute): as many as were in use
 * at once over the last minute, or as many as jobs take during one build
 * (the arrival rate times the build time, plus what a claim announced),
 * plus a small prefetch (ready besides those in use), at most --warm-
 * sandboxes; a kind nobody used for a minute keeps only the prefetch (the
 * host-network kind: none).  A slot takes one when it runs a job (a
 * ready one, else the one being made longest, waited for a bounded time;
 * with none made, a cold start), and the pool makes the next one off the
 * pickup path.  Sandboxes that die while they wait are
 * replaced; when none can be made, the pool backs off and says why. */
#ifndef BC_WORKER_EXEC_SANDBOX_POOL_H
#define BC_WORKER_EXEC_SANDBOX_POOL_H

#include <stdbool.h>

#include "common/error.h"
#include "sandbox/sandbox.h"
#include "worker/metrics/metrics.h"

struct sandbox_pool;
struct storage_cache;

/* max: most ready sandboxes per kind (0: no pool, *ret = NULL).  limits:
 * what each has before its job (copied; NULL: none).  Needs
 * root (the helper refuses --warm otherwise); unprivileged, *ret = NULL
 * and every sandbox is cold.  Call from the thread that outlives every
 * job (the sandboxes die with it). */
int sandbox_pool_start(const char *helper, const char *cgroup_parent, unsigned max,
                       const struct sandbox_warm_limits *limits, struct storage_cache *images,
                       struct metrics *m, struct sandbox_pool **ret, struct bc_error *err);
/* Discards every ready sandbox and stops the thread.  NULL-safe.  Call
 * after the slots are joined. */
void sandbox_pool_stop(struct sandbox_pool *p);
/* A ready sandbox of that kind (image_sha: an image in the images cache
 * given at start, NULL: the host's root), or one being made once it is
 * ready (a few builds' time at most), or false.  Either way the
 * job counts as in flight until sandbox_pool_release with the same kind
 * (the pool sizes itself on that).  NULL-safe. */
bool sandbox_pool_take(struct sandbox_pool *p, enum sandbox_network network, const char *image_sha,
                       struct sandbox_warm *ret);
/* n jobs were just claimed and are about to take theirs: the pool starts
 * their refills now rather than after the takes (counted for the host's
 * root, network "none", for a moment).  NULL-safe. */
void sandbox_pool_expect(struct sandbox_pool *p, unsigned n);
/* A warm sandbox taken but not run (its handoff failed): the pool's
 * thread reaps it (SIGTERM, SIGKILL after a grace), not the slot. */
void sandbox_pool_discard(struct sandbox_pool *p, struct sandbox_warm *w);
/* A job that called sandbox_pool_take is over. */
void sandbox_pool_release(struct sandbox_pool *p, enum sandbox_network network,
                          const char *image_sha);

/* For the backend: how a sandbox was started, and the time from the
 * worker's handoff to the job's start. */
void sandbox_pool_count_start(struct metrics *m, bool warm);
void sandbox_pool_observe_handoff(struct metrics *m, double seconds);

#endif
