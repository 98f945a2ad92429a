/* The worker's storage collections on their own thread (gc_runner.h). */
#include "worker/gc/gc_runner.h"

#include "common/cleanup.h"
#include "worker/db/db.h"
#include "worker/gc/gc.h"
#include "worker/log/log.h"
#include "worker/metrics/wmetrics.h"

static void collect(struct gc_runner *r)
{
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(r->database_url, "boxcar-storage-gc", &err);
        _cleanup_pgresult_ PGresult *lock =
                conn ? db_exec(conn, "select pg_try_advisory_lock(hashtext('boxcar.storage_gc'))",
                               0, NULL, &err)
                     : NULL;
        if (!lock) {
                log_event(LOG_WARN, "storage.gc", "error", bc_error_message(&err), "effect",
                          "skipped until the next interval", NULL);
                bc_error_clear(&err);
                return;
        }
        if (PQgetvalue(lock, 0, 0)[0] != 't') {
                log_event(LOG_DEBUG, "storage.gc", "detail", "another replica is collecting",
                          NULL);
                return;
        }
        struct gc_report rep;
        if (gc_run(conn, r->s3, r->grace_s, false, &r->stopping, &rep, &err) < 0) {
                log_event(LOG_WARN, "storage.gc", "error", bc_error_message(&err), "effect",
                          "retried at the next interval", NULL);
                bc_error_clear(&err);
                return;
        }
        wmetrics_storage_gc(r->metrics, rep.bytes_stored, rep.bytes_reclaimed,
                            rep.objects_deleted);
        log_event(rep.objects_deleted || rep.versions_removed ? LOG_INFO : LOG_DEBUG, "storage.gc",
                  LOG_INT("versions_removed", rep.versions_removed),
                  LOG_INT("versions_purged", rep.versions_purged),
                  LOG_INT("objects_deleted", rep.objects_deleted),
                  LOG_INT("bytes_reclaimed", rep.bytes_reclaimed),
                  LOG_INT("objects_failed", rep.objects_failed),
                  LOG_INT("bytes_stored", rep.bytes_stored), NULL);
}

static void *main_fn(void *arg)
{
        struct gc_runner *r = arg;
        collect(r);
        atomic_store(&r->running, false);
        return NULL;
}

void gc_runner_kick(struct gc_runner *r)
{
        if (!r->s3 || atomic_load(&r->running))
                return;
        if (r->started)
                pthread_join(r->thread, NULL);
        r->started = false;
        atomic_store(&r->running, true);
        r->started = pthread_create(&r->thread, NULL, main_fn, r) == 0;
        if (!r->started)
                atomic_store(&r->running, false);
}

void gc_runner_join(struct gc_runner *r)
{
        atomic_store(&r->stopping, true);
        if (r->started)
                pthread_join(r->thread, NULL);
        r->started = false;
}
