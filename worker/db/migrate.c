#include "worker/db/migrate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/io.h"
#include "version.h"
#include "worker/db/db.h"

/* An arbitrary constant: the advisory lock key all boxcar migrations take. */
#define MIGRATE_LOCK_KEY "7320451886421763"

static const char *const bootstrap_sql = "create schema if not exists boxcar;"
                                         "create table if not exists boxcar.schema_migrations ("
                                         "  version text primary key,"
                                         "  checksum text not null,"
                                         "  applied_at timestamptz not null default now())";

/* Migrations renamed after a release (two landed together and one moved
 * up): a database that recorded the old name applied the very same file,
 * and is switched to the new name by the next migrate. */
static const struct {
        const char *old, *now;
} renamed[] = {
        { "0007_queue_names", "0008_queue_names" },
};

static bool is_migration(const struct sql_file *f)
{
        return strncmp(f->name, "migrations/", 11) == 0;
}

/* "migrations/0001_jobs.sql" → "0001_jobs" */
static void migration_version(const struct sql_file *f, char *buf, size_t size)
{
        const char *base = f->name + 11;
        size_t n = strcspn(base, ".");
        snprintf(buf, size, "%.*s", (int)n, base);
}

static bool knows_version(const struct sql_file *files, unsigned n, const char *version)
{
        for (size_t i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++)
                if (strcmp(version, renamed[i].old) == 0)
                        version = renamed[i].now;
        for (unsigned i = 0; i < n; i++) {
                char v[256];
                if (!is_migration(&files[i]))
                        continue;
                migration_version(&files[i], v, sizeof(v));
                if (strcmp(v, version) == 0)
                        return true;
        }
        return false;
}

/* The database's migrations against this binary's: one it does not know
 * means the schema is newer (a newer boxcar migrated it); one it knows
 * that is missing means the schema is older (when want_all). */
static int check_versions(PGconn *conn, const struct sql_file *files, unsigned n, bool want_all,
                          const char *upgrade, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select version from boxcar.schema_migrations order by version", 0, NULL,
                err);
        if (!res)
                return -EPROTO;
        for (int row = 0; row < PQntuples(res); row++) {
                const char *have = PQgetvalue(res, row, 0);
                if (!knows_version(files, n, have))
                        return bc_error_set(err, BC_CONFIG, EPROTO,
                                            "the database schema is newer than this boxcar "
                                            "(" BOXCAR_VERSION "; the database has migration "
                                            "%s, which this boxcar does not know): %s",
                                            have, upgrade);
        }
        for (unsigned i = 0; want_all && i < n; i++) {
                char v[256];
                if (!is_migration(&files[i]))
                        continue;
                migration_version(&files[i], v, sizeof(v));
                bool applied = false;
                for (int row = 0; row < PQntuples(res) && !applied; row++)
                        applied = strcmp(PQgetvalue(res, row, 0), v) == 0;
                if (!applied)
                        return bc_error_set(err, BC_CONFIG, EPROTO,
                                            "the database schema is older than this boxcar "
                                            "(migration %s is not applied): run boxcar migrate",
                                            v);
        }
        return 0;
}

int migrate_check_schema(PGconn *conn, const struct sql_file *files, unsigned n,
                         struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select to_regclass('boxcar.schema_migrations') is not null", 0, NULL, err);
        if (!res)
                return -EPROTO;
        if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
                return bc_error_set(err, BC_CONFIG, ENOENT,
                                    "schema boxcar not found: run boxcar migrate");
        return check_versions(conn, files, n, true, "upgrade the worker", err);
}

static int apply_migration(PGconn *conn, const struct sql_file *f, struct migrate_report *report,
                           struct bc_error *err)
{
        char version[256], sum[65];
        migration_version(f, version, sizeof(version));
        bc_sha256_hex(f->text, strlen(f->text), sum);
        const char *params[] = { version };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select checksum from boxcar.schema_migrations where version = $1", 1,
                params, err);
        if (!res)
                return bc_error_prefix(err, "%s", f->name);
        if (PQntuples(res) == 1) {
                if (strcmp(PQgetvalue(res, 0, 0), sum) != 0)
                        return bc_error_set(err, BC_DATABASE, EPROTO,
                                            "%s was changed after it was applied (checksum %s, "
                                            "applied %s): never edit an applied migration, "
                                            "add a new one",
                                            f->name, sum, PQgetvalue(res, 0, 0));
                report->already++;
                return 0;
        }
        int r = db_exec_script(conn, f->text, err);
        if (r < 0)
                return bc_error_prefix(err, "%s", f->name);
        const char *ins[] = { version, sum };
        _cleanup_pgresult_ PGresult *done = db_exec(
                conn, "insert into boxcar.schema_migrations (version, checksum) values ($1, $2)",
                2, ins, err);
        if (!done)
                return bc_error_prefix(err, "%s", f->name);
        report->applied++;
        return 0;
}

static int migrate_in_transaction(PGconn *conn, const struct sql_file *files, unsigned n,
                                  struct migrate_report *report, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *lock = db_exec(
                conn, "select pg_advisory_xact_lock(" MIGRATE_LOCK_KEY ")", 0, NULL, err);
        if (!lock)
                return -EPROTO;
        int r = db_exec_script(conn, bootstrap_sql, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < sizeof(renamed) / sizeof(renamed[0]); i++) {
                const char *p[] = { renamed[i].old, renamed[i].now };
                _cleanup_pgresult_ PGresult *res = db_exec(
                        conn,
                        "update boxcar.schema_migrations set version = $2 where version = $1", 2,
                        p, err);
                if (!res)
                        return -EPROTO;
        }
        r = check_versions(conn, files, n, false, "upgrade boxcar", err);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < n; i++) {
                if (!is_migration(&files[i]))
                        continue;
                r = apply_migration(conn, &files[i], report, err);
                if (r < 0)
                        return r;
        }
        for (unsigned i = 0; i < n; i++) {
                if (is_migration(&files[i]))
                        continue;
                r = db_exec_script(conn, files[i].text, err);
                if (r < 0)
                        return bc_error_prefix(err, "%s", files[i].name);
                report->api_files++;
        }
        return 0;
}

int migrate_run(PGconn *conn, const struct sql_file *files, unsigned n,
                struct migrate_report *ret_report, struct bc_error *err)
{
        struct migrate_report report = { 0 };
        int r = db_exec_script(conn, "begin", err);
        if (r < 0)
                return r;
        r = migrate_in_transaction(conn, files, n, &report, err);
        if (r < 0) {
                struct bc_error ignored = BC_ERROR_INIT;
                db_exec_script(conn, "rollback", &ignored);
                bc_error_clear(&ignored);
                return r;
        }
        r = db_exec_script(conn, "commit", err);
        if (r < 0)
                return bc_error_prefix(err, "commit");
        *ret_report = report;
        return 0;
}
