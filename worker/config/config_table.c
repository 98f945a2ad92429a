/* The worker's option table: every flag once, with what its other sources
 * need (the file's key is its name, its variable is derived from it), so
 * that a new flag gets its file key, its variable and its line in the
 * help's table of variables by being added here. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/sandbox.h"
#include "worker/config/config-internal.h"

/* The help's order: what an operator sets first comes first.  def is the
 * README's "default" column, word for word (tests/docs checks it); with
 * CONFIG_OPT_VALUE the unit tests check that it is what the code uses. */
const struct config_option config_worker_options[] = {
        { "database-url", required_argument, OPT_DATABASE_URL, CONFIG_OPT_SECRET,
          "libpq's PG* variables", "DATABASE_URL" },
        { "queues", required_argument, OPT_QUEUES, CONFIG_OPT_VALUE, "default", NULL },
        { "concurrency", required_argument, OPT_CONCURRENCY, CONFIG_OPT_VALUE, "4", NULL },
        { "db-connections", required_argument, OPT_DB_CONNECTIONS, CONFIG_OPT_VALUE, "4", NULL },
        { "listen-database-url", required_argument, OPT_LISTEN_URL, CONFIG_OPT_SECRET, "none",
          NULL },
        { "poll-only", no_argument, OPT_POLL_ONLY, CONFIG_OPT_VALUE, "false", NULL },
        { "lease", required_argument, OPT_LEASE, CONFIG_OPT_VALUE, "30s", NULL },
        { "poll-interval", required_argument, OPT_POLL, CONFIG_OPT_VALUE, "5s", NULL },
        { "drain-timeout", required_argument, OPT_DRAIN, CONFIG_OPT_VALUE, "60s", NULL },
        { "report-wait", required_argument, OPT_REPORT_WAIT, CONFIG_OPT_VALUE, "5ms", NULL },
        { "sandbox", required_argument, OPT_SANDBOX, CONFIG_OPT_VALUE, "namespace", NULL },
        { "sandbox-helper", required_argument, OPT_HELPER, 0, "next to boxcar", NULL },
        { "warm-sandboxes", required_argument, OPT_WARM_SANDBOXES, 0, "concurrency + 2", NULL },
        { "allow-host-network", required_argument, OPT_HOST_NETWORK, 0, "none", NULL },
        { "network-allow", required_argument, OPT_NETWORK_ALLOW, CONFIG_OPT_REPEAT, "none", NULL },
        { "uid-range", required_argument, OPT_UID_RANGE, 0, SANDBOX_ID_RANGE_DEFAULT, NULL },
        { "allow-private-egress", required_argument, OPT_PRIVATE_EGRESS, CONFIG_OPT_REPEAT, "none",
          NULL },
        { "allow-private-urls", no_argument, OPT_ALLOW_PRIVATE_URLS, CONFIG_OPT_VALUE, "false",
          NULL },
        /* Plural since before the table: kept for the deployments using it. */
        { "allow-url-cidr", required_argument, OPT_ALLOW_URL_CIDR, CONFIG_OPT_REPEAT, "none",
          "BOXCAR_ALLOW_URL_CIDRS" },
        { "work-dir", required_argument, OPT_WORK_DIR, CONFIG_OPT_VALUE, "/var/tmp/boxcar", NULL },
        { "secret-keys", required_argument, OPT_SECRET_KEYS, 0, "none", NULL },
        { "worker-id", required_argument, OPT_WORKER_ID, 0, "host-pid-random", NULL },
        { "retention", required_argument, OPT_RETENTION, CONFIG_OPT_VALUE, "7d", NULL },
        { "storage-gc-interval", required_argument, OPT_STORAGE_GC_INTERVAL, CONFIG_OPT_VALUE,
          "1h", NULL },
        { "storage-gc-grace", required_argument, OPT_STORAGE_GC_GRACE, CONFIG_OPT_VALUE, "1h",
          NULL },
        { "max-sessions", required_argument, OPT_MAX_SESSIONS, CONFIG_OPT_VALUE, "8", NULL },
        { "session-max-lifetime", required_argument, OPT_SESSION_MAX_LIFETIME, CONFIG_OPT_VALUE,
          "8h", NULL },
        { "volume-cache-mb", required_argument, OPT_VOLUME_CACHE, CONFIG_OPT_VALUE, "10GiB",
          NULL },
        { "disk-reserve", required_argument, OPT_DISK_RESERVE, CONFIG_OPT_VALUE, "5%", NULL },
        { "disk-wait", required_argument, OPT_DISK_WAIT, CONFIG_OPT_VALUE, "60s", NULL },
        { "artifact-url-ttl", required_argument, OPT_URL_TTL, CONFIG_OPT_VALUE, "24h", NULL },
        { "webhook-timeout", required_argument, OPT_WH_TIMEOUT, CONFIG_OPT_VALUE, "15s", NULL },
        { "webhook-retry-schedule", required_argument, OPT_WH_SCHEDULE, CONFIG_OPT_VALUE,
          "5s,5m,30m,2h,5h,10h,10h", NULL },
        { "webhook-concurrency", required_argument, OPT_WH_CONCURRENCY, CONFIG_OPT_VALUE, "4",
          NULL },
        { "max-log-bytes", required_argument, OPT_MAX_LOG, CONFIG_OPT_VALUE, "10MiB", NULL },
        { "max-output-bytes", required_argument, OPT_MAX_OUTPUT, CONFIG_OPT_VALUE, "16MiB", NULL },
        { "warm-workspaces", required_argument, OPT_WARM_WORKSPACES, 0, "concurrency + 2", NULL },
        { "metrics-addr", required_argument, OPT_METRICS_ADDR, 0, "off", NULL },
        { "log-format", required_argument, OPT_LOG_FORMAT, CONFIG_OPT_VALUE, "text", NULL },
        { "log-level", required_argument, OPT_LOG_LEVEL, CONFIG_OPT_VALUE, "info", NULL },
        /* Read before the others: it names the file they come over. */
        { "config", required_argument, OPT_CONFIG, CONFIG_OPT_META,
          "/etc/boxcar/worker.conf if it exists", NULL },
        { "print-config", no_argument, OPT_PRINT_CONFIG, CONFIG_OPT_META | CONFIG_OPT_NO_ENV, "",
          NULL },
        { "help", no_argument, OPT_HELP, CONFIG_OPT_META | CONFIG_OPT_NO_ENV, "", NULL },
        { NULL, 0, 0, 0, NULL, NULL },
};

const char *config_option_env(const struct config_option *o, const char *prefix, char *buf,
                              size_t size)
{
        if (o->flags & CONFIG_OPT_NO_ENV)
                return NULL;
        if (o->env)
                return o->env;
        int n = snprintf(buf, size, "BOXCAR_%s%s", prefix ? prefix : "", o->name);
        if (n < 0 || (size_t)n >= size)
                return NULL;
        for (char *p = buf; *p; p++)
                *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        return buf;
}

const char *config_option_getenv(const struct config_option *o, const char *prefix)
{
        char buf[CONFIG_ENV_MAX];
        const char *name = config_option_env(o, prefix, buf, sizeof(buf));
        const char *v = name ? getenv(name) : NULL;
        if (v && !*v && strcmp(name, "DATABASE_URL") != 0)
                return NULL;
        return v;
}

void config_options_print_env(FILE *f, const struct config_option *opts, const char *prefix)
{
        fprintf(f, "  %-26s %-30s %s\n", "FLAG", "VARIABLE", "DEFAULT");
        for (const struct config_option *o = opts; o->name; o++) {
                char buf[CONFIG_ENV_MAX];
                const char *env = config_option_env(o, prefix, buf, sizeof(buf));
                if (!env)
                        continue;
                fprintf(f, "  --%-24s %-30s %s\n", o->name, env, o->def);
        }
}

int config_parse_bool(const char *v, bool *ret)
{
        static const char *const words[] = { "false", "true", "0", "1" };
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strcmp(v, words[i]) == 0) {
                        *ret = i % 2;
                        return 0;
                }
        return -EINVAL;
}

const struct config_option *config_option_by_id(int id)
{
        for (const struct config_option *o = config_worker_options; o->name; o++)
                if (o->id == id)
                        return o;
        return NULL;
}
