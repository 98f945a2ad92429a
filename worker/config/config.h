/* `boxcar worker` configuration: flags, environment, configuration file,
 * parsed and checked before anything connects. */
#ifndef BC_WORKER_CONFIG_CONFIG_H
#define BC_WORKER_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/netallow.h"
#include "common/netguard.h"

enum sandbox_backend { BACKEND_NONE, BACKEND_NAMESPACE };
enum log_format { LOG_TEXT, LOG_JSON };
enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* What the jobs of one queue may ask for in "network": {"allow": [...]}. */
struct network_cap {
        char *queue;
        struct netallow_rule *rules;
        size_t n_rules;
};

struct worker_config {
        char *database_url;
        char **queues; /* NULL-terminated, never empty */
        unsigned concurrency;
        unsigned db_connections; /* the job slots' shared connections */
        double lease_s;
        double poll_interval_s;
        double drain_timeout_s;
        /* --report-wait: how long a result waits for those of the jobs
         * about to end, and the slots a call freed for each other. */
        unsigned report_wait_ms;
        enum sandbox_backend sandbox;
        char *sandbox_helper;  /* path of boxcar-sandbox */
        char *work_dir;        /* per-job directories go under it */
        char *secret_keys_dir; /* --secret-keys: private keys of job secrets, or NULL */
        char *worker_id;       /* generated when not given */
        enum log_format log_format;
        enum log_level log_level;
        unsigned max_output_bytes;        /* cap on a job's kept stdout/stderr tail */
        char **host_network_queues;       /* queues whose jobs may ask for network "host" */
        struct network_cap *network_caps; /* --network-allow: per queue */
        size_t n_network_caps;
        uint64_t volume_cache_bytes; /* bound on the extracted volume cache */
        /* --disk-reserve: kept free of jobs' workspaces on --work-dir's
         * filesystem, in percent of it, or in bytes when the percent is < 0 */
        int disk_reserve_pct;
        uint64_t disk_reserve_bytes;
        double disk_wait_s;            /* --disk-wait: how long a job waits for it */
        double artifact_url_ttl_s;     /* lifetime of result.artifact.url */
        char *metrics_addr;            /* --metrics-addr HOST:PORT, or NULL */
        char *listen_database_url;     /* a direct connection for LISTEN, or NULL */
        bool poll_only;                /* no LISTEN at all (PgBouncer without a direct URL) */
        double retention_s;            /* prune finished jobs older than this; 0: never */
        double storage_gc_interval_s;  /* the leader's storage collection; 0: never */
        double storage_gc_grace_s;     /* objects used more recently are kept */
        unsigned max_sessions;         /* --max-sessions: live sessions held at once */
        double session_max_lifetime_s; /* --session-max-lifetime: a session's sandbox at most */
        uint64_t max_log_bytes;        /* live log (job_logs) stored per job */
        double webhook_timeout_s;
        unsigned webhook_concurrency;
        int warm_sandboxes;        /* --warm-sandboxes: most ready sandboxes per
                                       * network kind; -1: concurrency + 2 */
        char *webhook_schedule;    /* SQL interval[] literal: "{5 seconds,300 seconds}" */
        char *webhook_default_url; /* BOXCAR_WEBHOOK_URL, or NULL */
        int warm_workspaces;       /* --warm-workspaces: most ready workspace
                                       * filesystems; -1: concurrency + 2 */
        /* Where URLs from job specs (webhooks, volume urls) may lead:
         * --allow-private-urls, --allow-url-cidr (and their variables). */
        struct netguard url_guard;
        /* --uid-range: the host ids root sandboxes take, one uid and gid
         * each (sandbox/sandbox.h); NULL: the default. */
        char *uid_range;
};

/* Parses "250ms", "30s", "1.5h", "7d" or a plain number of seconds: digits,
 * an optional fraction and an optional unit (ms, s, m, h, d), at most 365d.
 * Returns 0 and sets *ret_seconds (> 0 unless allow_zero), or -EINVAL. */
int config_parse_duration(const char *s, bool allow_zero, double *ret_seconds);

/* Turns "5s,5m,30m" into the SQL interval[] literal "{5 seconds,...}".
 * Returns 0 or -EINVAL (an entry is not a duration, or more than 32). */
int config_parse_schedule(const char *s, char **ret_literal);

/* Splits "a,b,c" into a NULL-terminated vector of queue names, each checked
 * against the queue name rule.  Caller frees with config_strv_free. */
int config_parse_queues(const char *s, char ***ret_queues, struct bc_error *err);
void config_strv_free(char **v);
/* config_parse_queues, naming LABEL (a flag, a variable or FILE:LINE) in
 * errors. */
int config_parse_queues_as(const char *label, const char *s, char ***ret_queues,
                           struct bc_error *err);

/* Parses argv of `boxcar worker` (argv[0] is "worker") over the environment
 * (each option's variable: config_option_env) over the configuration file
 * (--config FILE, $BOXCAR_CONFIG, else /etc/boxcar/worker.conf if it
 * exists; its environment-only keys are exported when the variable is
 * unset): for each option the first of flag, variable, file, default.
 * Returns 0, 1 when --help or --print-config was asked (printed to
 * stdout), or a negative errno with err naming the bad flag, variable or
 * file line. */
int config_parse_worker(int argc, char **argv, struct worker_config *ret_config,
                        struct bc_error *err);
void config_done(struct worker_config *c);

bool config_queue_allows_host_network(const struct worker_config *c, const char *queue);

/* --network-allow "QUEUE=RULE,RULE;QUEUE2=RULE": adds to c's caps (the
 * flag is repeatable; ';' separates queues in one value, for the
 * configuration file, whose keys are given once).  BC_USAGE naming label
 * and the bad part. (worker/config/config_network.c) */
int config_network_allow(struct worker_config *c, const char *label, const char *value,
                         struct bc_error *err);

/* --allow-private-egress "QUEUE=RULE,RULE;...": caps like --network-allow
 * whose rules may reach private addresses; exact names (no wildcard) and
 * CIDRs inside one special-purpose range only.  BC_USAGE naming label and
 * the rule. (worker/config/config_network.c) */
int config_private_egress(struct worker_config *c, const char *label, const char *value,
                          struct bc_error *err);

/* Whether a job's rule (covered by queue's cap) may reach private
 * addresses: an --allow-private-egress rule of queue covers it. */
bool config_network_private(const struct worker_config *c, const char *queue,
                            const struct netallow_rule *rule);

/* The index of the first of a job's rules that queue's cap does not cover
 * (every rule when the queue has no cap), or -1 when all are covered. */
ssize_t config_network_uncovered(const struct worker_config *c, const char *queue,
                                 const struct netallow_rule *rules, size_t n);

/* Frees the caps (config_done calls it). */
void config_network_caps_free(struct worker_config *c);

/* Whether q is a queue name (name or scope/name). */
bool config_valid_queue(const char *q);

extern const char config_worker_usage[];

/* One flag of a command as its other sources see it: the configuration
 * file's key is the same name, its environment variable is derived from
 * the name (config_option_env).  A command's table ends with a NULL name.
 * The first three fields are getopt's struct option's order, so that the
 * docs suite finds the flags the way it finds getopt tables. */
struct config_option {
        const char *name; /* long flag without "--" */
        int has_arg;      /* getopt's: no_argument is a switch */
        int id;
        unsigned flags;  /* CONFIG_OPT_* */
        const char *def; /* the default as the help and the README show it */
        const char *env; /* the variable, when it is not the derived name */
};
#define CONFIG_OPT_SECRET 1u /* its value may hold a password: never shown */
#define CONFIG_OPT_REPEAT 2u /* repeatable: the flags' values add up */
#define CONFIG_OPT_VALUE 4u  /* def is a value the option parses (tests check it) */
#define CONFIG_OPT_META 8u   /* not a setting (--config, --help): no file key */
#define CONFIG_OPT_NO_ENV 16u

/* The worker's options (worker/config/config_table.c). */
extern const struct config_option config_worker_options[];

/* The variable of o: o->env, else "BOXCAR_" PREFIX NAME, upper-cased, '-'
 * as '_' (--metrics-addr: BOXCAR_METRICS_ADDR; prefix "UI_" for boxcar
 * ui).  Returns buf, or NULL for an option without one (CONFIG_OPT_NO_ENV)
 * or a name too long for buf. */
const char *config_option_env(const struct config_option *o, const char *prefix, char *buf,
                              size_t size);

/* The lookup of o's variable: its value, or NULL when unset or empty (an
 * empty variable is unset: compose's ${X:-}), but for DATABASE_URL, where
 * "" means libpq's defaults. */
const char *config_option_getenv(const struct config_option *o, const char *prefix);

/* Prints the help's table of opts: flag, variable, default, a line each. */
void config_options_print_env(FILE *f, const struct config_option *opts, const char *prefix);

/* A switch's value from the environment or a file: true, false, 1 or 0.
 * Returns 0, or -EINVAL. */
int config_parse_bool(const char *v, bool *ret);

/* `boxcar worker --help` and `boxcar help worker`: config_worker_usage and
 * the table of the variables. */
void config_worker_help(FILE *f);

#endif
