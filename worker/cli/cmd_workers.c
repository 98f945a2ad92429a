/* `boxcar workers [--json]`: the replicas, as boxcar.worker_status shows
 * them (sql/50_views.sql); the counterpart of `boxcar worker drain`. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/db/db.h"

const char workers_usage[] =
        "usage: boxcar workers [--json] [--database-url URL]\n"
        "\n"
        "Every worker the database knows, by id: host, pid, state (running,\n"
        "draining, stopped, or gone when its heartbeat is older than its lease),\n"
        "jobs running of its concurrency, its queues, whether it leads housekeeping,\n"
        "and its last heartbeat.  Drain one with boxcar worker drain ID.\n"
        "\n"
        "  --json                 one JSON object per line, the boxcar.worker_status row\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

static int list(PGconn *conn, bool json, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                json ? "select to_jsonb(w)::text from boxcar.worker_status w order by id"
                     : "select id, host, pid, state, running || '/' || concurrency,"
                       " array_to_string(queues, ','), case when is_leader then 'yes' else '' end,"
                       " to_char(heartbeat_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
                       " from boxcar.worker_status order by id",
                0, NULL, err);
        if (!res)
                return -EPROTO;
        if (!json)
                printf("%-24s %-20s %8s %-9s %7s %-24s %-6s %s\n", "ID", "HOST", "PID", "STATE",
                       "RUNNING", "QUEUES", "LEADER", "HEARTBEAT (UTC)");
        for (int i = 0; i < PQntuples(res); i++) {
                if (json)
                        printf("%s\n", PQgetvalue(res, i, 0));
                else
                        printf("%-24s %-20s %8s %-9s %7s %-24s %-6s %s\n", PQgetvalue(res, i, 0),
                               PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                               PQgetvalue(res, i, 3), PQgetvalue(res, i, 4),
                               PQgetvalue(res, i, 5), PQgetvalue(res, i, 6),
                               PQgetvalue(res, i, 7));
        }
        return 0;
}

int cmd_workers(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, workers_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = cli_take_json(&argc, argv);
        if (argc > 1) {
                fprintf(stderr, "boxcar workers: unexpected argument '%s'\n", argv[1]);
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn || list(conn, json, &err) < 0)
                return cli_fail("workers", &err);
        return 0;
}
