/* Job subcommands for people and scripts: enqueue, status, cancel, events. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/io.h"
#include "worker/cli/cli.h"
#include "worker/cli/cmd_enqueue_many.h"
#include "worker/cli/job_wait.h"
#include "worker/config/config.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

/* Enough for a fan-in; boxcar.enqueue takes at most 1000. */
#define ENQUEUE_MAX_DEPS 1000

struct enqueue_args {
        const char *queue, *spec_file, *priority, *run_at, *max_attempts, *key, *webhook;
        const char *many;
        cJSON *deps; /* --depends-on ids, a JSON array (NULL: none) */
        bool json;
};

static int add_dep(struct enqueue_args *a, const char *id, struct bc_error *err)
{
        if (!a->deps)
                a->deps = cJSON_CreateArray();
        if (!a->deps)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (cJSON_GetArraySize(a->deps) >= ENQUEUE_MAX_DEPS)
                return bc_error_set(err, BC_USAGE, EINVAL, "--depends-on: at most %d jobs",
                                    ENQUEUE_MAX_DEPS);
        cJSON_AddItemToArray(a->deps, cJSON_CreateString(id));
        return 0;
}

static void enqueue_args_done(struct enqueue_args *a)
{
        cJSON_Delete(a->deps);
        a->deps = NULL;
}

static int parse_enqueue(int argc, char **argv, struct enqueue_args *a, int *ret_cmd_index,
                         struct bc_error *err)
{
        static const struct option opts[] = {
                { "queue", required_argument, NULL, 'q' },
                { "spec", required_argument, NULL, 's' },
                { "priority", required_argument, NULL, 'p' },
                { "run-at", required_argument, NULL, 'r' },
                { "max-attempts", required_argument, NULL, 'm' },
                { "idempotency-key", required_argument, NULL, 'k' },
                { "webhook-url", required_argument, NULL, 'w' },
                { "depends-on", required_argument, NULL, 'd' },
                { "many", required_argument, NULL, 'M' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "+", opts, NULL);
                if (o == -1)
                        break;
                switch (o) {
                case 'q':
                        a->queue = optarg;
                        break;
                case 's':
                        a->spec_file = optarg;
                        break;
                case 'p':
                        a->priority = optarg;
                        break;
                case 'r':
                        a->run_at = optarg;
                        break;
                case 'm':
                        a->max_attempts = optarg;
                        break;
                case 'k':
                        a->key = optarg;
                        break;
                case 'w':
                        a->webhook = optarg;
                        break;
                case 'd':
                        if (add_dep(a, optarg, err) < 0)
                                return -EINVAL;
                        break;
                case 'M':
                        a->many = optarg;
                        break;
                case 'j':
                        a->json = true;
                        break;
                default:
                        return cli_bad_option(argv, err);
                }
        }
        if (a->many) {
                /* Each job of the file says all of it. */
                if (a->queue || a->spec_file || a->priority || a->run_at || a->max_attempts ||
                    a->key || a->webhook || a->deps || optind < argc)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--many FILE takes every job's fields from FILE: no "
                                            "other job option, --spec or CMD with it");
                return 0;
        }
        if (!a->queue)
                a->queue = "default";
        bool has_cmd = optind < argc;
        if (has_cmd == !!a->spec_file)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "give either --spec FILE or -- CMD ARGS... (see --help)");
        *ret_cmd_index = optind;
        return 0;
}

int cmd_enqueue(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, cli_commands[2].usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_(enqueue_args_done) struct enqueue_args a = { 0 };
        int cmd_index = 0;
        if (parse_enqueue(argc, argv, &a, &cmd_index, &err) < 0)
                return cli_fail("enqueue", &err);
        if (a.many) {
                _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
                if (!conn || enqueue_many_run(conn, a.many, a.json, &err) < 0)
                        return cli_fail("enqueue", &err);
                return 0;
        }
        _cleanup_free_ char *deps = a.deps ? cJSON_PrintUnformatted(a.deps) : NULL;
        if (a.deps && !deps)
                return 1;
        _cleanup_free_ char *spec = NULL;
        if (a.spec_file && cli_read_spec_file(a.spec_file, &spec, &err) < 0)
                return cli_fail("enqueue", &err);
        if (!a.spec_file) {
                spec = cli_command_spec(argc - cmd_index, argv + cmd_index);
                if (!spec)
                        return 1;
        }
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail("enqueue", &err);
        const char *p[] = { a.queue,        spec,  a.priority, a.run_at,
                            a.max_attempts, a.key, a.webhook,  deps };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select boxcar.enqueue(queue => $1, spec => $2::jsonb,"
                " priority => coalesce($3::int, 0), run_at => $4::timestamptz,"
                " max_attempts => coalesce($5::int, 3), idempotency_key => $6,"
                " webhook_url => $7,"
                " depends_on => array(select jsonb_array_elements_text($8::jsonb)::uuid))",
                8, p, &err);
        if (!res)
                return cli_fail("enqueue", &err);
        if (!a.json) {
                printf("%s\n", PQgetvalue(res, 0, 0));
                return 0;
        }
        /* The job as status prints it, on one line: with an idempotency
         * key that matched, the job that already existed. */
        _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 };
        r = api_job(conn, PQgetvalue(res, 0, 0), &job, &err);
        if (r < 0)
                return cli_fail("enqueue", &err);
        cli_print_json_text(r > 0 ? job.rows[0].text : "");
        return 0;
}

static int one_job_arg(const char *name, int argc, char **argv, const char **ret_id)
{
        if (argc != 2) {
                fprintf(stderr, "boxcar %s: expected one job id (see boxcar help %s)\n", name,
                        name);
                return 2;
        }
        *ret_id = argv[1];
        return 0;
}

/* boxcar status --wait --timeout: the job had not finished in time. */
#define STATUS_TIMED_OUT 124

struct status_args {
        bool wait;
        const char *timeout; /* as given, for the message */
        long timeout_ms;     /* 0: none */
        const char *id;
};

/* Prints the usage error itself; returns 0 or the exit status 2. */
static int parse_status(int argc, char **argv, struct status_args *a)
{
        static const struct option opts[] = {
                { "wait", no_argument, NULL, 'w' },
                { "timeout", required_argument, NULL, 't' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "", opts, NULL);
                if (o == -1)
                        break;
                double secs = 0;
                switch (o) {
                case 'w':
                        a->wait = true;
                        break;
                case 'j':
                        break; /* the job is printed as JSON anyway */
                case 't':
                        if (config_parse_duration(optarg, false, &secs) < 0) {
                                fprintf(stderr,
                                        "boxcar status: --timeout: '%s' is not a duration "
                                        "(250ms, 30s, 5m, 2h)\n",
                                        optarg);
                                return 2;
                        }
                        a->timeout = optarg;
                        a->timeout_ms = secs * 1000 < 1 ? 1 : (long)(secs * 1000);
                        break;
                default:
                        fprintf(stderr,
                                "boxcar status: unknown or incomplete option '%.*s' "
                                "(see boxcar help status)\n",
                                (int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
                        return 2;
                }
        }
        if (a->timeout && !a->wait) {
                fprintf(stderr, "boxcar status: --timeout goes with --wait\n");
                return 2;
        }
        if (argc - optind != 1) {
                fprintf(stderr, "boxcar status: expected one job id (see boxcar help status)\n");
                return 2;
        }
        a->id = argv[optind];
        return 0;
}

int cmd_status(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, cli_commands[3].usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        struct status_args a = { 0 };
        r = parse_status(argc, argv, &a);
        if (r)
                return r;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail("status", &err);
        _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 };
        char status[API_STATUS_MAX];
        r = a.wait ? job_wait(&conn, url, a.id, a.timeout_ms, &job, status, &err)
                   : api_job(conn, a.id, &job, &err);
        if (r == -ETIMEDOUT) {
                /* Its own exit status, as timeout(1) has: a script can
                 * tell "still running" from "failed". */
                fprintf(stderr, "boxcar status: job %s is still %s after --timeout %s\n", a.id,
                        status, a.timeout);
                return STATUS_TIMED_OUT;
        }
        if (r < 0)
                return cli_fail("status", &err);
        if (r == 0) {
                fprintf(stderr, "boxcar status: job %s not found\n", a.id);
                return 1;
        }
        _cleanup_free_ char *pretty = cJSON_Print(job.rows[0].json);
        cli_print_json_text(pretty ? pretty : job.rows[0].text);
        return 0;
}

/* boxcar.cancel's answer as it is: the job's status after the call. */
static bool print_cancel_json(const char *id, const char *st)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "status", st);
        return cli_print_json(o);
}

int cmd_cancel(int argc, char **argv)
{
        const char *url = NULL, *id = NULL;
        int r = cli_common_options(&argc, argv, cli_commands[4].usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = cli_take_json(&argc, argv);
        r = one_job_arg("cancel", argc, argv, &id);
        if (r)
                return r;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail("cancel", &err);
        char st[API_STATUS_MAX];
        if (api_cancel(conn, id, st, &err) < 0)
                return cli_fail("cancel", &err);
        if (json)
                return print_cancel_json(id, st) ? 0 : 1;
        if (strcmp(st, "running") == 0)
                printf("cancel requested: the worker running %s stops it now\n", id);
        else if (strcmp(st, "cancelled") == 0)
                printf("cancelled\n");
        else
                printf("not cancelled: the job already %s\n", st);
        return 0;
}

int cmd_events(int argc, char **argv)
{
        const char *url = NULL, *id = NULL;
        int r = cli_common_options(&argc, argv, cli_commands[5].usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        cli_take_json(&argc, argv); /* the events are JSON lines anyway */
        r = one_job_arg("events", argc, argv, &id);
        if (r)
                return r;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail("events", &err);
        /* A job may have no events yet: ask whether it exists. */
        _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 }, events = { 0 };
        r = api_job(conn, id, &job, &err);
        if (r < 0)
                return cli_fail("events", &err);
        if (r == 0) {
                fprintf(stderr, "boxcar events: job %s not found\n", id);
                return 1;
        }
        if (api_job_events(conn, id, &events, &err) < 0)
                return cli_fail("events", &err);
        for (size_t i = 0; i < events.n; i++)
                cli_print_json_text(events.rows[i].text);
        return 0;
}
