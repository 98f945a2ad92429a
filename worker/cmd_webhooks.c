/* `boxcar webhooks ls|retry|verify`. */
#include <stdio.h>
#include <string.h>

#include "worker/cli.h"
#include "worker/cmd_webhooks_verify.h"
#include "worker/db.h"

const char webhooks_usage[] =
        "usage: boxcar webhooks ls [--failed] [--limit N]   recent deliveries, one JSON per line\n"
        "       boxcar webhooks retry ID                     redrive a failed delivery now (same\n"
        "                                                    webhook-id, fresh retry schedule)\n"
        "       boxcar webhooks verify --secret S ...        check a received webhook's signature\n"
        "                                                    (boxcar webhooks verify --help)\n";

static int list(PGconn *conn, int argc, char **argv, struct bc_error *err)
{
        const char *failed = "false", *limit = "100";
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--failed") == 0)
                        failed = "true";
                else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc)
                        limit = argv[++i];
                else
                        return bc_error_set(err, BC_USAGE, 22, "unexpected argument '%s'", argv[i]);
        }
        const char *p[] = { failed, limit };
        _cleanup_pgresult_ PGresult *res =
                db_exec(conn, "select boxcar.webhook_list($1::boolean, $2::int)", 2, p, err);
        if (!res)
                return -1;
        for (int i = 0; i < PQntuples(res); i++)
                printf("%s\n", PQgetvalue(res, i, 0));
        return 0;
}

static int retry(PGconn *conn, const char *id, struct bc_error *err)
{
        const char *p[] = { id };
        _cleanup_pgresult_ PGresult *res =
                db_exec(conn, "select boxcar.webhook_retry($1)", 1, p, err);
        if (!res)
                return -1;
        const char *st = PQgetvalue(res, 0, 0);
        if (strcmp(st, "pending") == 0)
                printf("%s: queued for delivery\n", id);
        else
                printf("%s: not retried, it is %s\n", id, st);
        return 0;
}

int cmd_webhooks(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "verify") == 0)
                return webhooks_verify_main(argc - 1, argv + 1);
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, webhooks_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool is_ls = argc >= 2 && strcmp(argv[1], "ls") == 0;
        bool is_retry = argc == 3 && strcmp(argv[1], "retry") == 0;
        if (!is_ls && !is_retry) {
                fputs(webhooks_usage, stderr);
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (conn)
                r = is_ls ? list(conn, argc, argv, &err) : retry(conn, argv[2], &err);
        if (!conn || r < 0) {
                int st = cli_fail(is_ls ? "webhooks ls" : "webhooks retry", &err);
                bc_error_clear(&err);
                return st;
        }
        return 0;
}
