/* `boxcar sessions [--scope S]` and `boxcar sessions end [SCOPE/]ID`: the
 * sessions as boxcar.session_list shows them (sql/75_sessions.sql), and
 * boxcar.end_session. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/cli/cli.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

const char sessions_usage[] =
        "usage: boxcar sessions [--scope S] [--json] [--database-url URL]\n"
        "       boxcar sessions end [--json] [--database-url URL] [SCOPE/]ID\n"
        "\n"
        "Lists the sessions by scope and id: state (live; ending, a live one whose\n"
        "end was asked; stale, live but its worker stopped renewing its hold;\n"
        "stopped; ended), the worker holding it, the jobs it ran, how often its\n"
        "sandbox started and resumed from a checkpoint, when its last job ended\n"
        "(UTC) and its jobs queued now.\n"
        "\n"
        "end ends a session: a live one is checkpointed and stopped by its worker\n"
        "(prints \"ending\"), any other is ended at once (\"ended\").  A session's\n"
        "scope is its queue's (acme for acme/agents); ID alone names one of scope\n"
        "default, the default queue's.  A later job of the session starts it again\n"
        "from its last checkpoint.  Sessions: docs/sessions.md in the repository.\n"
        "\n"
        "  --scope S              only the sessions of scope S\n"
        "  --json                 the list as one JSON array of boxcar.session_list\n"
        "                         rows; for end {\"scope\", \"id\", \"state\"}\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

/* The scope of `end ID`: the default queue's. */
#define DEFAULT_SCOPE "default"

static int list_json(PGconn *conn, const char *scope, struct bc_error *err)
{
        _cleanup_(api_json_rows_done) struct api_json_rows s = { 0 };
        int r = api_sessions_json(conn, scope, &s, err);
        if (r < 0)
                return r;
        cli_print_json_text(s.rows[0].text);
        return 0;
}

static int list(PGconn *conn, const char *scope, struct bc_error *err)
{
        _cleanup_(api_session_rows_done) struct api_session_rows s = { 0 };
        int r = api_sessions(conn, scope, &s, err);
        if (r < 0)
                return r;
        printf("%-16s %-32s %-7s %-24s %6s %6s %7s %-19s %6s\n", "SCOPE", "ID", "STATE", "HOLDER",
               "JOBS", "STARTS", "RESUMES", "LAST-JOB", "QUEUED");
        for (size_t i = 0; i < s.n; i++) {
                const struct api_session_row *o = &s.rows[i];
                bool ending = o->end_requested && strcmp(o->state, "live") == 0;
                printf("%-16s %-32s %-7s %-24s %6s %6s %7s %-19s %6s\n", o->scope, o->id,
                       ending ? "ending" : o->state, *o->holder ? o->holder : "-", o->jobs,
                       o->starts, o->resumes, o->last_job_utc, o->queued);
        }
        return 0;
}

struct ls_args {
        const char *scope;
        bool json;
};

/* Checked before connecting: a usage error needs no database. */
static int parse_ls(int argc, char **argv, struct ls_args *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "scope", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        *a = (struct ls_args){ 0 };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "", opts, NULL);
                if (o == -1)
                        break;
                if (o == 's' && !*optarg)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--scope: must not be empty");
                if (o == 's')
                        a->scope = optarg;
                else if (o == 'j')
                        a->json = true;
                else
                        return cli_bad_option(argv, err);
        }
        if (optind < argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                    argv[optind]);
        return 0;
}

struct end_args {
        char scope[API_SCOPE_MAX];
        const char *id;
        bool json;
};

/* argv[0] is "end".  [SCOPE/]ID: a scope has no '/' (it is a queue's first
 * part), nor has a session id. */
static int parse_end(int argc, char **argv, struct end_args *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { NULL, 0, NULL, 0 },
        };
        *a = (struct end_args){ 0 };
        optind = 0;
        opterr = 0;
        for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
                if (o != 'j')
                        return cli_bad_option(argv, err);
                a->json = true;
        }
        if (optind >= argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "which session? give [SCOPE/]ID");
        if (optind < argc - 1)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                    argv[optind + 1]);
        const char *arg = argv[optind], *slash = strchr(arg, '/');
        size_t scope_len = slash ? (size_t)(slash - arg) : strlen(DEFAULT_SCOPE);
        a->id = slash ? slash + 1 : arg;
        if (scope_len == 0 || scope_len >= sizeof(a->scope) || !*a->id || strchr(a->id, '/'))
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "'%s': expected ID or SCOPE/ID (neither empty, no other '/')",
                                    arg);
        memcpy(a->scope, slash ? arg : DEFAULT_SCOPE, scope_len);
        a->scope[scope_len] = '\0';
        return 0;
}

static int end_session(PGconn *conn, const struct end_args *a, struct bc_error *err)
{
        char state[API_STATUS_MAX];
        int r = api_end_session(conn, a->scope, a->id, state, err);
        if (r < 0)
                return r;
        if (!a->json) {
                printf("%s\n", state);
                return 0;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "scope", a->scope);
        cJSON_AddStringToObject(o, "id", a->id);
        cJSON_AddStringToObject(o, "state", state);
        if (!cli_print_json(o))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        return 0;
}

int cmd_sessions(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, sessions_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool is_end = argc >= 2 && strcmp(argv[1], "end") == 0;
        const char *name = is_end ? "sessions end" : "sessions";
        struct bc_error err = BC_ERROR_INIT;
        struct ls_args ls = { 0 };
        struct end_args end = { 0 };
        r = is_end ? parse_end(argc - 1, argv + 1, &end, &err) : parse_ls(argc, argv, &ls, &err);
        if (r < 0)
                return cli_fail(name, &err);
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn)
                return cli_fail(name, &err);
        if (is_end)
                r = end_session(conn, &end, &err);
        else
                r = ls.json ? list_json(conn, ls.scope, &err) : list(conn, ls.scope, &err);
        return r < 0 ? cli_fail(name, &err) : 0;
}
