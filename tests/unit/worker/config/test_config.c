/* `boxcar worker` flag parsing: durations, queue lists, every flag, and the
 * errors that name the bad flag. */
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

static void test_durations(void **state)
{
        (void)state;
        static const struct {
                const char *in;
                int ok;
                double want;
        } cases[] = {
                { "30s", 1, 30 },    { "30", 1, 30 },     { "250ms", 1, 0.25 },
                { "5m", 1, 300 },    { "2h", 1, 7200 },   { "1d", 1, 86400 },
                { "1.5s", 1, 1.5 },  { "0", 0, 0 },       { "", 0, 0 },
                { "-1s", 0, 0 },     { "10x", 0, 0 },     { "s", 0, 0 },
                { "nan", 0, 0 },     { "400d", 0, 0 },    { "365d", 1, 365 * 86400 },
                { "7d", 1, 604800 }, { "1.5h", 1, 5400 }, { "0.5", 1, 0.5 },
                { " 5s", 0, 0 },     { "+5s", 0, 0 },     { "1e3", 0, 0 },
                { "0x10", 0, 0 },    { "5.s", 0, 0 },     { ".5s", 0, 0 },
                { "5 s", 0, 0 },     { "5S", 0, 0 },      { "inf", 0, 0 },
                { "5sec", 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                double got = -1;
                int r = config_parse_duration(cases[i].in, false, &got);
                if (cases[i].ok) {
                        assert_int_equal(r, 0);
                        assert_true(got == cases[i].want);
                } else if (r == 0) {
                        fail_msg("duration '%s' accepted as %g", cases[i].in, got);
                }
        }
        double zero = -1;
        assert_int_equal(config_parse_duration("0s", true, &zero), 0);
        assert_true(zero == 0);
}

static void test_queues(void **state)
{
        (void)state;
        char **q = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(config_parse_queues("a,scope/b,c.d-e_f,...,.a/..b", &q, &err), 0);
        assert_string_equal(q[0], "a");
        assert_string_equal(q[1], "scope/b");
        assert_string_equal(q[2], "c.d-e_f");
        assert_string_equal(q[3], "...");
        assert_string_equal(q[4], ".a/..b");
        assert_null(q[5]);
        config_strv_free(q);
        static const char *const bad[] = { "",  "a,,b", "a,", "x y",  "a/b/c", "/a",  "a/",
                                           "é", ".",    "..", "../x", "x/..",  "./x", "x/." };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                q = NULL;
                if (config_parse_queues(bad[i], &q, &err) == 0)
                        fail_msg("queue list '%s' accepted", bad[i]);
                assert_int_equal(err.code, BC_USAGE);
                assert_non_null(strstr(bc_error_message(&err), "--queues"));
                bc_error_clear(&err);
        }
}

static int parse(struct worker_config *c, struct bc_error *err, ...)
{
        char *argv[32] = { "worker" };
        int argc = 1;
        va_list ap;
        va_start(ap, err);
        for (char *a = va_arg(ap, char *); a; a = va_arg(ap, char *))
                argv[argc++] = a;
        va_end(ap);
        return config_parse_worker(argc, argv, c, err);
}

static void test_worker_flags(void **state)
{
        (void)state;
        unsetenv("BOXCAR_QUEUES");
        unsetenv("BOXCAR_CONCURRENCY");
        setenv("DATABASE_URL", "postgresql://env/db", 1);
        struct worker_config c;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_string_equal(c.database_url, "postgresql://env/db");
        assert_string_equal(c.queues[0], "default");
        assert_int_equal(c.concurrency, 4);
        assert_true(c.lease_s == 30 && c.poll_interval_s == 5 && c.drain_timeout_s == 60);
        assert_int_equal(c.sandbox, BACKEND_NAMESPACE);
        assert_non_null(c.worker_id);
        config_done(&c);

        assert_int_equal(parse(&c, &err, "--queues", "a,b", "--concurrency", "8", "--lease", "1m",
                               "--poll-interval", "500ms", "--drain-timeout", "0", "--sandbox",
                               "none", "--database-url", "postgresql://flag/db", "--worker-id",
                               "w-1", "--log-format", "json", "--log-level", "debug", "--work-dir",
                               "/tmp/x", NULL),
                         0);
        assert_string_equal(c.database_url, "postgresql://flag/db");
        assert_string_equal(c.queues[1], "b");
        assert_int_equal(c.concurrency, 8);
        assert_true(c.lease_s == 60 && c.poll_interval_s == 0.5 && c.drain_timeout_s == 0);
        assert_string_equal(c.worker_id, "w-1");
        assert_int_equal(c.log_format, LOG_JSON);
        assert_int_equal(c.log_level, LOG_DEBUG);
        assert_string_equal(c.work_dir, "/tmp/x");
        config_done(&c);

        /* Every size flag takes the same units (common/size.c). */
        assert_int_equal(parse(&c, &err, "--max-log-bytes", "10MiB", "--max-output-bytes",
                               "512KiB", "--volume-cache-mb", "2GiB", NULL),
                         0);
        assert_true(c.max_log_bytes == 10u << 20);
        assert_int_equal(c.max_output_bytes, 512u << 10);
        assert_true(c.volume_cache_bytes == UINT64_C(2) << 30);
        config_done(&c);
        assert_int_equal(parse(&c, &err, "--max-log-bytes", "1000", "--max-output-bytes", "64MiB",
                               "--volume-cache-mb", "100", "--webhook-concurrency", "64", NULL),
                         0);
        assert_true(c.max_log_bytes == 1000 && c.max_output_bytes == 64u << 20);
        assert_true(c.volume_cache_bytes == UINT64_C(100) << 20);
        assert_int_equal(c.webhook_concurrency, 64);
        config_done(&c);
        /* --disk-reserve: 5% by default, a percentage or a size. */
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_int_equal(c.disk_reserve_pct, 5);
        config_done(&c);
        assert_int_equal(parse(&c, &err, "--disk-reserve", "12%", NULL), 0);
        assert_int_equal(c.disk_reserve_pct, 12);
        config_done(&c);
        assert_int_equal(parse(&c, &err, "--disk-reserve", "2GiB", NULL), 0);
        assert_true(c.disk_reserve_pct < 0 && c.disk_reserve_bytes == UINT64_C(2) << 30);
        config_done(&c);
        assert_int_equal(parse(&c, &err, "--disk-reserve", "0", NULL), 0);
        assert_true(c.disk_reserve_pct < 0 && c.disk_reserve_bytes == 0);
        assert_true(c.disk_wait_s == 60);
        config_done(&c);
        assert_int_equal(parse(&c, &err, "--disk-wait", "2s", NULL), 0);
        assert_true(c.disk_wait_s == 2);
        assert_int_equal(c.report_wait_ms, 5);
        config_done(&c);
        const struct {
                const char *arg;
                unsigned ms;
        } waits[] = { { "250ms", 250 }, { "0", 0 } };
        for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
                assert_int_equal(parse(&c, &err, "--report-wait", waits[i].arg, NULL), 0);
                assert_int_equal(c.report_wait_ms, waits[i].ms);
                config_done(&c);
        }
        assert_int_equal(parse(&c, &err, "--retention", "7d", "--artifact-url-ttl", "7d", NULL),
                         0);
        assert_true(c.retention_s == 7 * 86400 && c.artifact_url_ttl_s == 7 * 86400);
        config_done(&c);

        /* The URL guard: on by default; flags and variables add up. */
        unsetenv("BOXCAR_ALLOW_PRIVATE_URLS");
        unsetenv("BOXCAR_ALLOW_URL_CIDRS");
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_false(c.url_guard.allow_all);
        assert_int_equal(c.url_guard.n_allow, 0);
        config_done(&c);
        /* The flags add up, and replace the variable's list. */
        setenv("BOXCAR_ALLOW_URL_CIDRS", "10.2.0.0/16", 1);
        assert_int_equal(parse(&c, &err, "--allow-url-cidr", "fd00::/8,192.168.5.0/24",
                               "--allow-url-cidr", "127.0.0.1", NULL),
                         0);
        assert_false(c.url_guard.allow_all);
        assert_int_equal(c.url_guard.n_allow, 3);
        config_done(&c);
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_int_equal(c.url_guard.n_allow, 1);
        config_done(&c);
        unsetenv("BOXCAR_ALLOW_URL_CIDRS");
        assert_int_equal(parse(&c, &err, "--allow-private-urls", NULL), 0);
        assert_true(c.url_guard.allow_all);
        config_done(&c);
        setenv("BOXCAR_ALLOW_PRIVATE_URLS", "1", 1);
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_true(c.url_guard.allow_all);
        config_done(&c);
        setenv("BOXCAR_ALLOW_PRIVATE_URLS", "0", 1);
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_false(c.url_guard.allow_all);
        config_done(&c);
        setenv("BOXCAR_ALLOW_PRIVATE_URLS", "maybe", 1);
        assert_true(parse(&c, &err, NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err),
                               "BOXCAR_ALLOW_PRIVATE_URLS: invalid value 'maybe'"));
        bc_error_clear(&err);
        unsetenv("BOXCAR_ALLOW_PRIVATE_URLS");
        setenv("BOXCAR_ALLOW_URL_CIDRS", "10.2.3.4/16", 1);
        assert_true(parse(&c, &err, NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err), "BOXCAR_ALLOW_URL_CIDRS: '10.2.3.4/16'"));
        bc_error_clear(&err);
        unsetenv("BOXCAR_ALLOW_URL_CIDRS");

        setenv("BOXCAR_QUEUES", "envq", 1);
        setenv("BOXCAR_CONCURRENCY", "3", 1);
        assert_int_equal(parse(&c, &err, NULL), 0);
        assert_string_equal(c.queues[0], "envq");
        assert_int_equal(c.concurrency, 3);
        config_done(&c);
        unsetenv("BOXCAR_QUEUES");
        unsetenv("BOXCAR_CONCURRENCY");
}

static void test_network_allow(void **state)
{
        (void)state;
        setenv("DATABASE_URL", "postgresql://env/db", 1);
        struct worker_config c;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(parse(&c, &err, "--network-allow",
                               "ci=pypi.org:443, *.pythonhosted.org:443", "--network-allow",
                               "db = 10.2.0.0/16:5432; ci=files.example.com:443", NULL),
                         0);
        assert_int_equal(c.n_network_caps, 2);
        struct netallow_rule job[3];
        assert_int_equal(netallow_parse("files.pythonhosted.org:443", &job[0]), NETALLOW_OK);
        assert_int_equal(netallow_parse("pypi.org:443", &job[1]), NETALLOW_OK);
        assert_int_equal(netallow_parse("files.example.com:443", &job[2]), NETALLOW_OK);
        assert_int_equal(config_network_uncovered(&c, "ci", job, 3), -1);
        /* A queue without a cap may ask for nothing. */
        assert_int_equal(config_network_uncovered(&c, "other", job, 3), 0);
        assert_int_equal(netallow_parse("10.2.9.0/24:5432", &job[2]), NETALLOW_OK);
        assert_int_equal(config_network_uncovered(&c, "ci", job, 3), 2);
        assert_int_equal(config_network_uncovered(&c, "db", &job[2], 1), -1);
        assert_int_equal(config_network_uncovered(&c, "db", job, 3), 0);
        config_done(&c);

        static const struct {
                const char *value, *want;
        } bad[] = {
                { "pypi.org:443", "--network-allow: 'pypi.org:443' is not QUEUE=RULE,RULE" },
                { "ci=", "--network-allow: no rules for queue 'ci'" },
                { "a b=pypi.org:443", "--network-allow: 'a b' is not a queue name" },
                { "ci=pypi.org", "--network-allow: 'pypi.org': must be \"name:port\"" },
                { "ci=pypi.org:70000", "--network-allow: 'pypi.org:70000': port must be" },
                { "ci=10.2.3.4/16:1", "--network-allow: '10.2.3.4/16:1': address has bits set "
                                      "past the prefix (the network is 10.2.0.0/16)" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(parse(&c, &err, "--network-allow", bad[i].value, NULL), -EINVAL);
                if (!strstr(bc_error_message(&err), bad[i].want))
                        fail_msg("%s: got '%s', want '%s'", bad[i].value, bc_error_message(&err),
                                 bad[i].want);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
}

/* --allow-private-egress: caps whose exact names and private CIDRs mark
 * the job's rules they cover private; --network-allow's never do. */
static void test_private_egress(void **state)
{
        (void)state;
        setenv("DATABASE_URL", "postgresql://env/db", 1);
        struct worker_config c;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(parse(&c, &err, "--network-allow", "ci=*.internal:5432,pypi.org:443",
                               "--allow-private-egress", "ci=db.internal:5432,10.1.2.0/24:6379",
                               "--allow-url-cidr", "10.0.0.0/8", "--allow-private-urls", NULL),
                         0);
        struct netallow_rule r[4];
        assert_int_equal(netallow_parse("db.internal:5432", &r[0]), NETALLOW_OK);
        assert_int_equal(netallow_parse("cache.internal:5432", &r[1]), NETALLOW_OK);
        assert_int_equal(netallow_parse("10.1.2.3:6379", &r[2]), NETALLOW_OK);
        assert_int_equal(netallow_parse("pypi.org:443", &r[3]), NETALLOW_OK);
        /* Private caps are caps: the job may ask for them. */
        assert_int_equal(config_network_uncovered(&c, "ci", r, 4), -1);
        assert_true(config_network_private(&c, "ci", &r[0]));
        assert_false(config_network_private(&c, "ci", &r[1])); /* only under the wildcard */
        assert_true(config_network_private(&c, "ci", &r[2]));
        assert_false(config_network_private(&c, "ci", &r[3]));
        assert_false(config_network_private(&c, "other", &r[0]));
        /* A job's wildcard is never private, whatever covers it. */
        assert_int_equal(netallow_parse("*.internal:5432", &r[1]), NETALLOW_OK);
        assert_false(config_network_private(&c, "ci", &r[1]));
        config_done(&c);

        static const struct {
                const char *value, *want;
        } bad[] = {
                { "ci=*.internal:5432", "--allow-private-egress: '*.internal:5432': a wildcard "
                                        "cannot reach private addresses" },
                { "ci=0.0.0.0/0:443", "--allow-private-egress: '0.0.0.0/0:443': not a private "
                                      "network" },
                { "ci=8.8.8.8:53", "'8.8.8.8:53': not a private network" },
                { "ci=169.254.169.254:80", "'169.254.169.254:80': 169.254.169.254 is the cloud "
                                           "metadata service, which no rule reaches" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(parse(&c, &err, "--allow-private-egress", bad[i].value, NULL),
                                 -EINVAL);
                if (!strstr(bc_error_message(&err), bad[i].want))
                        fail_msg("%s: got '%s', want '%s'", bad[i].value, bc_error_message(&err),
                                 bad[i].want);
                bc_error_clear(&err);
        }
}

static void test_worker_flag_errors(void **state)
{
        (void)state;
        static const struct {
                const char *flag, *value, *want;
        } cases[] = {
                { "--concurrency", "0", "--concurrency: invalid value '0'" },
                { "--concurrency", "2000", "--concurrency: invalid value '2000'" },
                { "--lease", "soon", "--lease: invalid value 'soon'" },
                { "--poll-interval", "60s",
                  "--poll-interval (60s) must not exceed --lease (30s)" },
                { "--sandbox", "docker", "--sandbox: 'docker' is not a backend" },
                { "--log-format", "xml", "--log-format: invalid value 'xml'" },
                { "--work-dir", "relative", "--work-dir: 'relative' must be an absolute path" },
                { "--frobnicate", "1", "unknown or incomplete option '--frobnicate'" },
                { "--max-log-bytes", "10M", "--max-log-bytes: '10M' is not a size" },
                { "--max-log-bytes", "2GiB", "--max-log-bytes: '2GiB' is out of range" },
                { "--max-output-bytes", "65MiB", "--max-output-bytes: '65MiB' is out of range" },
                { "--max-output-bytes", "-1", "--max-output-bytes: '-1' is not a size" },
                { "--volume-cache-mb", "0", "--volume-cache-mb: '0' is out of range" },
                { "--disk-reserve", "91%",
                  "--disk-reserve: '91%' is not a percentage from 0% to 90%" },
                { "--disk-reserve", "-5%", "--disk-reserve: '-5%' is not a percentage" },
                { "--disk-reserve", "5.5%", "--disk-reserve: '5.5%' is not a percentage" },
                { "--disk-reserve", "lots", "--disk-reserve: 'lots' is not a size" },
                { "--disk-wait", "500ms",
                  "--disk-wait: invalid value '500ms' (a duration from 1s to 1h" },
                { "--disk-wait", "2h", "--disk-wait: invalid value '2h'" },
                { "--webhook-concurrency", "65",
                  "--webhook-concurrency: invalid value '65' (a number from 1 to 64)" },
                { "--artifact-url-ttl", "8d", "--artifact-url-ttl: invalid value '8d'" },
                { "--webhook-timeout", "601s", "--webhook-timeout: invalid value '601s'" },
                { "--report-wait", "2s",
                  "--report-wait: invalid value '2s' (a duration up to 1s, 0 allowed" },
                { "--report-wait", "-1ms", "--report-wait: invalid value '-1ms'" },
                { "--allow-url-cidr", "10.0.0.0/33",
                  "--allow-url-cidr: '10.0.0.0/33' is not a CIDR" },
                { "--allow-url-cidr", "intranet", "--allow-url-cidr: 'intranet' is not a CIDR" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct worker_config c;
                struct bc_error err = BC_ERROR_INIT;
                int r = parse(&c, &err, cases[i].flag, cases[i].value, NULL);
                if (r == 0)
                        fail_msg("%s %s accepted", cases[i].flag, cases[i].value);
                if (!strstr(bc_error_message(&err), cases[i].want))
                        fail_msg("%s %s: got '%s', want '%s'", cases[i].flag, cases[i].value,
                                 bc_error_message(&err), cases[i].want);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
}

/* Writes TEXT to a new temporary file; returns its path (static buffer). */
static const char *conf_file(const char *text)
{
        static char path[64];
        strcpy(path, "/tmp/boxcar-test-conf.XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return path;
}

static void test_config_file(void **state)
{
        (void)state;
        unsetenv("BOXCAR_QUEUES");
        unsetenv("BOXCAR_CONCURRENCY");
        unsetenv("BOXCAR_CONFIG");
        unsetenv("BOXCAR_S3_PREFIX");
        unsetenv("DATABASE_URL");
        setenv("BOXCAR_S3_BUCKET", "from-env", 1);
        const char *path = conf_file("# comment\n"
                                     "  ; another\n"
                                     "\n"
                                     "concurrency = 7\n"
                                     "queues=fileq,other\n"
                                     "  lease\t=  2m  \n"
                                     "worker-id = \"  spaced id \"\n"
                                     "database-url = postgresql://h/db?application_name=a#b\n"
                                     "poll-only = true\n"
                                     "s3-bucket = from-file\n"
                                     "s3-prefix = pfx\n"
                                     "network-allow = ci=pypi.org:443; db=10.2.0.0/16:5432\n");
        struct worker_config c;
        struct bc_error err = BC_ERROR_INIT;
        /* File alone. */
        assert_int_equal(parse(&c, &err, "--config", path, NULL), 0);
        assert_int_equal(c.concurrency, 7);
        assert_string_equal(c.queues[0], "fileq");
        assert_string_equal(c.queues[1], "other");
        assert_true(c.lease_s == 120);
        assert_string_equal(c.worker_id, "  spaced id ");
        assert_string_equal(c.database_url, "postgresql://h/db?application_name=a#b");
        assert_true(c.poll_only);
        assert_int_equal(c.n_network_caps, 2);
        assert_int_equal(c.network_caps[1].rules[0].port, 5432);
        /* The environment wins over the file for environment-only keys. */
        assert_string_equal(getenv("BOXCAR_S3_BUCKET"), "from-env");
        assert_string_equal(getenv("BOXCAR_S3_PREFIX"), "pfx");
        config_done(&c);

        /* Environment over file, flag over both; BOXCAR_CONFIG names it. */
        setenv("BOXCAR_CONFIG", path, 1);
        setenv("BOXCAR_CONCURRENCY", "9", 1);
        setenv("BOXCAR_QUEUES", "envq", 1);
        assert_int_equal(
                parse(&c, &err, "--queues", "flagq", "--network-allow", "ci=x.org:443", NULL), 0);
        /* --network-allow replaces the file's caps. */
        assert_int_equal(c.n_network_caps, 1);
        assert_int_equal(c.network_caps[0].n_rules, 1);
        assert_int_equal(c.concurrency, 9);
        assert_string_equal(c.queues[0], "flagq");
        assert_null(c.queues[1]);
        assert_true(c.lease_s == 120);
        config_done(&c);
        unsetenv("BOXCAR_CONCURRENCY");
        unsetenv("BOXCAR_QUEUES");
        /* --config over BOXCAR_CONFIG: /dev/null reads nothing. */
        assert_int_equal(parse(&c, &err, "--config", "/dev/null", NULL), 0);
        assert_int_equal(c.concurrency, 4);
        config_done(&c);
        unsetenv("BOXCAR_CONFIG");
        unlink(path);
        unsetenv("BOXCAR_S3_BUCKET");
        unsetenv("BOXCAR_S3_PREFIX");

        /* Errors name the file, the line and the key, and never show a
         * value or a line that is no "key = value": a file holds secrets
         * (the secret of each case must not be in its message). */
        static const struct {
                const char *text, *want, *secret;
        } bad[] = {
                { "# x\nconcurrency = 0\n",
                  ":2: concurrency: invalid value (not shown: a config file may hold secrets) (a "
                  "number from 1 to 1024)",
                  NULL },
                { "frobnicate = 1\n", ":1: unknown key 'frobnicate'", NULL },
                { "help = 1\n", ":1: unknown key 'help'", NULL },
                { "config = /x\n", ":1: unknown key 'config'", NULL },
                { "aws-secret-access-key = wJalrXUtnFEMI\n",
                  ":1: unknown key 'aws-secret-access-key'", "wJalrXUtnFEMI" },
                { "webhook-secret = whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=\n",
                  ":1: unknown key 'webhook-secret'", "whsec_" },
                { "lease = s3cret-lease\n", ":1: lease: invalid value (not shown", "s3cret" },
                { "queues = a b\n", ":1: queues: invalid value (not shown", "a b" },
                { "max-log-bytes = 2GiB\n", ":1: max-log-bytes: invalid value (not shown",
                  "2GiB" },
                { "poll-only = yes\n",
                  ":1: poll-only: invalid value (not shown: a config file may "
                  "hold secrets) (true or false)",
                  "yes" },
                { "sandbox = docker\n", ":1: sandbox: invalid value", "docker" },
                { "network-allow = ci=pypi.org\n", ":1: network-allow: invalid value", "pypi" },
                { "allow-url-cidr = s3cret/99\n", ":1: allow-url-cidr: invalid value", "s3cret" },
                { "concurrency 8\n", ":1: expected 'key = value' (the line is not shown",
                  "concurrency 8" },
                { "webhook_secret: whsec_c2VjcmV0\n", ":1: expected 'key = value'", "whsec_" },
                { "whsec_c2VjcmV0LXNlY3JldA==\n", ":1: the text before '=' is not a key",
                  "whsec_" },
                { "Concurrency = 8\n", ":1: the text before '=' is not a key", "Concurrency" },
                { "webhook_secret = whsec_c2VjcmV0\n", ":1: the text before '=' is not a key",
                  "whsec_" },
                { "worker-id = \"abc\n", ":1: worker-id: unbalanced quotes", "abc" },
                { "lease = 1m\n\nlease = 2m\n", ":3: lease: set twice (first at line 1)", NULL },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                path = conf_file(bad[i].text);
                int r = parse(&c, &err, "--config", path, NULL);
                unlink(path);
                if (r == 0)
                        fail_msg("config '%s' accepted", bad[i].text);
                const char *msg = bc_error_message(&err);
                if (strncmp(msg, path, strlen(path)) != 0 || !strstr(msg, bad[i].want))
                        fail_msg("config '%s': got '%s', want '%s%s'", bad[i].text, msg, path,
                                 bad[i].want);
                if (bad[i].secret && strstr(msg, bad[i].secret))
                        fail_msg("config '%s': '%s' shows '%s'", bad[i].text, msg, bad[i].secret);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
        /* A flag mistyped with a URL in it, or a URL without its flag:
         * the password is not shown. */
        assert_true(parse(&c, &err, "--databse-url=postgresql://u:pw-s3cret@h/db", NULL) < 0);
        assert_non_null(
                strstr(bc_error_message(&err), "unknown or incomplete option '--databse-url'"));
        assert_null(strstr(bc_error_message(&err), "s3cret"));
        bc_error_clear(&err);
        assert_true(parse(&c, &err, "postgresql://u:pw-s3cret@h/db", NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err), "unexpected argument (not shown"));
        assert_null(strstr(bc_error_message(&err), "s3cret"));
        bc_error_clear(&err);
        assert_true(parse(&c, &err, "stray", NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err), "unexpected argument 'stray'"));
        bc_error_clear(&err);
        /* The environment's errors name the variable. */
        setenv("BOXCAR_CONCURRENCY", "x", 1);
        assert_true(parse(&c, &err, "--config", "/dev/null", NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err), "BOXCAR_CONCURRENCY: invalid value 'x'"));
        bc_error_clear(&err);
        unsetenv("BOXCAR_CONCURRENCY");

        /* An explicit file must exist; --help reads none. */
        assert_true(parse(&c, &err, "--config", "/nonexistent/boxcar.conf", NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err),
                               "config file /nonexistent/boxcar.conf: No such file"));
        bc_error_clear(&err);
        setenv("BOXCAR_CONFIG", "/nonexistent/env.conf", 1);
        assert_true(parse(&c, &err, NULL) < 0);
        assert_non_null(strstr(bc_error_message(&err), "/nonexistent/env.conf"));
        bc_error_clear(&err);
        assert_int_equal(parse(&c, &err, "--help", NULL), 1);
        unsetenv("BOXCAR_CONFIG");
        assert_true(parse(&c, &err, "--config", "", NULL) < 0);
        bc_error_clear(&err);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_durations),     cmocka_unit_test(test_queues),
                cmocka_unit_test(test_worker_flags),  cmocka_unit_test(test_worker_flag_errors),
                cmocka_unit_test(test_network_allow), cmocka_unit_test(test_private_egress),
                cmocka_unit_test(test_config_file),
        };
        return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
