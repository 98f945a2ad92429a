/* boxcar: one binary, git-style subcommands. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/config/config.h"
#include "worker/log/log.h"
#include "worker/daemon/loop.h"
#include "version.h"

static const char migrate_usage[] =
        "usage: boxcar migrate [--database-url URL] [--json]\n"
        "\n"
        "Applies migrations/ in order, once each, recorded with checksums in\n"
        "boxcar.schema_migrations, then re-applies the SQL API (sql/), all in one\n"
        "transaction under an advisory lock: concurrent runs are safe.  Refuses to\n"
        "run when an applied migration was edited.\n"
        "\n"
        "  --json                 print one JSON object: {\"applied\": N,\n"
        "                         \"already_applied\": N, \"api_files\": N,\n"
        "                         \"migrations\": [{\"version\", \"applied_at\"}...]}\n"
        "                         (every migration the database has applied, in order)\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

static const char enqueue_usage[] =
        "usage: boxcar enqueue [OPTIONS] (--spec FILE | -- CMD [ARGS...])\n"
        "       boxcar enqueue [--json] --many FILE\n"
        "\n"
        "Adds a job and prints its id.  With -- CMD ARGS the spec is {\"command\": [CMD, ARGS]};\n"
        "--spec FILE reads a whole job spec, '-' for stdin.  The job spec (every field,\n"
        "default and limit, the result and the error codes) is docs/job-spec.md in the\n"
        "boxcar repository; a malformed spec is refused with BAD_SPEC naming the field.\n"
        "\n"
        "  --queue Q              queue name, 'name' or 'scope/name', not '.' or '..'\n"
        "                         (default: default)\n"
        "  --spec FILE            the job spec as JSON ('-': stdin)\n"
        "  --priority N           higher runs first, -32768 to 32767 (default: 0)\n"
        "  --run-at TIMESTAMP     not before this time, within 10 years; a PostgreSQL\n"
        "                         timestamptz such as '2026-01-02 03:04:05+00' (default: now)\n"
        "  --max-attempts N       tries for infrastructure failures, 1-100 (default: 3)\n"
        "  --idempotency-key K    the same request again returns the existing job's id;\n"
        "                         a different one under the key is an error\n"
        "  --webhook-url URL      where the result is posted\n"
        "  --depends-on ID        run only after job ID (of the same scope) has\n"
        "                         succeeded; repeat it for more.  If ID fails or is\n"
        "                         cancelled, this job ends cancelled with error\n"
        "                         DEPENDENCY_FAILED (a retry of ID brings it back)\n"
        "  --json                 print the job as JSON on one line (as boxcar status),\n"
        "                         not only its id (with --many: a JSON array of ids)\n"
        "  --many FILE            enqueue every job of FILE ('-': stdin) in one call, all\n"
        "                         or none, and print their ids one a line in order.\n"
        "                         FILE is a JSON array or JSON lines of objects with\n"
        "                         keys queue, spec (both required), priority, run_at\n"
        "                         (ISO-8601), max_attempts, idempotency_key,\n"
        "                         webhook_url, depends_on (job ids, or the 0-based\n"
        "                         index of an earlier job of FILE); at most 10,000.\n"
        "                         A bad job refuses them all, named \"jobs[INDEX]: \"\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n"
        "  --help                 this text\n";

static const char status_usage[] =
        "usage: boxcar status [--database-url URL] [--wait [--timeout DURATION]] [--json] ID\n"
        "\n"
        "Prints the job as JSON.  --wait waits until it has finished (succeeded,\n"
        "failed or cancelled), told by the database (LISTEN boxcar_job_updates, no\n"
        "polling); --timeout gives up after DURATION (250ms, 30s, 5m, 2h).\n"
        "\n"
        "  --wait                 wait until the job has finished\n"
        "  --timeout DURATION     with --wait: give up after DURATION\n"
        "  --json                 accepted for scripts: the job is JSON anyway\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n"
        "\n"
        "Exit status: 0 the job was printed (with --wait: it has finished, whatever\n"
        "its outcome); 1 no such job, or a database error; 2 a usage error;\n"
        "124 --timeout passed before the job finished (nothing on stdout).\n";

static const char cancel_usage[] =
        "usage: boxcar cancel [--database-url URL] [--json] ID\n"
        "\n"
        "Cancels a queued job at once; a running job is killed by its worker within\n"
        "a second and ends 'cancelled' with error CANCELLED.\n"
        "\n"
        "  --json                 print {\"id\", \"status\"}, the job's status after the\n"
        "                         call: cancelled, running (its worker is stopping it),\n"
        "                         or how it had already ended\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

static const char events_usage[] =
        "usage: boxcar events [--database-url URL] [--json] ID\n"
        "\n"
        "Prints the job's audit trail (claimed, started, retried, finished ...), one\n"
        "JSON object per line.\n"
        "\n"
        "  --json                 accepted for scripts: the output is JSON anyway\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

static const char version_usage[] = "usage: boxcar version   (or boxcar --version)\n";

static int cmd_version(int argc, char **argv)
{
        if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                fputs(version_usage, stdout);
                return 0;
        }
        printf("boxcar %s\n", BOXCAR_VERSION);
        return 0;
}

const struct cli_command cli_commands[] = {
        { "migrate", "apply the schema and SQL API to the database", migrate_usage, cmd_migrate },
        { "worker", "run jobs (the daemon)", config_worker_usage, cmd_worker },
        { "enqueue", "add a job and print its id", enqueue_usage, cmd_enqueue },
        { "status", "print a job as JSON", status_usage, cmd_status },
        { "cancel", "cancel a job", cancel_usage, cmd_cancel },
        { "events", "print a job's audit trail", events_usage, cmd_events },
        { "jobs", "list jobs a page at a time; retry a failed one", jobs_usage, cmd_jobs },
        { "queues", "per-queue depth, running, rates and latency", queues_usage, cmd_queues },
        { "workers", "list the workers, their state and load", workers_usage, cmd_workers },
        { "sessions", "list sessions, their state and holder; end one", sessions_usage,
          cmd_sessions },
        { "logs", "print a job's output, or follow it while it runs", logs_usage, cmd_logs },
        { "schedule", "add, list, remove and pause periodic jobs", schedule_usage, cmd_schedule },
        { "queue", "limit, cap, pause and resume queues across all workers", queue_usage,
          cmd_queue },
        { "quota", "set and show what a scope may run and use", quota_usage, cmd_quota },
        { "webhooks", "list, redrive and verify webhook deliveries", webhooks_usage,
          cmd_webhooks },
        { "storage", "push, pull, list and link storage versions", storage_usage, cmd_storage },
        { "secrets", "make, register, list and retire the keys of job secrets", secrets_usage,
          cmd_secrets },
        { "ui", "serve the web dashboard", ui_usage, cmd_ui },
        { "sandbox", "show the isolation this host supports", sandbox_usage, cmd_sandbox },
        { "version", "print the version", version_usage, cmd_version },
        { NULL, NULL, NULL, NULL },
};

int cmd_worker(int argc, char **argv)
{
        if (cli_is_worker_drain(argc, argv))
                return cmd_worker_drain(argc, argv);
        struct worker_config cfg;
        struct bc_error err = BC_ERROR_INIT;
        int r = config_parse_worker(argc, argv, &cfg, &err);
        if (r == 1)
                return 0;
        if (r < 0) {
                int st = cli_fail("worker", &err);
                bc_error_clear(&err);
                return st;
        }
        log_setup(cfg.log_format, cfg.log_level);
        r = sandbox_check_usable(&cfg, &err);
        if (r >= 0)
                r = worker_run(&cfg, &err);
        if (r < 0) {
                log_event(LOG_ERROR, "worker.failed", "error", bc_error_message(&err), NULL);
                bc_error_clear(&err);
        }
        config_done(&cfg);
        return r < 0 ? 1 : 0;
}

static void usage(FILE *f)
{
        fprintf(f, "usage: boxcar COMMAND [ARGS...]\n\n"
                   "boxcar runs jobs from PostgreSQL in isolated sandboxes.\n\nCommands:\n");
        for (const struct cli_command *c = cli_commands; c->name; c++)
                fprintf(f, "  %-10s %s\n", c->name, c->summary);
        fprintf(f, "  %-10s %s\n", "help", "show a command's options: boxcar help COMMAND");
        fprintf(f, "\nEvery command that uses the database reads it from --database-url URL,\n"
                   "else $DATABASE_URL, else libpq's PG* variables and ~/.pgpass.\n"
                   "The job spec is documented in docs/job-spec.md.\n");
}

/* The commands whose help ends with their variables' table, built from
 * their option tables, print it as their own --help does. */
static void print_help(const struct cli_command *c)
{
        if (c->run == cmd_worker)
                config_worker_help(stdout);
        else if (c->run == cmd_ui)
                ui_help(stdout);
        else
                fputs(c->usage, stdout);
}

static const struct cli_command *find_command(const char *name)
{
        for (const struct cli_command *c = cli_commands; c->name; c++)
                if (strcmp(c->name, name) == 0)
                        return c;
        return NULL;
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                usage(stderr);
                return 2;
        }
        const char *name = argv[1];
        if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
                usage(stdout);
                return 0;
        }
        if (strcmp(name, "--version") == 0)
                return cmd_version(0, NULL);
        if (strcmp(name, "help") == 0) {
                if (argc < 3 || strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0 ||
                    strcmp(argv[2], "help") == 0) {
                        usage(stdout);
                        return 0;
                }
                const struct cli_command *c = find_command(argv[2]);
                if (!c) {
                        fprintf(stderr, "boxcar help: unknown command '%s'\n", argv[2]);
                        return 2;
                }
                print_help(c);
                return 0;
        }
        const struct cli_command *c = find_command(name);
        if (!c) {
                fprintf(stderr, "boxcar: unknown command '%s' (see boxcar --help)\n", name);
                return 2;
        }
        return c->run(argc - 1, argv + 1);
}
