/* The `boxcar` subcommands.  Each takes its own argv (argv[0] is the
 * subcommand's name) and returns the process exit status. */
#ifndef BC_WORKER_CLI_CLI_H
#define BC_WORKER_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

struct bc_error;

struct cli_command {
        const char *name;
        const char *summary;
        const char *usage; /* full help text */
        int (*run)(int argc, char **argv);
};

extern const struct cli_command cli_commands[];

int cmd_migrate(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_enqueue(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_sandbox(int argc, char **argv);
int cmd_storage(int argc, char **argv);
int cmd_webhooks(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_quota(int argc, char **argv);
extern const char schedule_usage[];
extern const char queue_usage[];
extern const char quota_usage[];
int cmd_jobs(int argc, char **argv);
int cmd_queues(int argc, char **argv);
int cmd_workers(int argc, char **argv);
/* `boxcar worker drain ID` (cmd_workers.c): whether argv asks for it, and the
 * command itself. */
bool cli_is_worker_drain(int argc, char **argv);
int cmd_worker_drain(int argc, char **argv);
extern const char workers_usage[];
int cmd_sessions(int argc, char **argv);
extern const char sessions_usage[];
int cmd_ui(int argc, char **argv);
extern const char logs_usage[];
extern const char jobs_usage[];
extern const char queues_usage[];
extern const char ui_usage[];
/* ui_usage and the table of its variables (`boxcar help ui`). */
void ui_help(FILE *f);
extern const char webhooks_usage[];
extern const char storage_usage[];
extern const char sandbox_usage[];
int cmd_secrets(int argc, char **argv);
extern const char secrets_usage[];

/* Fails (err set) when --sandbox namespace is chosen but the helper is
 * missing or the host cannot isolate jobs. */
struct worker_config;
int sandbox_check_usable(const struct worker_config *cfg, struct bc_error *err);

/* Shared by the subcommands: --database-url URL (else $DATABASE_URL) and
 * --help, removed from argv in place.  Returns 0 on success, 1 when --help
 * was handled (usage printed), 2 on a usage error (message printed). */
int cli_common_options(int *argc, char **argv, const char *usage, const char **ret_url);

/* Removes every flag (e.g. "--raw") before a "--" from argv (in place);
 * returns whether there was one.  For the commands without a getopt
 * table; cli_take_json takes "--json". */
bool cli_take_flag(int *argc, char **argv, const char *flag);
bool cli_take_json(int *argc, char **argv);

/* Prints a cJSON value on one line and frees it; false when out of memory. */
struct cJSON;
bool cli_print_json(struct cJSON *value);
/* Prints JSON text and a newline, DEL and C1 controls escaped (a job's
 * text is hostile to terminals: term_safe_json); false when out of
 * memory.  Every JSON the CLI prints goes through it. */
bool cli_print_json_text(const char *text);

/* A job spec for the CLI: the file at path ('-': stdin, at most 4 MiB),
 * or {"command": argv}.  The caller frees the text (NULL: out of memory). */
int cli_read_spec_file(const char *path, char **ret, struct bc_error *err);
char *cli_command_spec(int argc, char **argv);

/* Prints "boxcar NAME: message" to stderr and clears err; returns the
 * exit status for the error's kind (2 for usage, 1 otherwise). */
int cli_fail(const char *name, struct bc_error *err);

/* After getopt_long returned '?' or ':': BC_USAGE naming the option it
 * stopped at (argv[optind - 1]); returns -EINVAL. */
int cli_bad_option(char **argv, struct bc_error *err);

#endif
