/* The worker's Prometheus metrics: the families it exports and one typed
 * helper per thing it counts.  Every helper accepts m == NULL (metrics
 * off) and does nothing then. */
#ifndef BC_WORKER_METRICS_WMETRICS_H
#define BC_WORKER_METRICS_WMETRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/metrics/metrics.h"

int wmetrics_new(struct metrics **ret, unsigned concurrency, struct bc_error *err);

void wmetrics_claimed(struct metrics *m, const char *queue, double pickup_s);
/* outcome: succeeded, failed, cancelled, retried, released, lost */
void wmetrics_finished(struct metrics *m, const char *queue, const char *outcome,
                       const char *error_code, double duration_s);
void wmetrics_sandbox_overhead(struct metrics *m, double seconds);
/* direction: download or upload; kind: volume or artifact */
void wmetrics_transfer(struct metrics *m, const char *direction, const char *kind, uint64_t bytes);
void wmetrics_cache(struct metrics *m, bool hit);
/* An artifact base taken from the artifact cache (under an overlay): a hit
 * costs no download and no extraction. */
void wmetrics_artifact_cache(struct metrics *m, bool hit);
/* One network.allow job's egress: bytes through its proxy, connections
 * let through and attempts refused. */
void wmetrics_egress(struct metrics *m, uint64_t bytes_out, uint64_t bytes_in,
                     uint64_t connections, uint64_t refused);
/* An image lookup: hit or miss (then extract_s, the download and unpack
 * time), and the image cache's entries and bytes afterwards. */
void wmetrics_image(struct metrics *m, bool hit, double extract_s, uint64_t cached,
                    uint64_t cached_bytes);
/* Workspace filesystems (ws_pool.c).  event: made (by the pool), taken (a
 * job got a ready one), cold (made on the job's path), reused (wiped and
 * ready again), discarded; where: pool or cold. */
void wmetrics_workspace(struct metrics *m, const char *event);
void wmetrics_workspaces_ready(struct metrics *m, unsigned n);
void wmetrics_workspace_make(struct metrics *m, const char *where, double seconds);
void wmetrics_workspace_wipe(struct metrics *m, double seconds);
/* A job that waited for disk (disk_budget.h); outcome: started, released,
 * cancelled, failed. */
void wmetrics_disk_wait(struct metrics *m, const char *outcome);
/* Bytes a cache ("volumes", "artifacts", "images") evicted for a job. */
void wmetrics_disk_reclaimed(struct metrics *m, const char *cache, uint64_t bytes);
/* outcome: delivered, retry, failed, lease_lost */
void wmetrics_webhook(struct metrics *m, const char *outcome);
void wmetrics_slots(struct metrics *m, unsigned busy, unsigned total);
void wmetrics_db_up(struct metrics *m, bool up);
void wmetrics_draining(struct metrics *m, bool draining);
void wmetrics_leader(struct metrics *m, bool leader);
/* After a storage collection: bytes stored, and what it deleted. */
/* Live sessions held (a gauge), and their starts, resumes, evictions and
 * idle ends: event "start", "resume", "eviction" or "idle_end". */
void wmetrics_sessions_live(struct metrics *m, size_t n);
void wmetrics_session_event(struct metrics *m, const char *event);
void wmetrics_storage_gc(struct metrics *m, uint64_t stored, uint64_t reclaimed, long deleted);
/* Replaces the queue depth gauges with one row per queue. */
void wmetrics_queue_depth_begin(struct metrics *m);
void wmetrics_queue_depth(struct metrics *m, const char *queue, double queued, double scheduled,
                          double running, double oldest_age_s);

#endif
