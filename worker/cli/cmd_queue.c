/* `boxcar queue config|pause|resume|ls`: limits that hold across every
 * replica (boxcar.queue_config and friends, sql/38_queue_limits.sql). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/db/db.h"

const char queue_usage[] =
        "usage: boxcar queue config Q [--max-running N] [--rate R] [--json]\n"
        "       boxcar queue pause|resume Q [--json]\n"
        "       boxcar queue ls [--json]\n"
        "\n"
        "Limits enforced by the claim, whatever the number of workers.\n"
        "\n"
        "  config  set Q's limits: at most N jobs running at once, at most R jobs\n"
        "          started per second (bursts of max(1, R/10)); a limit not given is\n"
        "          removed, so `boxcar queue config Q` makes Q unlimited\n"
        "  pause   workers claim nothing from Q (running jobs go on)\n"
        "  resume  claim from Q again\n"
        "  ls      every queue with a limit or paused\n"
        "\n"
        "  --max-running N        1 to 1000000\n"
        "  --rate R               jobs per second, more than 0 (0.5: one every 2 s)\n"
        "  --json                 print JSON (ls: one object per line)\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

static void print_config(const char *json_text)
{
        cJSON *c = cJSON_Parse(json_text);
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(c, "queue");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "max_running");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "rate_per_s");
        char mr[32] = "-", rate[32] = "-";
        if (cJSON_IsNumber(m))
                snprintf(mr, sizeof(mr), "%d", m->valueint);
        if (cJSON_IsNumber(r))
                snprintf(rate, sizeof(rate), "%g/s", r->valuedouble);
        printf("%-32s max_running=%-8s rate=%-10s %s\n", cJSON_IsString(q) ? q->valuestring : "?",
               mr, rate,
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "paused")) ? "paused" : "active");
        cJSON_Delete(c);
}

int cmd_queue(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, queue_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        const char *verb = argc >= 2 ? argv[1] : "";
        bool is_config = strcmp(verb, "config") == 0, is_ls = strcmp(verb, "ls") == 0;
        bool is_pause = strcmp(verb, "pause") == 0, is_resume = strcmp(verb, "resume") == 0;
        if (!is_config && !is_ls && !is_pause && !is_resume) {
                fputs(queue_usage, stderr);
                return 2;
        }
        char name[32];
        snprintf(name, sizeof(name), "queue %s", verb);
        static const struct option opts[] = {
                { "max-running", required_argument, NULL, 'm' },
                { "rate", required_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        const char *max_running = NULL, *rate = NULL;
        bool json = false;
        struct bc_error err = BC_ERROR_INIT;
        optind = 0;
        opterr = 0;
        for (int o; (o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1;) {
                if (o == 'j')
                        json = true;
                else if ((o == 'm' || o == 'r') && is_config)
                        *(o == 'm' ? &max_running : &rate) = optarg;
                else {
                        bc_error_set(&err, BC_USAGE, EINVAL, "unknown or incomplete option '%.*s'",
                                     (int)strcspn(argv[optind], "="), argv[optind]);
                        return cli_fail(name, &err);
                }
        }
        int rest = optind + 1;
        if (rest + (is_ls ? 0 : 1) != argc) {
                bc_error_set(&err, BC_USAGE, EINVAL,
                             is_ls ? "ls takes no argument" : "expected one queue name Q");
                return cli_fail(name, &err);
        }
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail(name, &err);
        const char *p[] = { is_ls ? NULL : argv[rest], max_running, rate };
        const char *sql = is_ls       ? "select boxcar.queue_config_ls()"
                          : is_pause  ? "select boxcar.pause_queue($1)"
                          : is_resume ? "select boxcar.resume_queue($1)"
                                      : "select boxcar.queue_config($1, $2::int, $3::float8)";
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql,
                                                   is_ls       ? 0
                                                   : is_config ? 3
                                                               : 1,
                                                   p, &err);
        if (!res)
                return cli_fail(name, &err);
        for (int i = 0; i < PQntuples(res); i++) {
                if (json)
                        printf("%s\n", PQgetvalue(res, i, 0));
                else
                        print_config(PQgetvalue(res, i, 0));
        }
        return 0;
}
