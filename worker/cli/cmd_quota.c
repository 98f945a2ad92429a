/* `boxcar quota set|show`: what a scope may use, enforced by the claim
 * (boxcar.scope_quotas, sql/39_caps_quotas.sql). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/db/db.h"

const char quota_usage[] =
        "usage: boxcar quota set SCOPE [--max-running N] [--cpu-seconds-per-day N] [--json]\n"
        "       boxcar quota show [SCOPE] [--json]\n"
        "\n"
        "Quotas of a scope (a queue \"scope/name\" is of scope \"scope\"; a queue\n"
        "without \"/\" is its own), enforced by the claim on every worker.  A scope\n"
        "at a quota gets no new job started: its jobs stay queued (enqueue still\n"
        "accepts them), running ones are never stopped.\n"
        "\n"
        "  set   set SCOPE's quotas; a quota not given is removed\n"
        "  show  SCOPE's quotas (every scope with one without SCOPE), its running\n"
        "        and queued jobs, the CPU-seconds its jobs used today (UTC) and,\n"
        "        when its jobs wait on a quota, why\n"
        "\n"
        "  --max-running N          at most N of the scope's jobs running at once,\n"
        "                           over all its queues (1 to 1000000)\n"
        "  --cpu-seconds-per-day N  no new job once the scope's jobs that finished\n"
        "                           today (UTC) used N CPU-seconds; claims start\n"
        "                           again the next UTC day\n"
        "  --json                   print JSON (show: one object per line)\n"
        "  --database-url URL       PostgreSQL URL (default: $DATABASE_URL)\n";

static void print_quota(const char *json_text)
{
        cJSON *q = cJSON_Parse(json_text);
        const cJSON *mr = cJSON_GetObjectItemCaseSensitive(q, "max_running");
        const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(q, "cpu_seconds_per_day");
        const char *scope = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "scope"));
        const char *day = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "day"));
        const char *waiting = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "waiting"));
        char mrs[32] = "-", cpus[32] = "-";
        if (cJSON_IsNumber(mr))
                snprintf(mrs, sizeof(mrs), "%.0f", mr->valuedouble);
        if (cJSON_IsNumber(cpu))
                snprintf(cpus, sizeof(cpus), "%.0f", cpu->valuedouble);
        printf("%-24s max_running=%-8s running=%-6.0f queued=%-8.0f cpu_seconds_per_day=%-10s "
               "used %.3f on %s%s%s\n",
               scope ? scope : "?", mrs,
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "running")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "queued")), cpus,
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(q, "cpu_seconds_today")),
               day ? day : "?", waiting ? "  " : "", waiting ? waiting : "");
        cJSON_Delete(q);
}

int cmd_quota(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, quota_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        const char *verb = argc >= 2 ? argv[1] : "";
        bool is_set = strcmp(verb, "set") == 0, is_show = strcmp(verb, "show") == 0;
        if (!is_set && !is_show) {
                fputs(quota_usage, stderr);
                return 2;
        }
        const char *name = is_set ? "quota set" : "quota show";
        static const struct option opts[] = {
                { "max-running", required_argument, NULL, 'm' },
                { "cpu-seconds-per-day", required_argument, NULL, 'c' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        const char *max_running = NULL, *cpu = NULL;
        bool json = false;
        struct bc_error err = BC_ERROR_INIT;
        optind = 0;
        opterr = 0;
        for (int o; (o = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1;) {
                if (o == 'j')
                        json = true;
                else if ((o == 'm' || o == 'c') && is_set)
                        *(o == 'm' ? &max_running : &cpu) = optarg;
                else {
                        bc_error_set(&err, BC_USAGE, EINVAL, "unknown or incomplete option '%.*s'",
                                     (int)strcspn(argv[optind], "="), argv[optind]);
                        return cli_fail(name, &err);
                }
        }
        int rest = optind + 1;
        if (is_set ? rest + 1 != argc : rest + 1 < argc) {
                bc_error_set(&err, BC_USAGE, EINVAL,
                             is_set ? "expected one scope" : "expected at most one scope");
                return cli_fail(name, &err);
        }
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail(name, &err);
        const char *scope = rest < argc ? argv[rest] : NULL;
        const char *p[] = { scope, max_running, cpu };
        const char *sql = is_set  ? "select boxcar.set_scope_quota($1, $2::int, $3::bigint)"
                          : scope ? "select boxcar.scope_quota_json($1)"
                                  : "select boxcar.scope_quota_ls()";
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql, is_set ? 3 : scope ? 1 : 0, p, &err);
        if (!res)
                return cli_fail(name, &err);
        for (int i = 0; i < PQntuples(res); i++) {
                if (json)
                        printf("%s\n", PQgetvalue(res, i, 0));
                else
                        print_quota(PQgetvalue(res, i, 0));
        }
        return 0;
}
