/* `boxcar workers [--json]`: the replicas, as boxcar.worker_status shows
 * them (sql/50_views.sql); the counterpart of `boxcar worker drain`. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/cli/cli.h"
#include "worker/config/config.h"
#include "worker/db/api.h"
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

static int list_json(PGconn *conn, struct bc_error *err)
{
        _cleanup_(api_json_rows_done) struct api_json_rows w = { 0 };
        int r = api_workers_json(conn, &w, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < w.n; i++)
                cli_print_json_text(w.rows[i].text);
        return 0;
}

static int list(PGconn *conn, struct bc_error *err)
{
        _cleanup_(api_worker_rows_done) struct api_worker_rows w = { 0 };
        int r = api_workers(conn, &w, err);
        if (r < 0)
                return r;
        printf("%-24s %-20s %8s %-9s %7s %-24s %-6s %s\n", "ID", "HOST", "PID", "STATE", "RUNNING",
               "QUEUES", "LEADER", "HEARTBEAT (UTC)");
        for (size_t i = 0; i < w.n; i++) {
                const struct api_worker_row *o = &w.rows[i];
                printf("%-24s %-20s %8s %-9s %7s %-24s %-6s %s\n", o->id, o->host, o->pid,
                       o->state, o->load, o->queues, o->leader ? "yes" : "", o->heartbeat_utc);
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
        if (!conn || (json ? list_json(conn, &err) : list(conn, &err)) < 0)
                return cli_fail("workers", &err);
        return 0;
}

/* `boxcar worker drain ID`: asks a replica, on any host, to drain. */
int cmd_worker_drain(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, config_worker_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = cli_take_json(&argc, argv);
        if (argc != 3 || strcmp(argv[1], "drain") != 0) {
                fprintf(stderr,
                        "usage: boxcar worker drain [--database-url URL] [--json] WORKER_ID\n");
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        r = conn ? api_request_drain(conn, argv[2], &err) : -1;
        if (r < 0) {
                int st = cli_fail("worker drain", &err);
                bc_error_clear(&err);
                return st;
        }
        if (r == 0) {
                fprintf(stderr,
                        "boxcar worker drain: no running worker %s (see boxcar.worker_status)\n",
                        argv[2]);
                return 1;
        }
        if (json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "worker_id", argv[2]);
                cJSON_AddBoolToObject(o, "drain_requested", true);
                return cli_print_json(o) ? 0 : 1;
        }
        printf("drain requested: %s stops claiming and exits once its jobs are done\n", argv[2]);
        return 0;
}

/* `worker drain` takes --database-url before or after the subcommand. */
bool cli_is_worker_drain(int argc, char **argv)
{
        int i = 1;
        while (i < argc &&
               (strncmp(argv[i], "--database-url=", 15) == 0 ||
                strcmp(argv[i], "--database-url") == 0 || strcmp(argv[i], "--json") == 0))
                i += strcmp(argv[i], "--database-url") == 0 ? 2 : 1;
        return i < argc && strcmp(argv[i], "drain") == 0;
}
