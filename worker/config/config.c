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
                .report_wait_ms = 5,
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

/* getopt's table, from config_worker_options. */
static void build_longopts(struct option *out)
{
        size_t n = 0;
        for (const struct config_option *o = config_worker_options; o->name && n < OPT_COUNT; o++)
                out[n++] = (struct option){ o->name, o->has_arg, NULL, o->id };
        out[n] = (struct option){ NULL, 0, NULL, 0 };
}

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

struct file_ctx {
        struct worker_config *config;
        struct sources *src;
};

/* One "key = value" of the file: a flag's name, or a setting the
 * environment otherwise gives (file_env_keys). */
static int apply_file_entry(const char *key, const char *value, const char *path, unsigned line,
                            void *ctx, struct bc_error *err)
{
        struct file_ctx *fc = ctx;
        struct worker_config *c = fc->config;
        for (size_t i = 0; i < sizeof(file_env_keys) / sizeof(file_env_keys[0]); i++)
                if (strcmp(key, file_env_keys[i].key) == 0) {
                        if (setenv(file_env_keys[i].env, value, 0) < 0)
                                return bc_error_set(err, BC_INTERNAL, errno, "setenv: %m");
                        return 0;
                }
        for (const struct config_option *o = config_worker_options; o->name; o++) {
                if (strcmp(key, o->name) != 0 || (o->flags & CONFIG_OPT_META))
                        continue;
                /* A flag or a variable gives it: the file is not read for it. */
                if (fc->src->by_flag[o->id - OPT_FIRST] || fc->src->by_env[o->id - OPT_FIRST])
                        return 0;
                /* The file's values are never shown in an error: a file
                 * holds a database URL's password, or a secret pasted
                 * under the wrong key.  What is wrong is named by file,
                 * line, key and the form the key wants. */
                struct bc_error e = BC_ERROR_INIT;
                int r = config_apply_option(c, o->id, value, key, &e);
                if (r >= 0 && config_sources_note(fc->src, o->id, SOURCE_FILE, value) < 0)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                if (r >= 0)
                        return r;
                bool oom = e.errnum == ENOMEM;
                bc_error_clear(&e);
                if (oom)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s:%u: %s: invalid value (not shown: a config file may hold "
                                    "secrets)%s",
                                    path, line, key, config_option_hint(o->id));
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

/* Notes the flags given (and --config, --help) and the variables set,
 * before any value is applied. */
static void scan_sources(int argc, char **argv, const struct option *longopts, struct sources *src)
{
        *src = (struct sources){ .config_label = "--config" };
        optind = 0;
        opterr = 0;
        for (;;) {
                int opt = getopt_long(argc, argv, "+", longopts, NULL);
                if (opt == -1)
                        break;
                if (opt < OPT_FIRST || opt >= OPT_FIRST + OPT_COUNT)
                        continue; /* reported by the second pass */
                src->by_flag[opt - OPT_FIRST] = true;
                if (opt == OPT_HELP)
                        src->help = true;
                if (opt == OPT_PRINT_CONFIG)
                        src->print = true;
                if (opt == OPT_CONFIG)
                        src->config_path = optarg;
        }
        for (const struct config_option *o = config_worker_options; o->name; o++)
                if (!(o->flags & CONFIG_OPT_META))
                        src->by_env[o->id - OPT_FIRST] = config_option_getenv(o, NULL) != NULL;
        const char *env = getenv("BOXCAR_CONFIG");
        if (!src->config_path && env && *env) {
                src->config_path = env;
                src->config_label = "BOXCAR_CONFIG";
        }
}

static int apply_environment(struct worker_config *c, struct sources *src, struct bc_error *err)
{
        for (const struct config_option *o = config_worker_options; o->name; o++) {
                if ((o->flags & CONFIG_OPT_META) || !src->by_env[o->id - OPT_FIRST] ||
                    src->by_flag[o->id - OPT_FIRST])
                        continue;
                char buf[CONFIG_ENV_MAX];
                const char *name = config_option_env(o, NULL, buf, sizeof(buf));
                const char *v = config_option_getenv(o, NULL);
                int r = config_apply_option(c, o->id, v, name, err);
                if (r < 0)
                        return r;
                if (config_sources_note(src, o->id, SOURCE_ENV, v) < 0)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        const char *url = getenv("BOXCAR_WEBHOOK_URL");
        if (url && *url && config_set_string(&c->webhook_default_url, url) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        return 0;
}

/* --config FILE, else $BOXCAR_CONFIG, else /etc/boxcar/worker.conf if it
 * exists.  With --help no file is read: help works whatever state the file
 * is in. */
static int read_config_file(struct worker_config *c, struct sources *src, struct bc_error *err)
{
        if (src->help)
                return 0;
        const char *path = src->config_path;
        if (path && !*path)
                return bc_error_set(err, BC_USAGE, EINVAL, "%s: empty path", src->config_label);
        struct file_ctx fc = { .config = c, .src = src };
        return config_file_read(path ? path : CONFIG_FILE_DEFAULT, !path, apply_file_entry, &fc,
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
        struct option longopts[OPT_COUNT + 1];
        build_longopts(longopts);
        struct sources src;
        scan_sources(argc, argv, longopts, &src);
        struct worker_config c;
        int r = apply_defaults(&c, err);
        if (r >= 0)
                r = read_config_file(&c, &src, err);
        /* With --help neither the file nor the variables are read: help
         * works whatever state they are in (the flags before --help still
         * are, so that a bad one is named). */
        if (r >= 0 && !src.help)
                r = apply_environment(&c, &src, err);
        optind = 0;
        opterr = 0;
        while (r >= 0) {
                int idx = 0;
                int opt = getopt_long(argc, argv, "+", longopts, &idx);
                if (opt == -1)
                        break;
                if (opt == OPT_HELP) {
                        config_worker_help(stdout);
                        r = 1;
                        break;
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
                if (opt == OPT_CONFIG || opt == OPT_PRINT_CONFIG)
                        continue;
                _cleanup_free_ char *label = NULL;
                if (asprintf(&label, "--%s", longopts[idx].name) < 0)
                        r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                else
                        r = config_apply_option(&c, opt, optarg, label, err);
                if (r >= 0 &&
                    config_sources_note(&src, opt, SOURCE_FLAG, optarg ? optarg : "true") < 0)
                        r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        if (r == 0 && optind < argc)
                r = unexpected_argument(argv[optind], err);
        if (r == 0)
                r = check_config(&c, err);
        if (r == 0 && src.print) {
                config_print(stdout, &src, &c);
                r = 1;
        }
        config_sources_done(&src);
        if (r != 0) {
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
