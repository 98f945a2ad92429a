/* `boxcar schedule add|ls|rm|pause|resume`: periodic jobs
 * (boxcar.schedule_* in sql/45_schedules.sql). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

const char schedule_usage[] =
        "usage: boxcar schedule add NAME --cron EXPR [--time-zone TZ] [--queue Q]\n"
        "                           [--priority N] [--max-attempts N] [--replace] [--json]\n"
        "                           (--spec FILE | -- CMD [ARGS...])\n"
        "       boxcar schedule ls [--json]\n"
        "       boxcar schedule rm|pause|resume NAME [--json]\n"
        "\n"
        "Periodic jobs: the housekeeping leader enqueues one job per matching time,\n"
        "exactly once across replicas.  After downtime a missed run is enqueued once,\n"
        "not once per missed interval.  EXPR has five fields (minute hour\n"
        "day-of-month month day-of-week: *, N, N-M, lists, /STEP, jan-dec, sun-sat)\n"
        "or is @hourly, @daily, @weekly, @monthly or @yearly; it is read on the wall\n"
        "clock of TZ (the README's \"Periodic jobs\" gives the daylight saving rules).\n"
        "\n"
        "  add     add a schedule (NAME: letters, digits, '_', '.', ':', '-')\n"
        "  ls      every schedule, with its next and last run\n"
        "  rm      remove a schedule (the jobs it enqueued stay)\n"
        "  pause   stop enqueueing; resume starts again from now (no catching up)\n"
        "\n"
        "  --cron EXPR            when to run\n"
        "  --time-zone TZ         an IANA zone such as Europe/Paris (default: UTC)\n"
        "  --queue Q              queue of the jobs (default: default)\n"
        "  --spec FILE            the job spec as JSON ('-': stdin)\n"
        "  --priority N           priority of the jobs (default: 0)\n"
        "  --max-attempts N       attempts of each job, 1-100 (default: 3)\n"
        "  --replace              change the schedule NAME if it exists\n"
        "  --json                 print JSON (ls: one object per line)\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

struct sched_args {
        const char *cron, *tz, *queue, *spec_file, *priority, *max_attempts;
        bool replace, json;
        int rest; /* index of the first positional argument */
};

/* Options after the subcommand (argv[0] is the subcommand).  add_opts:
 * whether add's options are accepted. */
static int parse(int argc, char **argv, bool add_opts, struct sched_args *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "cron", required_argument, NULL, 'c' },
                { "time-zone", required_argument, NULL, 'z' },
                { "queue", required_argument, NULL, 'q' },
                { "spec", required_argument, NULL, 's' },
                { "priority", required_argument, NULL, 'p' },
                { "max-attempts", required_argument, NULL, 'm' },
                { "replace", no_argument, NULL, 'r' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        *a = (struct sched_args){ .tz = "UTC", .queue = "default" };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "", opts, NULL);
                if (o == -1)
                        break;
                if (o != 'j' && o != '?' && !add_opts)
                        return bc_error_set(err, BC_USAGE, EINVAL, "'%s' is an option of add only",
                                            argv[optind - 1]);
                switch (o) {
                case 'c':
                        a->cron = optarg;
                        break;
                case 'z':
                        a->tz = optarg;
                        break;
                case 'q':
                        a->queue = optarg;
                        break;
                case 's':
                        a->spec_file = optarg;
                        break;
                case 'p':
                        a->priority = optarg;
                        break;
                case 'm':
                        a->max_attempts = optarg;
                        break;
                case 'r':
                        a->replace = true;
                        break;
                case 'j':
                        a->json = true;
                        break;
                default:
                        return cli_bad_option(argv, err);
                }
        }
        a->rest = optind;
        return 0;
}

static void print_schedule(const cJSON *s)
{
        const char *f[] = { "name", "cron", "time_zone", "queue", "next_run_at", "last_run_at" };
        const char *v[6];
        for (int i = 0; i < 6; i++) {
                const cJSON *x = cJSON_GetObjectItemCaseSensitive(s, f[i]);
                v[i] = cJSON_IsString(x) ? x->valuestring : "-";
        }
        bool on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "enabled"));
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(s, "last_error");
        printf("%-24s %-16s %-16s %-16s %-7s next=%s last=%s%s%s\n", v[0], v[1], v[2], v[3],
               on ? "enabled" : "paused", on ? v[4] : "-", v[5],
               cJSON_IsString(e) ? " error=" : "", cJSON_IsString(e) ? e->valuestring : "");
}

static int add(PGconn *conn, int argc, char **argv, const struct sched_args *a,
               struct bc_error *err)
{
        if (a->rest >= argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "add: give the schedule's NAME");
        if (!a->cron)
                return bc_error_set(err, BC_USAGE, EINVAL, "add: --cron EXPR is required");
        const char *name = argv[a->rest];
        int cmd = a->rest + 1;
        bool has_cmd = cmd < argc;
        if (has_cmd == !!a->spec_file)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "add: give either --spec FILE or -- CMD ARGS... (see --help)");
        _cleanup_free_ char *spec = NULL;
        if (a->spec_file && cli_read_spec_file(a->spec_file, &spec, err) < 0)
                return -EINVAL;
        if (!a->spec_file && !(spec = cli_command_spec(argc - cmd, argv + cmd)))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const char *p[] = { name,  a->cron,     a->queue,        spec,
                            a->tz, a->priority, a->max_attempts, a->replace ? "true" : "false" };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select boxcar.schedule_add(name => $1, cron => $2, queue => $3, spec => $4::jsonb,"
                " time_zone => $5, priority => coalesce($6::int, 0),"
                " max_attempts => coalesce($7::int, 3), replace => $8::boolean)",
                8, p, err);
        if (!res)
                return -EPROTO;
        if (a->json) {
                printf("%s\n", PQgetvalue(res, 0, 0));
        } else {
                cJSON *s = cJSON_Parse(PQgetvalue(res, 0, 0));
                print_schedule(s);
                cJSON_Delete(s);
        }
        return 0;
}

static int list(PGconn *conn, const struct sched_args *a, struct bc_error *err)
{
        _cleanup_(api_json_rows_done) struct api_json_rows ls = { 0 };
        int r = api_schedule_ls(conn, &ls, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ls.n; i++) {
                if (a->json)
                        cli_print_json_text(ls.rows[i].text);
                else
                        print_schedule(ls.rows[i].json);
        }
        return 0;
}

/* rm, pause, resume: boxcar.schedule_<verb>(name) returns whether there was
 * such a schedule. */
static int by_name(PGconn *conn, const char *verb, const char *name, const struct sched_args *a,
                   struct bc_error *err)
{
        static const struct {
                const char *verb, *sql, *done, *key;
                bool value;
        } calls[] = {
                { "rm", "select boxcar.schedule_rm($1)", "removed", "removed", true },
                { "pause", "select boxcar.schedule_pause($1)", "paused", "enabled", false },
                { "resume", "select boxcar.schedule_resume($1)", "resumed", "enabled", true },
        };
        size_t i = 0;
        while (strcmp(calls[i].verb, verb) != 0)
                i++;
        const char *p[] = { name };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, calls[i].sql, 1, p, err);
        if (!res)
                return -EPROTO;
        if (strcmp(PQgetvalue(res, 0, 0), "t") != 0)
                return bc_error_set(err, BC_INTERNAL, ENOENT, "no schedule named '%s'", name);
        if (a->json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", name);
                cJSON_AddBoolToObject(o, calls[i].key, calls[i].value);
                char *text = cJSON_PrintUnformatted(o);
                if (text)
                        printf("%s\n", text);
                free(text);
                cJSON_Delete(o);
        } else {
                printf("%s: %s\n", name, calls[i].done);
        }
        return 0;
}

int cmd_schedule(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, schedule_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        const char *verb = argc >= 2 ? argv[1] : "";
        bool is_add = strcmp(verb, "add") == 0, is_ls = strcmp(verb, "ls") == 0;
        bool named = strcmp(verb, "rm") == 0 || strcmp(verb, "pause") == 0 ||
                     strcmp(verb, "resume") == 0;
        if (!is_add && !is_ls && !named) {
                fputs(schedule_usage, stderr);
                return 2;
        }
        char name[32];
        snprintf(name, sizeof(name), "schedule %s", verb);
        struct bc_error err = BC_ERROR_INIT;
        struct sched_args a;
        if (parse(argc - 1, argv + 1, is_add, &a, &err) < 0)
                return cli_fail(name, &err);
        a.rest += 1;
        if ((is_ls && a.rest != argc) || (named && a.rest + 1 != argc)) {
                bc_error_set(&err, BC_USAGE, EINVAL,
                             is_ls ? "ls takes no argument" : "expected one schedule NAME");
                return cli_fail(name, &err);
        }
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail(name, &err);
        if (is_add)
                r = add(conn, argc, argv, &a, &err);
        else if (is_ls)
                r = list(conn, &a, &err);
        else
                r = by_name(conn, verb, argv[a.rest], &a, &err);
        return r < 0 ? cli_fail(name, &err) : 0;
}
