/* Where `boxcar worker`'s settings come from: one rule for every option,
 * flag > environment > configuration file > built-in default, each
 * option's variable derived from its flag, and errors that name the
 * source of a bad value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "worker/config/config.h"

static char conf_path[64];

/* Unsets every option's variable (and BOXCAR_CONFIG): each case sets its
 * own. */
static void clear_env(void)
{
        for (const struct config_option *o = config_worker_options; o->name; o++) {
                char buf[64];
                const char *name = config_option_env(o, NULL, buf, sizeof(buf));
                if (name)
                        unsetenv(name);
        }
        unsetenv("BOXCAR_WEBHOOK_URL");
}

/* TEXT as the configuration file, or an empty one for NULL. */
static void write_conf(const char *text)
{
        FILE *f = fopen(conf_path, "w");
        assert_non_null(f);
        fputs(text ? text : "", f);
        fclose(f);
}

/* argv: "worker", --config conf_path, then the NULL-terminated rest. */
static int parse(struct worker_config *c, struct bc_error *err, ...)
{
        char *argv[16] = { "worker", "--config", conf_path };
        int argc = 3;
        va_list ap;
        va_start(ap, err);
        for (char *a = va_arg(ap, char *); a; a = va_arg(ap, char *))
                argv[argc++] = a;
        va_end(ap);
        return config_parse_worker(argc, argv, c, err);
}

static int setup(void **state)
{
        (void)state;
        strcpy(conf_path, "/tmp/boxcar-test-sources.XXXXXX");
        int fd = mkstemp(conf_path);
        assert_true(fd >= 0);
        close(fd);
        clear_env();
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        unlink(conf_path);
        clear_env();
        return 0;
}

/* The value of one setting as text, to compare across sources. */
static void show(const struct worker_config *c, const char *key, char *buf, size_t size)
{
        if (strcmp(key, "worker-id") == 0) {
                snprintf(buf, size, "%s", c->worker_id);
        } else if (strcmp(key, "concurrency") == 0) {
                snprintf(buf, size, "%u", c->concurrency);
        } else if (strcmp(key, "lease") == 0) {
                snprintf(buf, size, "%gs", c->lease_s);
        } else if (strcmp(key, "poll-only") == 0) {
                snprintf(buf, size, "%s", c->poll_only ? "true" : "false");
        } else if (strcmp(key, "queues") == 0) {
                buf[0] = '\0';
                for (char **q = c->queues; *q; q++)
                        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s",
                                 q == c->queues ? "" : ",", *q);
        } else if (strcmp(key, "network-allow") == 0) {
                buf[0] = '\0';
                for (size_t i = 0; i < c->n_network_caps; i++)
                        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s:%zu", i ? "," : "",
                                 c->network_caps[i].queue, c->network_caps[i].n_rules);
        } else {
                fail_msg("no show for %s", key);
        }
}

/* For a string, a number, a duration, a boolean, a list and a repeatable
 * list: the default alone, the file over it, the variable over the file,
 * the flag over the variable. */
static void test_precedence(void **state)
{
        (void)state;
        static const struct {
                const char *key, *env, *def;
                const char *file, *file_want;
                const char *env_value, *env_want;
                const char *flag[5], *flag_want;
        } cases[] = {
                { "worker-id",
                  "BOXCAR_WORKER_ID",
                  NULL,
                  "from-file",
                  "from-file",
                  "from-env",
                  "from-env",
                  { "--worker-id", "from-flag" },
                  "from-flag" },
                { "concurrency",
                  "BOXCAR_CONCURRENCY",
                  "4",
                  "5",
                  "5",
                  "6",
                  "6",
                  { "--concurrency", "7" },
                  "7" },
                { "lease",
                  "BOXCAR_LEASE",
                  "30s",
                  "1m",
                  "60s",
                  "2m",
                  "120s",
                  { "--lease=3m" },
                  "180s" },
                /* The switch: the variable turns off what the file turned on. */
                { "poll-only",
                  "BOXCAR_POLL_ONLY",
                  "false",
                  "true",
                  "true",
                  "false",
                  "false",
                  { "--poll-only" },
                  "true" },
                { "queues",
                  "BOXCAR_QUEUES",
                  "default",
                  "f1,f2",
                  "f1,f2",
                  "e1",
                  "e1",
                  { "--queues", "a,b,c" },
                  "a,b,c" },
                /* Repeatable: the flags add up, and replace the variable's
                 * value, which replaces the file's. */
                { "network-allow",
                  "BOXCAR_NETWORK_ALLOW",
                  "",
                  "f=f.org:443",
                  "f:1",
                  "e1=e.org:443,e.net:443;e2=e.org:80",
                  "e1:2,e2:1",
                  { "--network-allow", "a=a.org:443", "--network-allow", "b=b.org:443" },
                  "a:1,b:1" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct worker_config c;
                struct bc_error err = BC_ERROR_INIT;
                char got[256], line[256];
                clear_env();
                write_conf(NULL);
                assert_int_equal(parse(&c, &err, NULL), 0);
                show(&c, cases[i].key, got, sizeof(got));
                if (cases[i].def && strcmp(got, cases[i].def) != 0)
                        fail_msg("%s: default '%s', want '%s'", cases[i].key, got, cases[i].def);
                config_done(&c);

                snprintf(line, sizeof(line), "%s = %s\n", cases[i].key, cases[i].file);
                write_conf(line);
                assert_int_equal(parse(&c, &err, NULL), 0);
                show(&c, cases[i].key, got, sizeof(got));
                if (strcmp(got, cases[i].file_want) != 0)
                        fail_msg("%s: file gave '%s', want '%s'", cases[i].key, got,
                                 cases[i].file_want);
                config_done(&c);

                setenv(cases[i].env, cases[i].env_value, 1);
                assert_int_equal(parse(&c, &err, NULL), 0);
                show(&c, cases[i].key, got, sizeof(got));
                if (strcmp(got, cases[i].env_want) != 0)
                        fail_msg("%s: file + environment gave '%s', want '%s'", cases[i].key, got,
                                 cases[i].env_want);
                config_done(&c);

                const char *const *f = cases[i].flag;
                assert_int_equal(parse(&c, &err, f[0], f[1], f[2], f[3], f[4]), 0);
                show(&c, cases[i].key, got, sizeof(got));
                if (strcmp(got, cases[i].flag_want) != 0)
                        fail_msg("%s: file + environment + flag gave '%s', want '%s'",
                                 cases[i].key, got, cases[i].flag_want);
                config_done(&c);
                unsetenv(cases[i].env);
        }
}

/* One bad value, from each source in turn: the error names the flag, the
 * variable, or the file's path, line and key (without the value). */
static void test_bad_value_names_source(void **state)
{
        (void)state;
        static const struct {
                const char *key, *env, *value, *want_flag, *want_env, *want_file;
        } cases[] = {
                { "concurrency", "BOXCAR_CONCURRENCY", "x", "--concurrency: invalid value 'x'",
                  "BOXCAR_CONCURRENCY: invalid value 'x' (a number from 1 to 1024)",
                  ":1: concurrency: invalid value (not shown" },
                { "lease", "BOXCAR_LEASE", "soon", "--lease: invalid value 'soon'",
                  "BOXCAR_LEASE: invalid value 'soon' (a duration above 0",
                  ":1: lease: invalid value (not shown" },
                { "log-format", "BOXCAR_LOG_FORMAT", "xml", "--log-format: invalid value 'xml'",
                  "BOXCAR_LOG_FORMAT: invalid value 'xml' (text or json)",
                  ":1: log-format: invalid value (not shown" },
                { "poll-only", "BOXCAR_POLL_ONLY", "maybe",
                  "unknown or incomplete option '--poll-only'",
                  "BOXCAR_POLL_ONLY: invalid value 'maybe' (true or false)",
                  ":1: poll-only: invalid value (not shown" },
                { "queues", "BOXCAR_QUEUES", "a b", "--queues: 'a b' is not a queue name",
                  "BOXCAR_QUEUES: 'a b' is not a queue name",
                  ":1: queues: invalid value (not shown" },
                { "network-allow", "BOXCAR_NETWORK_ALLOW", "ci=pypi.org",
                  "--network-allow: 'pypi.org': must be",
                  "BOXCAR_NETWORK_ALLOW: 'pypi.org': must be",
                  ":1: network-allow: invalid value (not shown" },
                { "max-log-bytes", "BOXCAR_MAX_LOG_BYTES", "2GiB",
                  "--max-log-bytes: '2GiB' is out of range",
                  "BOXCAR_MAX_LOG_BYTES: '2GiB' is out of range",
                  ":1: max-log-bytes: invalid value (not shown" },
                { "disk-wait", "BOXCAR_DISK_WAIT", "3h", "--disk-wait: invalid value '3h'",
                  "BOXCAR_DISK_WAIT: invalid value '3h' (a duration from 1s to 1h",
                  ":1: disk-wait: invalid value (not shown" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct worker_config c;
                struct bc_error err = BC_ERROR_INIT;
                char flag[128], line[128];
                clear_env();
                write_conf(NULL);
                snprintf(flag, sizeof(flag), "--%s=%s", cases[i].key, cases[i].value);
                assert_true(parse(&c, &err, flag, NULL) < 0);
                if (!strstr(bc_error_message(&err), cases[i].want_flag))
                        fail_msg("flag: got '%s', want '%s'", bc_error_message(&err),
                                 cases[i].want_flag);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);

                setenv(cases[i].env, cases[i].value, 1);
                assert_true(parse(&c, &err, NULL) < 0);
                if (!strstr(bc_error_message(&err), cases[i].want_env))
                        fail_msg("environment: got '%s', want '%s'", bc_error_message(&err),
                                 cases[i].want_env);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
                unsetenv(cases[i].env);

                snprintf(line, sizeof(line), "%s = %s\n", cases[i].key, cases[i].value);
                write_conf(line);
                assert_true(parse(&c, &err, NULL) < 0);
                const char *msg = bc_error_message(&err);
                if (strncmp(msg, conf_path, strlen(conf_path)) != 0 ||
                    !strstr(msg, cases[i].want_file))
                        fail_msg("file: got '%s', want '%s%s'", msg, conf_path,
                                 cases[i].want_file);
                if (strstr(msg + strlen(conf_path), cases[i].value))
                        fail_msg("file: '%s' shows the value", msg);
                bc_error_clear(&err);

                /* A good variable hides the file's bad value: the file is
                 * not read for a setting the environment gives. */
                if (strcmp(cases[i].key, "concurrency") == 0) {
                        setenv(cases[i].env, "3", 1);
                        assert_int_equal(parse(&c, &err, NULL), 0);
                        assert_int_equal(c.concurrency, 3);
                        config_done(&c);
                        unsetenv(cases[i].env);
                }
        }
}

/* Two configurations the same, field by field (worker_id and
 * sandbox_helper are made up per parse, and not compared). */
static void assert_same(const struct worker_config *a, const struct worker_config *b,
                        const char *what)
{
#define SAME_NUM(f)       \
        if (a->f != b->f) \
        fail_msg("%s: " #f " differs", what)
#define SAME_STR(f)                                                                \
        if ((a->f == NULL) != (b->f == NULL) || (a->f && strcmp(a->f, b->f) != 0)) \
        fail_msg("%s: " #f " differs", what)
        SAME_STR(database_url);
        SAME_NUM(concurrency);
        SAME_NUM(db_connections);
        SAME_NUM(lease_s);
        SAME_NUM(poll_interval_s);
        SAME_NUM(drain_timeout_s);
        SAME_NUM(report_wait_ms);
        SAME_NUM(sandbox);
        SAME_STR(work_dir);
        SAME_STR(secret_keys_dir);
        SAME_NUM(log_format);
        SAME_NUM(log_level);
        SAME_NUM(max_output_bytes);
        SAME_NUM(n_network_caps);
        SAME_NUM(volume_cache_bytes);
        SAME_NUM(disk_reserve_pct);
        SAME_NUM(disk_reserve_bytes);
        SAME_NUM(disk_wait_s);
        SAME_NUM(artifact_url_ttl_s);
        SAME_STR(metrics_addr);
        SAME_STR(listen_database_url);
        SAME_NUM(poll_only);
        SAME_NUM(retention_s);
        SAME_NUM(storage_gc_interval_s);
        SAME_NUM(storage_gc_grace_s);
        SAME_NUM(max_sessions);
        SAME_NUM(session_max_lifetime_s);
        SAME_NUM(max_log_bytes);
        SAME_NUM(webhook_timeout_s);
        SAME_NUM(webhook_concurrency);
        SAME_NUM(warm_sandboxes);
        SAME_STR(webhook_schedule);
        SAME_NUM(warm_workspaces);
        SAME_NUM(url_guard.allow_all);
        SAME_NUM(url_guard.n_allow);
        SAME_STR(uid_range);
        for (size_t i = 0; a->queues[i] || b->queues[i]; i++)
                if (!a->queues[i] || !b->queues[i] || strcmp(a->queues[i], b->queues[i]) != 0)
                        fail_msg("%s: queues differ", what);
#undef SAME_NUM
#undef SAME_STR
}

/* Every option's variable is read, and the default the help and the
 * README show is the one the code uses: for each option whose default is
 * a value, giving that value by its variable, and by the file, changes
 * nothing. */
static void test_every_variable_and_default(void **state)
{
        (void)state;
        struct worker_config base, c;
        struct bc_error err = BC_ERROR_INIT;
        write_conf(NULL);
        assert_int_equal(parse(&base, &err, NULL), 0);
        int checked = 0;
        for (const struct config_option *o = config_worker_options; o->name; o++) {
                char buf[64];
                const char *env = config_option_env(o, NULL, buf, sizeof(buf));
                if (o->flags & CONFIG_OPT_META)
                        continue;
                /* The derived name, but for the two older names. */
                assert_non_null(env);
                if (strcmp(o->name, "database-url") != 0 && strcmp(o->name, "allow-url-cidr") != 0)
                        assert_null(o->env);
                if (!(o->flags & CONFIG_OPT_VALUE))
                        continue;
                setenv(env, o->def, 1);
                if (parse(&c, &err, NULL) != 0)
                        fail_msg("%s=%s: %s", env, o->def, bc_error_message(&err));
                assert_same(&base, &c, env);
                config_done(&c);
                unsetenv(env);

                char line[256];
                snprintf(line, sizeof(line), "%s = %s\n", o->name, o->def);
                write_conf(line);
                if (parse(&c, &err, NULL) != 0)
                        fail_msg("%s: %s", line, bc_error_message(&err));
                assert_same(&base, &c, o->name);
                config_done(&c);
                write_conf(NULL);
                checked++;
        }
        assert_true(checked >= 25);
        config_done(&base);

        /* And a value other than the default, by variable, does change it
         * (the comparison can fail). */
        setenv("BOXCAR_METRICS_ADDR", "127.0.0.1:9464", 1);
        setenv("BOXCAR_LOG_FORMAT", "json", 1);
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_string_equal(c.metrics_addr, "127.0.0.1:9464");
        assert_int_equal(c.log_format, LOG_JSON);
        config_done(&c);
        /* --help works whatever the variables hold. */
        setenv("BOXCAR_CONCURRENCY", "x", 1);
        assert_int_equal(parse(&c, &err, "--help", NULL), 1);
        unsetenv("BOXCAR_CONCURRENCY");
        /* An empty variable is unset. */
        setenv("BOXCAR_LOG_FORMAT", "", 1);
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_int_equal(c.log_format, LOG_TEXT);
        config_done(&c);
}

static void test_env_names(void **state)
{
        (void)state;
        static const struct config_option ui = { "token-file", 1, 't', 0, "", NULL };
        static const struct config_option help = { "help", 0, 'h', CONFIG_OPT_NO_ENV, "", NULL };
        char buf[64];
        assert_string_equal(config_option_env(&ui, "UI_", buf, sizeof(buf)),
                            "BOXCAR_UI_TOKEN_FILE");
        assert_null(config_option_env(&help, NULL, buf, sizeof(buf)));
        assert_null(config_option_env(&ui, "UI_", buf, 12)); /* too long for buf */
        bool on = false;
        assert_int_equal(config_parse_bool("1", &on), 0);
        assert_true(on);
        assert_int_equal(config_parse_bool("false", &on), 0);
        assert_false(on);
        assert_int_equal(config_parse_bool("yes", &on), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_value_names_source, setup, teardown),
                cmocka_unit_test_setup_teardown(test_every_variable_and_default, setup, teardown),
                cmocka_unit_test(test_env_names),
        };
        return cmocka_run_group_tests_name("config_sources", tests, NULL, NULL);
}
