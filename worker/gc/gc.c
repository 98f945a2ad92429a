/* Mark and sweep of stored objects (DESIGN §11).
 *
 * Marking is in SQL (sql/72_storage_gc.sql): an object is referenced by a
 * live version (its layers, its manifest, its bottom tree, its whole
 * tarball), or by a removed version of a storage a queued or running job
 * names.  Sweeping claims one unreferenced object at a time, in a
 * transaction that holds its row (storage_gc_claim: FOR UPDATE SKIP
 * LOCKED), deletes it from S3, forgets the row and commits.  A worker
 * registers an object before it checks or uploads it; that upsert waits
 * on the held row, so an object being deleted is uploaded again after,
 * never assumed present.  The grace period covers uploads whose version
 * is not recorded yet (a job between its upload and its completion). */
#include "worker/gc/gc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/db/db.h"
#include "worker/log/log.h"

/* Objects looked at per round trip. */
#define GC_BATCH 500

static int scalar(PGconn *conn, const char *sql, int n, const char *const *p, long long *ret,
                  struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql, n, p, err);
        if (!res)
                return -EPROTO;
        *ret = PQntuples(res) && !PQgetisnull(res, 0, 0) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                                                         : -1;
        return 0;
}

static bool command_ok(PGconn *conn, const char *sql, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql, 0, NULL, err);
        return res != NULL;
}

/* What this transaction did is dropped; a failure here ends it anyway. */
static void rollback(PGconn *conn)
{
        struct bc_error ignored = BC_ERROR_INIT;
        command_ok(conn, "rollback", &ignored);
        bc_error_clear(&ignored);
}

/* One object: claimed, deleted from S3, forgotten, in one transaction.
 * 1 deleted, 0 no longer a candidate (or S3 refused: counted), <0 a
 * database error. */
static int sweep_one(PGconn *conn, const struct storage_config *s3, const char *key,
                     const char *grace, struct gc_report *ret, struct bc_error *err)
{
        if (!command_ok(conn, "begin", err))
                return -EPROTO;
        const char *p[] = { key, grace };
        long long size = -1;
        int r = scalar(conn, "select boxcar.storage_gc_claim($1, $2::interval)", 2, p, &size, err);
        if (r < 0 || size < 0) {
                rollback(conn);
                return r;
        }
        struct bc_error s3err = BC_ERROR_INIT;
        if (storage_delete(s3, key, &s3err) < 0) {
                log_event(LOG_WARN, "storage.gc", "key", key, "error", bc_error_message(&s3err),
                          "effect", "left for the next collection", NULL);
                bc_error_clear(&s3err);
                ret->objects_failed++;
                rollback(conn);
                return 0;
        }
        _cleanup_pgresult_ PGresult *forgot = db_exec(conn, "select boxcar.storage_gc_forget($1)",
                                                      1, p, err);
        if (!forgot || !command_ok(conn, "commit", err))
                return -EPROTO;
        ret->objects_deleted++;
        ret->bytes_reclaimed += (uint64_t)size;
        return 1;
}

static int sweep(PGconn *conn, const struct storage_config *s3, const char *grace, bool dry_run,
                 const atomic_bool *stop, struct gc_report *ret, struct bc_error *err)
{
        char batch[16];
        snprintf(batch, sizeof(batch), "%d", GC_BATCH);
        const char *p[] = { grace, batch };
        for (;;) {
                _cleanup_pgresult_ PGresult *res = db_exec(
                        conn,
                        "select key, size from boxcar.storage_gc_candidates($1::interval, $2)", 2,
                        p, err);
                if (!res)
                        return -EPROTO;
                int n = PQntuples(res), deleted = 0;
                for (int i = 0; i < n; i++) {
                        if (stop && atomic_load(stop))
                                return 0;
                        if (dry_run) {
                                ret->objects_deleted++;
                                ret->bytes_reclaimed += strtoull(PQgetvalue(res, i, 1), NULL, 10);
                                continue;
                        }
                        int r = sweep_one(conn, s3, PQgetvalue(res, i, 0), grace, ret, err);
                        if (r < 0)
                                return r;
                        deleted += r;
                }
                /* A batch that deleted nothing (all failed, or claimed by
                 * another collector) would come back as it was. */
                if (dry_run || n < GC_BATCH || deleted == 0)
                        return 0;
        }
}

int gc_run(PGconn *conn, const struct storage_config *s3, double grace_s, bool dry_run,
           const atomic_bool *stop, struct gc_report *ret, struct bc_error *err)
{
        memset(ret, 0, sizeof(*ret));
        if (!s3 && !dry_run)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "S3 is not configured (BOXCAR_S3_BUCKET and the AWS_* "
                                    "variables)");
        char grace[48];
        snprintf(grace, sizeof(grace), "%.3f seconds", grace_s);
        long long n = 0;
        int r = 0;
        if (!dry_run) {
                r = scalar(conn, "select boxcar.apply_storage_retention()", 0, NULL, &n, err);
                ret->versions_removed = n > 0 ? n : 0;
                if (r >= 0)
                        r = scalar(conn, "select boxcar.purge_removed_storage_versions()", 0, NULL,
                                   &n, err);
                ret->versions_purged = n > 0 ? n : 0;
        }
        if (r >= 0)
                r = sweep(conn, s3, grace, dry_run, stop, ret, err);
        if (r >= 0)
                r = scalar(conn, "select boxcar.storage_bytes_stored()", 0, NULL, &n, err);
        if (r < 0)
                return bc_error_prefix(err, "storage gc");
        ret->bytes_stored = n > 0 ? (uint64_t)n : 0;
        return 0;
}

char *gc_report_json(const struct gc_report *r, bool dry_run)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "dry_run", dry_run);
        cJSON_AddNumberToObject(o, "versions_removed", (double)r->versions_removed);
        cJSON_AddNumberToObject(o, "versions_purged", (double)r->versions_purged);
        cJSON_AddNumberToObject(o, "objects_deleted", (double)r->objects_deleted);
        cJSON_AddNumberToObject(o, "bytes_reclaimed", (double)r->bytes_reclaimed);
        cJSON_AddNumberToObject(o, "objects_failed", (double)r->objects_failed);
        cJSON_AddNumberToObject(o, "bytes_stored", (double)r->bytes_stored);
        char *s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        return s;
}
