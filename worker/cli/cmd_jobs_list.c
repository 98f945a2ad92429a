/* `boxcar jobs ls|retry` and `boxcar queues`: finding jobs a page at a
 * time, re-running a failed one, and the per-queue overview. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "worker/cli/cli.h"
#include "worker/cli/term_safe.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

const char jobs_usage[] =
        "usage: boxcar jobs ls [--queue Q] [--status S] [--since T] [--limit N] [--after CURSOR]\n"
        "                      [--json]\n"
        "       boxcar jobs retry [--by NAME] [--json] ID\n"
        "\n"
        "  ls      jobs newest first (created_at, then id), a page at a time.  When more\n"
        "          jobs follow, the last line gives the --after CURSOR of the next page.\n"
        "  retry   queue a failed or cancelled job again, with a fresh attempt budget;\n"
        "          its audit trail records who asked.  Any other status is refused.\n"
        "\n"
        "  --queue Q              only jobs of queue Q\n"
        "  --status S             only jobs in status S: queued, running, succeeded,\n"
        "                         failed or cancelled\n"
        "  --since T              only jobs created at or after T (a PostgreSQL\n"
        "                         timestamptz, such as '2026-01-02 03:04:05+00')\n"
        "  --limit N              at most N jobs per page, 1-1000 (default: 50)\n"
        "  --after CURSOR         the page after the one that printed CURSOR\n"
        "  --by NAME              who asks for the retry (default: USER@HOST)\n"
        "  --json                 one JSON document: {\"jobs\": [...], \"next_cursor\": ...}\n"
        "                         for ls, the job for retry\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

const char queues_usage[] =
        "usage: boxcar queues [--json] [--database-url URL]\n"
        "\n"
        "Prints boxcar.queue_overview(): per queue, the jobs queued (due now),\n"
        "scheduled (due later) and running, the age of the oldest queued job, the jobs\n"
        "that succeeded and failed in the last hour, and over the jobs that finished in\n"
        "the last hour the average wait (due to started) and run (started to finished)\n"
        "in seconds.\n"
        "\n"
        "  --json                 a JSON array, one object per queue\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

struct ls_args {
        const char *queue, *status, *since, *after;
        long limit;
        bool json;
};

static int parse_ls(int argc, char **argv, struct ls_args *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "queue", required_argument, NULL, 'q' },
                { "status", required_argument, NULL, 's' },
                { "since", required_argument, NULL, 't' },
                { "limit", required_argument, NULL, 'n' },
                { "after", required_argument, NULL, 'a' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        *a = (struct ls_args){ .limit = 50 };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "", opts, NULL);
                if (o == -1)
                        break;
                char *end = NULL;
                switch (o) {
                case 'q':
                        a->queue = optarg;
                        break;
                case 's':
                        a->status = optarg;
                        break;
                case 't':
                        a->since = optarg;
                        break;
                case 'a':
                        a->after = optarg;
                        break;
                case 'j':
                        a->json = true;
                        break;
                case 'n':
                        a->limit = strtol(optarg, &end, 10);
                        if (end == optarg || *end || a->limit < 1 || a->limit > 1000)
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "--limit: '%s' is not a number from 1 to 1000",
                                                    optarg);
                        break;
                default:
                        return cli_bad_option(argv, err);
                }
        }
        if (optind < argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                    argv[optind]);
        return 0;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : dflt;
}

static void print_job_line(const cJSON *j)
{
        const cJSON *att = cJSON_GetObjectItemCaseSensitive(j, "attempts");
        const cJSON *max = cJSON_GetObjectItemCaseSensitive(j, "max_attempts");
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(j, "error");
        char attempts[32];
        snprintf(attempts, sizeof(attempts), "%d/%d", att ? att->valueint : 0,
                 max ? max->valueint : 0);
        char created[20];
        snprintf(created, sizeof(created), "%s", str_or(j, "created_at", "-"));
        if (strlen(created) > 10)
                created[10] = ' '; /* "2026-01-02T03:04:05" → readable */
        /* Each text shown as term_safe.h says: a row is the database's,
         * not necessarily the worker's own words. */
        _cleanup_free_ char *id = term_safe_text(str_or(j, "id", "?"));
        _cleanup_free_ char *status = term_safe_text(str_or(j, "status", "?"));
        _cleanup_free_ char *queue = term_safe_text(str_or(j, "queue", "?"));
        _cleanup_free_ char *code = term_safe_text(str_or(error, "code", "-"));
        _cleanup_free_ char *when = term_safe_text(created);
        printf("%-36s  %-9s  %-24s  %-8s  %-19s  %s\n", id ? id : "?", status ? status : "?",
               queue ? queue : "?", attempts, when ? when : "?", code ? code : "?");
}

static int list(PGconn *conn, const struct ls_args *a, struct bc_error *err)
{
        const struct api_jobs_filter f = { a->queue, a->status, a->since, a->after };
        _cleanup_(api_jobs_page_done) struct api_jobs_page page = { 0 };
        int r = api_jobs_list(conn, &f, a->limit, &page, err);
        if (r < 0)
                return r;
        _cleanup_(cJSON_Deletep) cJSON *doc = cJSON_CreateObject();
        cJSON *jobs = cJSON_AddArrayToObject(doc, "jobs");
        if (!a->json)
                printf("%-36s  %-9s  %-24s  %-8s  %-19s  %s\n", "ID", "STATUS", "QUEUE",
                       "ATTEMPTS", "CREATED", "ERROR");
        for (size_t i = 0; i < page.jobs.n; i++) {
                cJSON *j = steal_pointer(&page.jobs.rows[i].json);
                if (!j)
                        return bc_error_set(err, BC_INTERNAL, EPROTO, "unreadable job row");
                if (!a->json)
                        print_job_line(j);
                cJSON_AddItemToArray(jobs, j);
        }
        const char *next = page.next_cursor;
        if (a->json) {
                cJSON_AddItemToObject(doc, "next_cursor",
                                      next ? cJSON_CreateString(next) : cJSON_CreateNull());
                _cleanup_free_ char *text = cJSON_Print(doc);
                cli_print_json_text(text ? text : "{}");
        } else if (next) {
                printf("more: boxcar jobs ls ... --after %s\n", next);
        }
        return 0;
}

/* USER@HOST for the audit trail of a retry from the command line. */
static void default_requester(char *buf, size_t size)
{
        const struct passwd *pw = getpwuid(geteuid());
        char host[256] = "localhost";
        (void)gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = '\0';
        snprintf(buf, size, "%s@%s", pw ? pw->pw_name : "unknown", host);
}

static int retry(PGconn *conn, const char *id, const char *by, bool json, struct bc_error *err)
{
        _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 };
        int r = api_retry(conn, id, by, &job, err);
        if (r < 0)
                return r;
        if (json) {
                _cleanup_free_ char *text = cJSON_Print(job.rows[0].json);
                cli_print_json_text(text ? text : job.rows[0].text);
        } else {
                printf("%s: queued again with a fresh attempt budget (requested by %s)\n", id, by);
        }
        return 0;
}

struct retry_args {
        char by[300];
        bool json;
        const char *id;
};

/* Checked before connecting, as ls: a usage error needs no database. */
static int parse_retry(int argc, char **argv, struct retry_args *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "by", required_argument, NULL, 'b' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        default_requester(a->by, sizeof(a->by));
        a->json = false;
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "", opts, NULL);
                if (o == -1)
                        break;
                if (o == 'b')
                        snprintf(a->by, sizeof(a->by), "%s", optarg);
                else if (o == 'j')
                        a->json = true;
                else
                        return cli_bad_option(argv, err);
        }
        if (argc - optind != 1)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "expected one job id (see boxcar help jobs)");
        a->id = argv[optind];
        return 0;
}

int cmd_jobs(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, jobs_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool is_ls = argc >= 2 && strcmp(argv[1], "ls") == 0;
        bool is_retry = argc >= 2 && strcmp(argv[1], "retry") == 0;
        if (!is_ls && !is_retry) {
                fputs(jobs_usage, stderr);
                return 2;
        }
        const char *name = is_ls ? "jobs ls" : "jobs retry";
        struct bc_error err = BC_ERROR_INIT;
        struct ls_args ls = { 0 };
        struct retry_args ra = { 0 };
        r = is_ls ? parse_ls(argc - 1, argv + 1, &ls, &err)
                  : parse_retry(argc - 1, argv + 1, &ra, &err);
        if (r < 0)
                return cli_fail(name, &err);
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail(name, &err);
        r = is_ls ? list(conn, &ls, &err) : retry(conn, ra.id, ra.by, ra.json, &err);
        return r < 0 ? cli_fail(name, &err) : 0;
}

static int queues_json(PGconn *conn, struct bc_error *err)
{
        _cleanup_(api_json_rows_done) struct api_json_rows q = { 0 };
        int r = api_queue_overview_json(conn, &q, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = cJSON_Print(q.rows[0].json);
        cli_print_json_text(text ? text : q.rows[0].text);
        return 0;
}

static int queues_table(PGconn *conn, struct bc_error *err)
{
        _cleanup_(api_queue_rows_done) struct api_queue_rows q = { 0 };
        int r = api_queue_overview(conn, &q, err);
        if (r < 0)
                return r;
        printf("%-24s %8s %9s %8s %10s %8s %8s %10s %10s\n", "QUEUE", "QUEUED", "SCHEDULED",
               "RUNNING", "OLDEST_S", "OK_1H", "FAIL_1H", "WAIT_S", "RUN_S");
        for (size_t i = 0; i < q.n; i++) {
                const struct api_queue_row *o = &q.rows[i];
                printf("%-24s %8s %9s %8s %10s %8s %8s %10s %10s\n", o->queue, o->queued,
                       o->scheduled, o->running, o->oldest_queued_s, o->succeeded_last_hour,
                       o->failed_last_hour, o->wait_avg_s, o->run_avg_s);
        }
        return 0;
}

int cmd_queues(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, queues_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
        if (argc > 1 && !json) {
                fputs(queues_usage, stderr);
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail("queues", &err);
        r = json ? queues_json(conn, &err) : queues_table(conn, &err);
        return r < 0 ? cli_fail("queues", &err) : 0;
}
