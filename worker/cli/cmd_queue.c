/* `boxcar queue config|pause|resume|show|ls`: limits that hold across every
 * replica (boxcar.queue_config and friends, sql/38_queue_limits.sql); `queue
 * caps` is cmd_queue_caps.c. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/cli/cmd_queue_caps.h"
#include "worker/db/db.h"

const char queue_usage[] =
        "usage: boxcar queue config Q [--max-running N] [--rate R] [--json]\n"
        "       boxcar queue caps Q [--max-memory-mb N] [--max-cpus X] [--max-pids N]\n"
        "                [--max-disk-mb N] [--max-files N] [--max-timeout-s S]\n"
        "                [--max-output-bytes N] [--max-startup-timeout-s S]\n"
        "                [--max-session-idle-s S] [--images a,b|none|any]\n"
        "                [--sessions on|off] [--json]\n"
        "       boxcar queue pause|resume Q [--json]\n"
        "       boxcar queue show Q [--json]\n"
        "       boxcar queue ls [--json]\n"
        "\n"
        "Limits enforced by the claim, whatever the number of workers, and caps\n"
        "enforced when a job is enqueued.\n"
        "\n"
        "  config  set Q's limits: at most N jobs running at once, at most R jobs\n"
        "          started per second (bursts of max(1, R/10)); a limit not given is\n"
        "          removed, so `boxcar queue config Q` makes Q unlimited\n"
        "  pause   workers claim nothing from Q (running jobs go on)\n"
        "  resume  claim from Q again\n"
        "  caps    set the most a job of Q may ask for; a cap not given is removed\n"
        "          (`boxcar queue caps Q` removes them all).  A spec over a cap is\n"
        "          refused at enqueue (BAD_SPEC naming the cap); a limit the spec\n"
        "          leaves out is stored as the smaller of the cap and the default.\n"
        "          --images: the image storages Q's jobs may use (none: no image;\n"
        "          any: no cap); --sessions off refuses session jobs.  Queued jobs\n"
        "          keep the caps they were enqueued under\n"
        "  show    Q's limits, caps, its scope's quota (`boxcar quota`) with\n"
        "          today's use and why its jobs wait, if they do\n"
        "  ls      every queue with a limit or paused, then every queue with caps\n"
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

static const char *str_of(const cJSON *parent, const char *key)
{
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(parent, key));
        return v ? v : "?";
}

static int print_show(const char *json_text)
{
        cJSON *s = cJSON_Parse(json_text);
        const cJSON *limits = cJSON_GetObjectItemCaseSensitive(s, "limits");
        const cJSON *quota = cJSON_GetObjectItemCaseSensitive(s, "quota");
        char *caps = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(s, "caps"));
        char *text = cJSON_PrintUnformatted(limits);
        printf("queue:   %s (scope %s)\n", str_of(s, "queue"), str_of(s, "scope"));
        printf("jobs:    %.0f queued, %.0f running\n",
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "queued")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "running")));
        printf("limits:  %s\n", cJSON_IsObject(limits) && text ? text : "none");
        printf("caps:    %s\n", caps ? caps : "?");
        const cJSON *mr = cJSON_GetObjectItemCaseSensitive(quota, "max_running");
        const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(quota, "cpu_seconds_per_day");
        char mrs[32] = "-", cpus[32] = "-";
        if (cJSON_IsNumber(mr))
                snprintf(mrs, sizeof(mrs), "%.0f", mr->valuedouble);
        if (cJSON_IsNumber(cpu))
                snprintf(cpus, sizeof(cpus), "%.0f", cpu->valuedouble);
        printf("quota:   max_running=%s (%.0f running in the scope) cpu_seconds_per_day=%s "
               "(%.3f used on %s)\n",
               mrs, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(quota, "running")), cpus,
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(quota, "cpu_seconds_today")),
               str_of(quota, "day"));
        const char *waiting = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(quota, "waiting"));
        if (waiting)
                printf("%s\n", waiting);
        free(caps);
        free(text);
        cJSON_Delete(s);
        return 0;
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
        bool is_show = strcmp(verb, "show") == 0;
        if (strcmp(verb, "caps") == 0)
                return cmd_queue_caps(argc - 1, argv + 1, url);
        if (!is_config && !is_ls && !is_pause && !is_resume && !is_show) {
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
                          : is_show   ? "select boxcar.queue_show($1)"
                                      : "select boxcar.queue_config($1, $2::int, $3::float8)";
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql,
                                                   is_ls       ? 0
                                                   : is_config ? 3
                                                               : 1,
                                                   p, &err);
        if (!res)
                return cli_fail(name, &err);
        if (is_show && !json)
                return print_show(PQgetvalue(res, 0, 0));
        for (int i = 0; i < PQntuples(res); i++) {
                if (json || is_show)
                        printf("%s\n", PQgetvalue(res, i, 0));
                else
                        print_config(PQgetvalue(res, i, 0));
        }
        if (is_ls && cmd_queue_caps_ls(conn, json, &err) < 0)
                return cli_fail(name, &err);
        return 0;
}
