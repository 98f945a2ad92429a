#include "worker/metrics/wmetrics.h"
#include "version.h"

#include <stdbool.h>
#include <stdio.h>

static const char *const l_queue[] = { "queue", NULL };
static const char *const l_finished[] = { "queue", "outcome", NULL };
static const char *const l_error[] = { "queue", "code", NULL };
static const char *const l_transfer[] = { "direction", "kind", NULL };
static const char *const l_result[] = { "result", NULL };
static const char *const l_outcome[] = { "outcome", NULL };
static const char *const l_depth[] = { "queue", "state", NULL };
static const char *const l_version[] = { "version", NULL };
static const char *const l_event[] = { "event", NULL };
static const char *const l_where[] = { "where", NULL };
static const char *const l_direction[] = { "direction", NULL };
static const char *const l_cache[] = { "cache", NULL };

static const double sandbox_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25,  0.5,    1,     2.5,  5,     10 };

int wmetrics_new(struct metrics **ret, unsigned concurrency, struct bc_error *err)
{
        const struct metrics_desc families[] = {
                { "boxcar_jobs_claimed_total", "Jobs this worker claimed.", METRICS_COUNTER,
                  l_queue, NULL, 0, 0 },
                { "boxcar_jobs_finished_total",
                  "Jobs this worker finished: succeeded, failed, cancelled, retried (back to "
                  "the queue after an infrastructure failure), released (drain) or lost "
                  "(lease lost).",
                  METRICS_COUNTER, l_finished, NULL, 0, 0 },
                { "boxcar_job_errors_total", "Failed or retried jobs by error code.",
                  METRICS_COUNTER, l_error, NULL, 0, 0 },
                { "boxcar_job_duration_seconds", "Wall time of the job's command.",
                  METRICS_HISTOGRAM, l_queue, metrics_buckets_seconds, metrics_n_buckets_seconds,
                  0 },
                { "boxcar_job_pickup_latency_seconds",
                  "Time from a job being due (run_at) to its claim.", METRICS_HISTOGRAM, l_queue,
                  metrics_buckets_seconds, metrics_n_buckets_seconds, 0 },
                { "boxcar_sandbox_overhead_seconds",
                  "boxcar-sandbox's own time per run: setup before the command plus "
                  "teardown after it (its wall time minus the command's).",
                  METRICS_HISTOGRAM, NULL, sandbox_buckets,
                  sizeof(sandbox_buckets) / sizeof(sandbox_buckets[0]), 0 },
                { "boxcar_transfer_bytes_total", "Bytes moved from and to S3.", METRICS_COUNTER,
                  l_transfer, NULL, 0, 0 },
                { "boxcar_egress_bytes_total",
                  "Bytes through the egress proxy of network.allow jobs: out (from the job) "
                  "and in.",
                  METRICS_COUNTER, l_direction, NULL, 0, 0 },
                { "boxcar_egress_connections_total",
                  "Connections of network.allow jobs: allowed (proxied) or refused (a name, "
                  "address or port outside the rules, or a name resolving to a guarded "
                  "address; DNS queries for names outside them included).",
                  METRICS_COUNTER, l_result, NULL, 0, 0 },
                { "boxcar_volume_cache_lookups_total", "Volume cache lookups by result.",
                  METRICS_COUNTER, l_result, NULL, 0, 0 },
                { "boxcar_image_cache_lookups_total", "Image cache lookups by result.",
                  METRICS_COUNTER, l_result, NULL, 0, 0 },
                { "boxcar_artifact_cache_lookups_total",
                  "Artifact bases taken from the artifact cache (a hit is neither downloaded "
                  "nor extracted), by result.",
                  METRICS_COUNTER, l_result, NULL, 0, 0 },
                { "boxcar_images_cached", "Images unpacked in this worker's image cache.",
                  METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_image_cache_bytes", "Bytes of the images unpacked in the cache.",
                  METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_image_extract_seconds",
                  "Time to download and unpack an image on a cache miss.", METRICS_HISTOGRAM, NULL,
                  metrics_buckets_seconds, metrics_n_buckets_seconds, 0 },
                { "boxcar_workspaces_ready",
                  "Workspace filesystems made ahead and ready for a job (--warm-workspaces).",
                  METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_workspace_events_total",
                  "Workspace filesystems: made (by the pool, off the pickup path), taken (a "
                  "job got a ready one), cold (made on the job's path), reused (wiped after a "
                  "job and ready again), discarded (unmounted and deleted).",
                  METRICS_COUNTER, l_event, NULL, 0, 0 },
                { "boxcar_workspace_make_seconds",
                  "Time to make a workspace filesystem (mke2fs, loop device, mount), by the "
                  "pool or cold on the job's path.",
                  METRICS_HISTOGRAM, l_where, sandbox_buckets,
                  sizeof(sandbox_buckets) / sizeof(sandbox_buckets[0]), 0 },
                { "boxcar_workspace_wipe_seconds",
                  "Time to wipe a used workspace filesystem for reuse.", METRICS_HISTOGRAM, NULL,
                  sandbox_buckets, sizeof(sandbox_buckets) / sizeof(sandbox_buckets[0]), 0 },
                { "boxcar_disk_waits_total",
                  "Jobs that waited for the work dir's disk (--disk-reserve), by how the wait "
                  "ended: started, released (back to the queue), cancelled, failed (it could "
                  "never fit).",
                  METRICS_COUNTER, l_outcome, NULL, 0, 0 },
                { "boxcar_disk_reclaimed_bytes_total",
                  "Bytes of cache entries (volumes, artifacts, images) evicted to make room "
                  "for a job on the work dir's disk.",
                  METRICS_COUNTER, l_cache, NULL, 0, 0 },
                { "boxcar_webhook_deliveries_total", "Webhook delivery attempts by outcome.",
                  METRICS_COUNTER, l_outcome, NULL, 0, 0 },
                { "boxcar_jobs_running", "Jobs running on this worker.", METRICS_GAUGE, NULL, NULL,
                  0, 0 },
                { "boxcar_slots_free", "Idle job slots.", METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_slots", "Configured concurrency.", METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_queue_depth",
                  "Jobs per queue and state, from boxcar.active_queue_stats.", METRICS_GAUGE,
                  l_depth, NULL, 0, 0 },
                { "boxcar_queue_oldest_age_seconds", "Age of the oldest due job per queue.",
                  METRICS_GAUGE, l_queue, NULL, 0, 0 },
                { "boxcar_db_up", "1 while the control connection is up.", METRICS_GAUGE, NULL,
                  NULL, 0, 0 },
                { "boxcar_worker_draining", "1 while draining.", METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_is_leader", "1 while this replica runs housekeeping.", METRICS_GAUGE,
                  NULL, NULL, 0, 0 },
                { "boxcar_storage_bytes_stored",
                  "Bytes of S3 objects (layers, manifests, tarballs) boxcar knows of, as the "
                  "last storage collection on this replica counted them.",
                  METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_storage_bytes_reclaimed_total",
                  "Bytes of S3 objects the storage collections on this replica deleted.",
                  METRICS_COUNTER, NULL, NULL, 0, 0 },
                { "boxcar_storage_objects_deleted_total",
                  "S3 objects the storage collections on this replica deleted.", METRICS_COUNTER,
                  NULL, NULL, 0, 0 },
                { "boxcar_sessions_live", "Live session sandboxes this worker holds.",
                  METRICS_GAUGE, NULL, NULL, 0, 0 },
                { "boxcar_session_events_total",
                  "Session sandboxes started (start: a new session, resume: from its last "
                  "checkpoint), evicted (--max-sessions) and ended idle, on this worker.",
                  METRICS_COUNTER, l_event, NULL, 0, 0 },
                { "boxcar_build_info", "Build version (always 1).", METRICS_GAUGE, l_version, NULL,
                  0, 0 },
        };
        struct metrics *m = NULL;
        int r = metrics_new(&m, err);
        if (r >= 0)
                r = metrics_register_all(m, families, sizeof(families) / sizeof(families[0]), err);
        if (r < 0) {
                metrics_free(m);
                return r;
        }
        const char *version[] = { BOXCAR_VERSION };
        metrics_gauge_set(m, "boxcar_build_info", version, 1);
        metrics_gauge_set(m, "boxcar_slots", NULL, concurrency);
        metrics_gauge_set(m, "boxcar_slots_free", NULL, concurrency);
        *ret = m;
        return 0;
}

void wmetrics_claimed(struct metrics *m, const char *queue, double pickup_s)
{
        const char *q[] = { queue };
        metrics_counter_add(m, "boxcar_jobs_claimed_total", q, 1);
        metrics_histogram_observe(m, "boxcar_job_pickup_latency_seconds", q,
                                  pickup_s < 0 ? 0 : pickup_s);
}

void wmetrics_finished(struct metrics *m, const char *queue, const char *outcome,
                       const char *error_code, double duration_s)
{
        const char *f[] = { queue, outcome };
        metrics_counter_add(m, "boxcar_jobs_finished_total", f, 1);
        if (error_code && *error_code) {
                const char *e[] = { queue, error_code };
                metrics_counter_add(m, "boxcar_job_errors_total", e, 1);
        }
        if (duration_s >= 0) {
                const char *q[] = { queue };
                metrics_histogram_observe(m, "boxcar_job_duration_seconds", q, duration_s);
        }
}

void wmetrics_sandbox_overhead(struct metrics *m, double seconds)
{
        metrics_histogram_observe(m, "boxcar_sandbox_overhead_seconds", NULL,
                                  seconds < 0 ? 0 : seconds);
}

void wmetrics_transfer(struct metrics *m, const char *direction, const char *kind, uint64_t bytes)
{
        const char *l[] = { direction, kind };
        metrics_counter_add(m, "boxcar_transfer_bytes_total", l, (double)bytes);
}

void wmetrics_egress(struct metrics *m, uint64_t bytes_out, uint64_t bytes_in,
                     uint64_t connections, uint64_t refused)
{
        const char *out[] = { "out" }, *in[] = { "in" };
        metrics_counter_add(m, "boxcar_egress_bytes_total", out, (double)bytes_out);
        metrics_counter_add(m, "boxcar_egress_bytes_total", in, (double)bytes_in);
        const char *ok[] = { "allowed" }, *no[] = { "refused" };
        metrics_counter_add(m, "boxcar_egress_connections_total", ok, (double)connections);
        metrics_counter_add(m, "boxcar_egress_connections_total", no, (double)refused);
}

void wmetrics_cache(struct metrics *m, bool hit)
{
        const char *l[] = { hit ? "hit" : "miss" };
        metrics_counter_add(m, "boxcar_volume_cache_lookups_total", l, 1);
}

void wmetrics_artifact_cache(struct metrics *m, bool hit)
{
        const char *l[] = { hit ? "hit" : "miss" };
        metrics_counter_add(m, "boxcar_artifact_cache_lookups_total", l, 1);
}

void wmetrics_image(struct metrics *m, bool hit, double extract_s, uint64_t cached,
                    uint64_t cached_bytes)
{
        const char *l[] = { hit ? "hit" : "miss" };
        metrics_counter_add(m, "boxcar_image_cache_lookups_total", l, 1);
        if (!hit)
                metrics_histogram_observe(m, "boxcar_image_extract_seconds", NULL, extract_s);
        metrics_gauge_set(m, "boxcar_images_cached", NULL, (double)cached);
        metrics_gauge_set(m, "boxcar_image_cache_bytes", NULL, (double)cached_bytes);
}

void wmetrics_workspace(struct metrics *m, const char *event)
{
        const char *l[] = { event };
        metrics_counter_add(m, "boxcar_workspace_events_total", l, 1);
}

void wmetrics_disk_wait(struct metrics *m, const char *outcome)
{
        const char *l[] = { outcome };
        metrics_counter_add(m, "boxcar_disk_waits_total", l, 1);
}

void wmetrics_disk_reclaimed(struct metrics *m, const char *cache, uint64_t bytes)
{
        const char *l[] = { cache };
        metrics_counter_add(m, "boxcar_disk_reclaimed_bytes_total", l, (double)bytes);
}

void wmetrics_workspaces_ready(struct metrics *m, unsigned n)
{
        metrics_gauge_set(m, "boxcar_workspaces_ready", NULL, n);
}

void wmetrics_workspace_make(struct metrics *m, const char *where, double seconds)
{
        const char *l[] = { where };
        metrics_histogram_observe(m, "boxcar_workspace_make_seconds", l, seconds);
}

void wmetrics_workspace_wipe(struct metrics *m, double seconds)
{
        metrics_histogram_observe(m, "boxcar_workspace_wipe_seconds", NULL, seconds);
}

void wmetrics_webhook(struct metrics *m, const char *outcome)
{
        const char *l[] = { outcome };
        metrics_counter_add(m, "boxcar_webhook_deliveries_total", l, 1);
}

void wmetrics_slots(struct metrics *m, unsigned busy, unsigned total)
{
        metrics_gauge_set(m, "boxcar_jobs_running", NULL, busy);
        metrics_gauge_set(m, "boxcar_slots_free", NULL, total - busy);
}

void wmetrics_db_up(struct metrics *m, bool up)
{
        metrics_gauge_set(m, "boxcar_db_up", NULL, up);
}

void wmetrics_draining(struct metrics *m, bool draining)
{
        metrics_gauge_set(m, "boxcar_worker_draining", NULL, draining);
}

void wmetrics_storage_gc(struct metrics *m, uint64_t stored, uint64_t reclaimed, long deleted)
{
        metrics_gauge_set(m, "boxcar_storage_bytes_stored", NULL, (double)stored);
        metrics_counter_add(m, "boxcar_storage_bytes_reclaimed_total", NULL, (double)reclaimed);
        metrics_counter_add(m, "boxcar_storage_objects_deleted_total", NULL, (double)deleted);
}

void wmetrics_sessions_live(struct metrics *m, size_t n)
{
        metrics_gauge_set(m, "boxcar_sessions_live", NULL, (double)n);
}

void wmetrics_session_event(struct metrics *m, const char *event)
{
        const char *l[] = { event };
        metrics_counter_add(m, "boxcar_session_events_total", l, 1);
}

void wmetrics_leader(struct metrics *m, bool leader)
{
        metrics_gauge_set(m, "boxcar_is_leader", NULL, leader);
}

void wmetrics_queue_depth_begin(struct metrics *m)
{
        metrics_family_clear(m, "boxcar_queue_depth");
        metrics_family_clear(m, "boxcar_queue_oldest_age_seconds");
}

void wmetrics_queue_depth(struct metrics *m, const char *queue, double queued, double scheduled,
                          double running, double oldest_age_s)
{
        const char *a[] = { queue, "queued" }, *b[] = { queue, "scheduled" },
                   *c[] = { queue, "running" }, *q[] = { queue };
        metrics_gauge_set(m, "boxcar_queue_depth", a, queued);
        metrics_gauge_set(m, "boxcar_queue_depth", b, scheduled);
        metrics_gauge_set(m, "boxcar_queue_depth", c, running);
        metrics_gauge_set(m, "boxcar_queue_oldest_age_seconds", q, oldest_age_s);
}
