#include <stdio.h>

#include "worker/cli/cli.h"
#include "worker/db/db.h"
#include "worker/db/migrate.h"
#include "worker/db/sql_files.h"

/* --json: the run's counts and every migration the database has applied
 * (read after the run's transaction committed). */
static int print_json(PGconn *conn, const struct migrate_report *rep, struct bc_error *err)
{
        char applied[16], already[16], api[16];
        snprintf(applied, sizeof(applied), "%u", rep->applied);
        snprintf(already, sizeof(already), "%u", rep->already);
        snprintf(api, sizeof(api), "%u", rep->api_files);
        const char *p[] = { applied, already, api };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select jsonb_build_object('applied', $1::int, 'already_applied', $2::int,"
                " 'api_files', $3::int, 'migrations', coalesce((select jsonb_agg("
                "  jsonb_build_object('version', m.version, 'applied_at', m.applied_at)"
                "  order by m.version) from boxcar.schema_migrations m), '[]'))::text",
                3, p, err);
        if (!res)
                return -1;
        printf("%s\n", PQgetvalue(res, 0, 0));
        return 0;
}

int cmd_migrate(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, cli_commands[0].usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = cli_take_json(&argc, argv);
        if (argc > 1) {
                fprintf(stderr, "boxcar migrate: unexpected argument '%s'\n", argv[1]);
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-migrate", &err);
        struct migrate_report rep;
        if (!conn || migrate_run(conn, sql_files, sql_files_count, &rep, &err) < 0 ||
            (json && print_json(conn, &rep, &err) < 0)) {
                int st = cli_fail("migrate", &err);
                bc_error_clear(&err);
                return st;
        }
        if (!json)
                printf("migrations: %u applied, %u already applied; %u SQL API files applied\n",
                       rep.applied, rep.already, rep.api_files);
        return 0;
}
