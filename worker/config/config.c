#include "worker/config/config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "worker/config/config-internal.h"
#include "worker/config/config_file.h"

static char *default_worker_id(void)
{
        char host[256] = "host";
        gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = '\0';
        unsigned rnd = 0;
        FILE *f = fopen("/dev/urandom", "re");
        if (f) {
                if (fread(&rnd, sizeof(rnd), 1, f) != 1)
                        rnd = (unsigned)getpid();
                fclose(f);
        }
        char *id = NULL;
        if (asprintf(&id, "%s-%d-%06x", host, (int)getpid(), rnd & 0xffffff) < 0)
                return NULL;
        return id;
}

static char *default_helper_path(void)
{
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return strdup("boxcar-sandbox");
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        *slash = '\0';
        char *path = NULL;
        if (asprintf(&path, "%s/boxcar-sandbox", self) < 0)
                return NULL;
        return path;
}

static int apply_defaults(struct worker_config *c, struct bc_error *err)
{
        *c = (struct worker_config){
                .concurrency = 4,
                .db_connections = 4,
                .lease_s = 30,
                .poll_interval_s = 5,
                .drain_timeout_s = 60,
                .sandbox = BACKEND_NAMESPACE,
                .log_format = LOG_TEXT,
                .log_level = LOG_INFO,
                .max_output_bytes = 16u << 20,
                .volume_cache_bytes = 10240ull << 20,
                .artifact_url_ttl_s = 86400,
                .webhook_timeout_s = 15,
                .webhook_concurrency = 4,
                .max_log_bytes = 10u << 20,
                .retention_s = 7 * 86400,
                .storage_gc_interval_s = 3600,
                .storage_gc_grace_s = 3600,
                .max_sessions = 8,
                .session_max_lifetime_s = 8 * 3600,
                .warm_workspaces = -1,
                .warm_sandboxes = -1,
                .disk_reserve_pct = 5,
                .disk_wait_s = 60,
        };
        if (config_set_string(&c->work_dir, "/var/tmp/boxcar") < 0 ||
            config_parse_schedule("5s,5m,30m,2h,5h,10h,10h", &c->webhook_schedule) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        return config_parse_queues("default", &c->queues, err);
}

static const struct option worker_options[] = {
        { "database-url", required_argument, NULL, OPT_DATABASE_URL },
        { "queues", required_argument, NULL, OPT_QUEUES },
        { "concurrency", required_argument, NULL, OPT_CONCURRENCY },
        { "db-connections", required_argument, NULL, OPT_DB_CONNECTIONS },
        { "lease", required_argument, NULL, OPT_LEASE },
        { "poll-interval", required_argument, NULL, OPT_POLL },
        { "drain-timeout", required_argument, NULL, OPT_DRAIN },
        { "sandbox", required_argument, NULL, OPT_SANDBOX },
        { "sandbox-helper", required_argument, NULL, OPT_HELPER },
        { "work-dir", required_argument, NULL, OPT_WORK_DIR },
        { "worker-id", required_argument, NULL, OPT_WORKER_ID },
        { "log-format", required_argument, NULL, OPT_LOG_FORMAT },
        { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
        { "max-output-bytes", required_argument, NULL, OPT_MAX_OUTPUT },
        { "allow-host-network", required_argument, NULL, OPT_HOST_NETWORK },
        { "volume-cache-mb", required_argument, NULL, OPT_VOLUME_CACHE },
        { "disk-reserve", required_argument, NULL, OPT_DISK_RESERVE },
        { "disk-wait", required_argument, NULL, OPT_DISK_WAIT },
        { "artifact-url-ttl", required_argument, NULL, OPT_URL_TTL },
        { "webhook-timeout", required_argument, NULL, OPT_WH_TIMEOUT },
        { "webhook-retry-schedule", required_argument, NULL, OPT_WH_SCHEDULE },
        { "webhook-concurrency", required_argument, NULL, OPT_WH_CONCURRENCY },
        { "warm-sandboxes", required_argument, NULL, OPT_WARM_SANDBOXES },
        { "max-log-bytes", required_argument, NULL, OPT_MAX_LOG },
        { "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
        { "listen-database-url", required_argument, NULL, OPT_LISTEN_URL },
        { "poll-only", no_argument, NULL, OPT_POLL_ONLY },
        { "retention", required_argument, NULL, OPT_RETENTION },
        { "storage-gc-interval", required_argument, NULL, OPT_STORAGE_GC_INTERVAL },
        { "storage-gc-grace", required_argument, NULL, OPT_STORAGE_GC_GRACE },
        { "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
        { "session-max-lifetime", required_argument, NULL, OPT_SESSION_MAX_LIFETIME },
        { "warm-workspaces", required_argument, NULL, OPT_WARM_WORKSPACES },
        { "allow-private-urls", no_argument, NULL, OPT_ALLOW_PRIVATE_URLS },
        { "allow-url-cidr", required_argument, NULL, OPT_ALLOW_URL_CIDR },
        { "network-allow", required_argument, NULL, OPT_NETWORK_ALLOW },
        { "allow-private-egress", required_argument, NULL, OPT_PRIVATE_EGRESS },
        { "uid-range", required_argument, NULL, OPT_UID_RANGE },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "secret-keys", required_argument, NULL, OPT_SECRET_KEYS },
        { "help", no_argument, NULL, OPT_HELP },
        { NULL, 0, NULL, 0 },
};

/* The flags the environment can also set (flag > environment > file). */
static const struct {
        int opt;
        const char *env;
} option_env[] = {
        { OPT_DATABASE_URL, "DATABASE_URL" },
        { OPT_QUEUES, "BOXCAR_QUEUES" },
        { OPT_CONCURRENCY, "BOXCAR_CONCURRENCY" },
        { OPT_WORK_DIR, "BOXCAR_WORK_DIR" },
        { OPT_SECRET_KEYS, "BOXCAR_SECRET_KEYS" },
        { OPT_ALLOW_PRIVATE_URLS, "BOXCAR_ALLOW_PRIVATE_URLS" },
        { OPT_ALLOW_URL_CIDR, "BOXCAR_ALLOW_URL_CIDRS" },
        { OPT_PRIVATE_EGRESS, "BOXCAR_ALLOW_PRIVATE_EGRESS" },
        { OPT_UID_RANGE, "BOXCAR_UID_RANGE" },
};

/* Settings read from the environment only (by the storage and webhook
 * code), which the file may also give: a file key sets the variable when
 * the environment does not, so the environment still wins.  Secrets
 * (AWS_SECRET_ACCESS_KEY, BOXCAR_WEBHOOK_SECRET) are not among them: they
 * stay in the environment. */
static const struct {
        const char *key, *env;
} file_env_keys[] = {
        { "s3-bucket", "BOXCAR_S3_BUCKET" },     { "s3-prefix", "BOXCAR_S3_PREFIX" },
        { "aws-region", "AWS_REGION" },          { "aws-endpoint-url-s3", "AWS_ENDPOINT_URL_S3" },
        { "webhook-url", "BOXCAR_WEBHOOK_URL" },
};

static int check_config(struct worker_config *c, struct bc_error *err)
{
        if (c->poll_interval_s > c->lease_s)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--poll-interval (%gs) must not exceed --lease (%gs)",
                                    c->poll_interval_s, c->lease_s);
        if (c->poll_only && c->listen_database_url)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--poll-only and --listen-database-url exclude each other");
        if (c->lease_s < 1)
                return bc_error_set(err, BC_USAGE, EINVAL, "--lease must be at least 1s");
        if (!c->worker_id)
                c->worker_id = default_worker_id();
        if (!c->worker_id)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (strlen(c->worker_id) > 200)
                return bc_error_set(err, BC_USAGE, EINVAL, "--worker-id: longer than 200");
        if (!c->sandbox_helper)
                c->sandbox_helper = default_helper_path();
        if (!c->sandbox_helper)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (c->work_dir[0] != '/')
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--work-dir: '%s' must be an absolute path", c->work_dir);
        return 0;
}

/* One "key = value" of the file: a flag's name, or a setting the
 * environment otherwise gives (file_env_keys). */
static int apply_file_entry(const char *key, const char *value, const char *path, unsigned line,
                            void *ctx, struct bc_error *err)
{
        struct worker_config *c = ctx;
        for (size_t i = 0; i < sizeof(file_env_keys) / sizeof(file_env_keys[0]); i++)
                if (strcmp(key, file_env_keys[i].key) == 0) {
                        if (setenv(file_env_keys[i].env, value, 0) < 0)
                                return bc_error_set(err, BC_INTERNAL, errno, "setenv: %m");
                        return 0;
                }
        for (const struct option *o = worker_options; o->name; o++) {
                if (strcmp(key, o->name) != 0 || o->val == OPT_HELP || o->val == OPT_CONFIG)
                        continue;
                /* The file's values are never shown in an error: a file
                 * holds a database URL's password, or a secret pasted
                 * under the wrong key.  What is wrong is named by file,
                 * line, key and the form the key wants. */
                struct bc_error e = BC_ERROR_INIT;
                int r = config_apply_option(c, o->val, value, key, &e);
                if (r >= 0)
                        return r;
                bool oom = e.errnum == ENOMEM;
                bc_error_clear(&e);
                if (oom)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s:%u: %s: invalid value (not shown: a config file may hold "
                                    "secrets)%s",
                                    path, line, key, config_option_hint(o->val));
        }
        char others[128] = "";
        for (size_t i = 0; i < sizeof(file_env_keys) / sizeof(file_env_keys[0]); i++)
                snprintf(others + strlen(others), sizeof(others) - strlen(others), "%s%s",
                         i ? ", " : "", file_env_keys[i].key);
        return bc_error_set(err, BC_USAGE, EINVAL,
                            "%s:%u: unknown key '%s' (the keys are the long flags of boxcar "
                            "worker without '--', and %s; see boxcar help worker)",
                            path, line, key, others);
}

static int apply_environment(struct worker_config *c, struct bc_error *err)
{
        for (size_t i = 0; i < sizeof(option_env) / sizeof(option_env[0]); i++) {
                const char *v = getenv(option_env[i].env);
                /* An empty variable is unset (compose's ${X:-} patterns),
                 * except DATABASE_URL, where "" means libpq's PG* defaults. */
                if (!v || (!*v && option_env[i].opt != OPT_DATABASE_URL))
                        continue;
                int r = config_apply_option(c, option_env[i].opt, v, option_env[i].env, err);
                if (r < 0)
                        return r;
        }
        const char *url = getenv("BOXCAR_WEBHOOK_URL");
        if (url && *url && config_set_string(&c->webhook_default_url, url) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        return 0;
}

/* --config FILE, else $BOXCAR_CONFIG, else /etc/boxcar/worker.conf if it
 * exists.  Looked for before the flags are applied (they override the
 * file), so this pass only notes --config and --help.  With --help no file
 * is read: help works whatever state the file is in. */
static int read_config_file(int argc, char **argv, struct worker_config *c, struct bc_error *err)
{
        const char *path = NULL;
        optind = 0;
        opterr = 0;
        for (;;) {
                int opt = getopt_long(argc, argv, "+", worker_options, NULL);
                if (opt == -1)
                        break;
                if (opt == OPT_HELP)
                        return 0;
                if (opt == OPT_CONFIG)
                        path = optarg;
        }
        const char *env = getenv("BOXCAR_CONFIG");
        const char *label = "--config";
        if (!path && env && *env) {
                path = env;
                label = "BOXCAR_CONFIG";
        }
        if (path && !*path)
                return bc_error_set(err, BC_USAGE, EINVAL, "%s: empty path", label);
        return config_file_read(path ? path : CONFIG_FILE_DEFAULT, !path, apply_file_entry, c,
                                err);
}

/* Shown when it is a plain word; a URL or anything with '@', ':' or '='
 * may be a database URL whose flag was forgotten, password included. */
static int unexpected_argument(const char *a, struct bc_error *err)
{
        size_t n = strlen(a);
        if (n <= 64 && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789._/,-") == n)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'", a);
        return bc_error_set(err, BC_USAGE, EINVAL,
                            "unexpected argument (not shown: it may hold a secret; the flags "
                            "take their values as --flag VALUE or --flag=VALUE)");
}

int config_parse_worker(int argc, char **argv, struct worker_config *ret_config,
                        struct bc_error *err)
{
        struct worker_config c;
        int r = apply_defaults(&c, err);
        if (r >= 0)
                r = read_config_file(argc, argv, &c, err);
        if (r >= 0)
                r = apply_environment(&c, err);
        optind = 0;
        opterr = 0;
        while (r >= 0) {
                int idx = 0;
                int opt = getopt_long(argc, argv, "+", worker_options, &idx);
                if (opt == -1)
                        break;
                if (opt == OPT_HELP) {
                        fputs(config_worker_usage, stdout);
                        config_done(&c);
                        return 1;
                }
                if (opt == '?' || opt == ':') {
                        /* The name only: "--databse-url=postgres://u:pw@h"
                         * is a typo with a password in it. */
                        const char *a = argv[optind - 1];
                        r = bc_error_set(err, BC_USAGE, EINVAL,
                                         "unknown or incomplete option '%.*s'",
                                         (int)strcspn(a, "="), a);
                        break;
                }
                if (opt == OPT_CONFIG)
                        continue;
                _cleanup_free_ char *label = NULL;
                if (asprintf(&label, "--%s", worker_options[idx].name) < 0)
                        r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                else
                        r = config_apply_option(&c, opt, optarg, label, err);
        }
        if (r >= 0 && optind < argc)
                r = unexpected_argument(argv[optind], err);
        if (r >= 0)
                r = check_config(&c, err);
        if (r < 0) {
                config_done(&c);
                return r;
        }
        *ret_config = c;
        return 0;
}

void config_done(struct worker_config *c)
{
        if (!c)
                return;
        free(c->database_url);
        config_strv_free(c->queues);
        config_strv_free(c->host_network_queues);
        config_network_caps_free(c);
        free(c->sandbox_helper);
        free(c->work_dir);
        free(c->secret_keys_dir);
        free(c->worker_id);
        free(c->webhook_schedule);
        free(c->webhook_default_url);
        free(c->metrics_addr);
        free(c->uid_range);
        free(c->listen_database_url);
        memset(c, 0, sizeof(*c));
}

bool config_queue_allows_host_network(const struct worker_config *c, const char *queue)
{
        for (char **q = c->host_network_queues; q && *q; q++)
                if (strcmp(*q, queue) == 0)
                        return true;
        return false;
}
