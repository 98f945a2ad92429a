/* `boxcar webhooks ls|retry|verify|secret|rotate`. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/cli/cmd_webhooks_secret.h"
#include "worker/cli/cmd_webhooks_verify.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

const char webhooks_usage[] =
        "usage: boxcar webhooks ls [--failed] [--limit N] [--json]\n"
        "       boxcar webhooks retry [--json] ID\n"
        "       boxcar webhooks verify [OPTIONS]\n"
        "       boxcar webhooks secret --scope S [--endpoint URL] [--json]\n"
        "       boxcar webhooks rotate --scope S [--endpoint URL] [--overlap DUR] [--json]\n"
        "\n"
        "  ls      recent deliveries, newest first, one JSON object per line: --failed\n"
        "          only those that gave up, --limit at most N (1-10000, default: 100)\n"
        "  retry   redrive a failed delivery now (same webhook-id, fresh retry schedule)\n"
        "  verify  check a received webhook's signature, as a consumer would (its own\n"
        "          options: boxcar webhooks verify --help)\n"
        "  secret  the secrets that sign scope S's deliveries now (S: acme for queue\n"
        "          acme/q), or those to URL, one line each: whsec_..., its generation,\n"
        "          scope-wide or endpoint, and until when it is valid.  Derived from the\n"
        "          master key in $BOXCAR_WEBHOOK_SECRET, which signs nothing itself:\n"
        "          hand each tenant its own\n"
        "  rotate  add a new generation of S's secret (of URL's own with --endpoint:\n"
        "          from then on deliveries to URL are signed with it, not with the\n"
        "          scope's); the valid ones keep signing for --overlap (default 24h;\n"
        "          0 revokes them at once).  Prints the secrets as secret does\n"
        "\n"
        "  --json                 ls: accepted, its lines are JSON anyway; retry: print\n"
        "                         {\"id\", \"status\", \"queued\"} (queued: it was redriven;\n"
        "                         otherwise status says what the delivery is); secret and\n"
        "                         rotate: {\"scope\", \"endpoint\", \"generation\" (rotate),\n"
        "                         \"secrets\": [{\"secret\", \"key_endpoint\", \"generation\",\n"
        "                         \"master_key\", \"created_at\", \"valid_until\"}]}\n"
        "  --database-url URL     PostgreSQL URL, for all but verify (default: $DATABASE_URL)\n";

struct ls_args {
        bool failed;
        long limit;
};

/* Checked before connecting: a usage error needs no database. */
static int parse_ls(int argc, char **argv, struct ls_args *a, struct bc_error *err)
{
        *a = (struct ls_args){ false, 100 };
        const char *limit = "100";
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--failed") == 0)
                        a->failed = true;
                else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc)
                        limit = argv[++i];
                else if (strcmp(argv[i], "--limit") == 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--limit needs a value");
                else
                        return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                            argv[i]);
        }
        char *end = NULL;
        a->limit = strtol(limit, &end, 10);
        if (end == limit || *end || a->limit < 1 || a->limit > 10000)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--limit: '%s' is not a number from 1 to 10000", limit);
        return 0;
}

static int list(PGconn *conn, const struct ls_args *a, struct bc_error *err)
{
        _cleanup_(api_json_rows_done) struct api_json_rows ls = { 0 };
        if (api_webhook_list(conn, a->failed, a->limit, &ls, err) < 0)
                return -1;
        for (size_t i = 0; i < ls.n; i++)
                cli_print_json_text(ls.rows[i].text);
        return 0;
}

static int retry(PGconn *conn, const char *id, bool json, struct bc_error *err)
{
        char st[API_STATUS_MAX];
        if (api_webhook_retry(conn, id, st, err) < 0)
                return -1;
        if (json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "id", id);
                cJSON_AddStringToObject(o, "status", st);
                cJSON_AddBoolToObject(o, "queued", strcmp(st, "pending") == 0);
                if (!cli_print_json(o))
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                return 0;
        }
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
        bool json = cli_take_json(&argc, argv); /* ls prints JSON lines anyway */
        if (argc >= 2 && (strcmp(argv[1], "secret") == 0 || strcmp(argv[1], "rotate") == 0))
                return webhooks_secret_main(argc - 1, argv + 1, url, json);
        bool is_ls = argc >= 2 && strcmp(argv[1], "ls") == 0;
        bool is_retry = argc == 3 && strcmp(argv[1], "retry") == 0;
        if (!is_ls && !is_retry) {
                fputs(webhooks_usage, stderr);
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        struct ls_args ls;
        if (is_ls && parse_ls(argc, argv, &ls, &err) < 0) {
                int st = cli_fail("webhooks ls", &err);
                bc_error_clear(&err);
                return st;
        }
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (conn)
                r = is_ls ? list(conn, &ls, &err) : retry(conn, argv[2], json, &err);
        if (!conn || r < 0) {
                int st = cli_fail(is_ls ? "webhooks ls" : "webhooks retry", &err);
                bc_error_clear(&err);
                return st;
        }
        return 0;
}
