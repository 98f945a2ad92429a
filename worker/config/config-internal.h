/* Shared by the worker configuration's files only (config.c: defaults,
 * sources and their precedence; config_option.c: one option's value onto
 * the configuration); the API is config.h. */
#ifndef BC_WORKER_CONFIG_CONFIG_INTERNAL_H
#define BC_WORKER_CONFIG_CONFIG_INTERNAL_H

#include "common/error.h"
#include "worker/config/config.h"

#define DURATION_GRAMMAR "250ms, 30s, 5m, 2h, 1d or plain seconds"
#define MAX_OUTPUT_BYTES_MAX (UINT64_C(64) << 20)
#define MAX_LOG_BYTES_MAX (UINT64_C(1) << 30)
#define VOLUME_CACHE_MAX (UINT64_C(1) << 50)
#define CONFIG_ENV_MAX 64 /* a variable's name, NUL included */

enum {
        OPT_DATABASE_URL = 256,
        OPT_QUEUES,
        OPT_CONCURRENCY,
        OPT_DB_CONNECTIONS,
        OPT_LEASE,
        OPT_POLL,
        OPT_DRAIN,
        OPT_SANDBOX,
        OPT_HELPER,
        OPT_WORK_DIR,
        OPT_WORKER_ID,
        OPT_LOG_FORMAT,
        OPT_LOG_LEVEL,
        OPT_MAX_OUTPUT,
        OPT_HOST_NETWORK,
        OPT_VOLUME_CACHE,
        OPT_URL_TTL,
        OPT_WH_TIMEOUT,
        OPT_WH_SCHEDULE,
        OPT_WH_CONCURRENCY,
        OPT_MAX_LOG,
        OPT_METRICS_ADDR,
        OPT_LISTEN_URL,
        OPT_POLL_ONLY,
        OPT_RETENTION,
        OPT_STORAGE_GC_INTERVAL,
        OPT_STORAGE_GC_GRACE,
        OPT_MAX_SESSIONS,
        OPT_SESSION_MAX_LIFETIME,
        OPT_WARM_SANDBOXES,
        OPT_WARM_WORKSPACES,
        OPT_ALLOW_PRIVATE_URLS,
        OPT_ALLOW_URL_CIDR,
        OPT_NETWORK_ALLOW,
        OPT_PRIVATE_EGRESS,
        OPT_UID_RANGE,
        OPT_DISK_RESERVE,
        OPT_DISK_WAIT,
        OPT_REPORT_WAIT,
        OPT_CONFIG,
        OPT_SECRET_KEYS,
        OPT_PRINT_CONFIG,
        OPT_HELP,
};
#define OPT_FIRST OPT_DATABASE_URL
#define OPT_COUNT (OPT_HELP - OPT_FIRST + 1)

enum config_source { SOURCE_DEFAULT, SOURCE_FILE, SOURCE_ENV, SOURCE_FLAG };

/* Where each option's value comes from: one rule for all, flag >
 * environment > file > built-in default.  A source is skipped for an option
 * that a higher one gives, rather than overridden after it, so that the
 * repeatable options (whose values add up) follow the same rule. */
struct sources {
        bool by_flag[OPT_COUNT];
        bool by_env[OPT_COUNT];
        const char *config_path; /* --config, else $BOXCAR_CONFIG, or NULL */
        const char *config_label;
        bool help, print;
        /* For --print-config: the source that gave each option and its
         * text (the flags' values joined), owned. */
        enum config_source from[OPT_COUNT];
        char *text[OPT_COUNT];
};

/* Records that FROM gave option id the text v (a repeated flag's texts are
 * joined): 0 or -ENOMEM. */
int config_sources_note(struct sources *src, int id, enum config_source from, const char *v);
void config_sources_done(struct sources *src);

/* --print-config: each setting as a line of the configuration file, with
 * its source; a secret's value is never printed. */
void config_print(FILE *f, const struct sources *src, const struct worker_config *c);

/* The entry of config_worker_options for an OPT_*, or NULL. */
const struct config_option *config_option_by_id(int id);

/* Sets one option from v; label names where v came from in errors
 * ("--lease", "BOXCAR_QUEUES", "/etc/boxcar/worker.conf:3: lease"). */
int config_apply_option(struct worker_config *c, int opt, const char *v, const char *label,
                        struct bc_error *err);
/* What opt's value must look like, " (...)" to append to an error, or "". */
const char *config_option_hint(int opt);
/* Replaces *dst with a copy of v: 0 or -ENOMEM. */
int config_set_string(char **dst, const char *v);
/* A decimal in [lo, hi]: 0, or -EINVAL. */
int config_parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *ret);

#endif
