/* Unit tests for the AWS settings as the SDKs read them: the shared
 * config and credentials files, the order of the credential sources,
 * region / endpoint / path-style precedence, and the parsers of the
 * credentials documents.  The network sources themselves are driven
 * against real local endpoints by tests/storage/run.sh. */
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

#include "common/cleanup.h"
#include "common/error.h"
#include "storage/aws_config.h"
#include "storage/creds-internal.h"
#include "storage/creds.h"
#include "storage/s3.h"
#include "storage/storage.h"

static char dir[] = "/tmp/boxcar-creds-test-XXXXXX";
static char config_path[128], creds_path[128];

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void clear_env(void)
{
        static const char *const vars[] = {
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "AWS_REGION",
                "AWS_DEFAULT_REGION",
                "AWS_ENDPOINT_URL_S3",
                "AWS_ENDPOINT_URL",
                "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_ROLE_ARN",
                "AWS_ROLE_SESSION_NAME",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                "BOXCAR_S3_PREFIX",
                "BOXCAR_S3_FORCE_PATH_STYLE",
        };
        for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                unsetenv(vars[i]);
        setenv("AWS_CONFIG_FILE", config_path, 1);
        setenv("AWS_SHARED_CREDENTIALS_FILE", creds_path, 1);
        setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
        setenv("BOXCAR_S3_BUCKET", "boxcar", 1);
        write_file(config_path, "");
        write_file(creds_path, "");
}

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(dir))
                return -1;
        snprintf(config_path, sizeof(config_path), "%s/config", dir);
        snprintf(creds_path, sizeof(creds_path), "%s/credentials", dir);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        unlink(config_path);
        unlink(creds_path);
        rmdir(dir);
        return 0;
}

static const char CONFIG[] = "# comment\n"
                             "[default]\n"
                             "region = eu-west-3\n"
                             "\n"
                             "[profile dev]\n"
                             "region = eu-central-1\n"
                             "aws_access_key_id = FROMCONFIG\n"
                             "aws_secret_access_key = config-secret\n"
                             "endpoint_url = http://generic.example:9000\n"
                             "s3 =\n"
                             "    addressing_style = path\n"
                             "    endpoint_url = http://s3.example:9000/\n"
                             "output = json\n"
                             "[dev]\n" /* not a profile in the config file */
                             "region = us-west-1\n"
                             "[profile irsa]\n"
                             "role_arn = arn:aws:iam::123456789012:role/r\n"
                             "web_identity_token_file = /var/run/token\n";

static const char CREDENTIALS[] =
        "[dev]\r\n"
        "aws_access_key_id = FROMCREDS\r\n"
        "aws_secret_access_key = creds-secret\r\n"
        "; region here is ignored\r\n"
        "region = ap-south-1\r\n"
        "[profile dev]\n" /* the credentials file has no "profile " prefix */
        "aws_access_key_id = WRONG\n";

static void test_profile_files(void **state)
{
        (void)state;
        clear_env();
        write_file(config_path, CONFIG);
        write_file(creds_path, CREDENTIALS);
        setenv("AWS_PROFILE", "dev", 1);
        struct aws_profile p;
        assert_int_equal(aws_profile_load(&p, NULL), 0);
        assert_true(p.found);
        assert_string_equal(p.access_key, "FROMCREDS"); /* credentials file wins */
        assert_string_equal(p.secret_key, "creds-secret");
        assert_string_equal(p.region, "eu-central-1"); /* from [profile dev] only */
        assert_string_equal(p.endpoint_url, "http://generic.example:9000");
        assert_string_equal(p.s3_endpoint_url, "http://s3.example:9000/");
        assert_string_equal(p.s3_addressing_style, "path");
        assert_null(p.role_arn);
        aws_profile_done(&p);

        unsetenv("AWS_PROFILE");
        assert_int_equal(aws_profile_load(&p, NULL), 0);
        assert_string_equal(p.name, "default");
        assert_string_equal(p.region, "eu-west-3");
        assert_null(p.access_key);
        aws_profile_done(&p);

        setenv("AWS_PROFILE", "nope", 1);
        struct bc_error err = BC_ERROR_INIT;
        assert_true(aws_profile_load(&p, &err) < 0);
        assert_int_equal(err.code, BC_CONFIG);
        assert_non_null(strstr(bc_error_message(&err), "AWS_PROFILE nope"));
        bc_error_clear(&err);
        clear_env();
}

static struct storage_config *config_ok(void)
{
        struct storage_config *cfg = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_config_from_env(&cfg, &err) < 0)
                fail_msg("storage_config_from_env: %s", bc_error_message(&err));
        return cfg;
}

static void expect_error(const char *needle)
{
        struct storage_config *cfg = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_true(storage_config_from_env(&cfg, &err) < 0);
        assert_null(cfg);
        assert_int_equal(err.code, BC_CONFIG);
        if (!strstr(bc_error_message(&err), needle))
                fail_msg("error '%s' does not say '%s'", bc_error_message(&err), needle);
        bc_error_clear(&err);
}

static void expect_source(const char *source)
{
        struct storage_config *cfg = config_ok();
        assert_string_equal(storage_credentials_source(cfg), source);
        storage_config_free(cfg);
}

/* The SDKs' order, each source shadowing the ones after it. */
static void test_chain_order(void **state)
{
        (void)state;
        clear_env();
        expect_error("no AWS credentials found: tried env (AWS_ACCESS_KEY_ID not set), shared "
                     "files (profile default");
        unsetenv("AWS_EC2_METADATA_DISABLED");
        expect_source("IMDS");
        setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds", 1);
        expect_source("container");
        setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token", 1);
        expect_error("AWS_ROLE_ARN"); /* a token file without a role is an error, not skipped */
        setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r", 1);
        expect_source("web identity");
        write_file(config_path, CONFIG);
        write_file(creds_path, CREDENTIALS);
        setenv("AWS_PROFILE", "dev", 1);
        expect_source("shared files (profile dev)");
        setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
        expect_error("AWS_SECRET_ACCESS_KEY");
        setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
        expect_source("env");

        /* The fixed sources' key is the one in use. */
        struct storage_config *cfg = config_ok();
        char *id = NULL;
        assert_int_equal(storage_credentials_key_id(cfg, &id, NULL), 0);
        assert_string_equal(id, "AKIDENV");
        free(id);
        storage_config_free(cfg);
        unsetenv("AWS_ACCESS_KEY_ID");
        unsetenv("AWS_SECRET_ACCESS_KEY");
        cfg = config_ok();
        assert_int_equal(storage_credentials_key_id(cfg, &id, NULL), 0);
        assert_string_equal(id, "FROMCREDS");
        free(id);
        storage_config_free(cfg);

        /* A profile's own web identity pair. */
        setenv("AWS_PROFILE", "irsa", 1);
        unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
        unsetenv("AWS_ROLE_ARN");
        unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
        expect_source("web identity");

        /* Plain http to anything but a loopback or the ECS/EKS agent is
         * refused: the token would cross the network in clear. */
        clear_env();
        setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.0.0.5/creds", 1);
        expect_error("plain http is allowed only to");
        setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "https://creds.example/x", 1);
        expect_source("container");
        clear_env();
}

static void test_region_endpoint_path_style(void **state)
{
        (void)state;
        clear_env();
        write_file(config_path, CONFIG);
        write_file(creds_path, CREDENTIALS);
        setenv("AWS_PROFILE", "dev", 1);
        struct storage_config *cfg = config_ok();
        assert_string_equal(cfg->region, "eu-central-1");
        assert_string_equal(cfg->endpoint,
                            "http://s3.example:9000"); /* s3's beats the generic one */
        assert_true(cfg->path_style);
        storage_config_free(cfg);

        setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
        setenv("AWS_ENDPOINT_URL", "http://generic-env:1", 1);
        setenv("BOXCAR_S3_FORCE_PATH_STYLE", "false", 1);
        cfg = config_ok();
        assert_string_equal(cfg->region, "us-west-2");
        assert_string_equal(cfg->endpoint, "http://generic-env:1");
        assert_false(cfg->path_style);
        struct s3_target t;
        assert_int_equal(s3_target_init(cfg, "k", &t, NULL), 0);
        assert_string_equal(t.url, "http://generic-env:1/k"); /* virtual: the bucket in the Host */
        s3_target_done(&t);
        storage_config_free(cfg);

        setenv("AWS_REGION", "sa-east-1", 1);
        setenv("AWS_ENDPOINT_URL_S3", "http://s3-env:2", 1);
        setenv("BOXCAR_S3_FORCE_PATH_STYLE", "1", 1);
        cfg = config_ok();
        assert_string_equal(cfg->region, "sa-east-1");
        assert_string_equal(cfg->endpoint, "http://s3-env:2");
        assert_true(cfg->path_style);
        storage_config_free(cfg);

        setenv("BOXCAR_S3_FORCE_PATH_STYLE", "maybe", 1);
        expect_error("BOXCAR_S3_FORCE_PATH_STYLE");
        unsetenv("BOXCAR_S3_FORCE_PATH_STYLE");
        setenv("AWS_ENDPOINT_URL", "ftp://x", 1);
        unsetenv("AWS_ENDPOINT_URL_S3");
        expect_error("AWS_ENDPOINT_URL must start with");

        /* AWS itself, path-style forced by the profile: the regional host. */
        clear_env();
        write_file(config_path, "[default]\ns3 =\n  addressing_style = path\n");
        setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
        setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
        setenv("AWS_REGION", "eu-west-1", 1);
        cfg = config_ok();
        assert_true(cfg->path_style);
        assert_int_equal(s3_target_init(cfg, "k", &t, NULL), 0);
        assert_string_equal(t.url, "https://s3.eu-west-1.amazonaws.com/boxcar/k");
        s3_target_done(&t);
        storage_config_free(cfg);
        write_file(config_path, "[default]\ns3 =\n  addressing_style = sideways\n");
        expect_error("addressing_style must be path, virtual or auto");
        clear_env();
}

static void test_documents(void **state)
{
        (void)state;
        static const struct {
                const char *s;
                long long want;
        } times[] = {
                { "2026-11-23T15:04:05Z", 1795446245 },
                { "2026-11-23T15:04:05.123Z", 1795446245 },
                { "2026-11-23T17:04:05+02:00", 1795446245 },
                { "2026-11-23 15:04:05", -1 },
                { "2026-11-23T15:04:05Zjunk", -1 },
                /* Found by fuzz_aws: a one-digit hour made the parser
                 * step past the end of the string. */
                { "2026-11-23T15:04:05.2026-2:00", -1 },
                { "2026-11-23T15:04:05+02", -1 },
                { "2026-11-23T13:04:05-02:00", 1795446245 },
        };
        for (size_t i = 0; i < ELEMENTSOF(times); i++) {
                time_t t = 0;
                int r = creds_parse_time(times[i].s, &t);
                if (times[i].want < 0)
                        assert_true(r < 0);
                else
                        assert_int_equal((long long)t, times[i].want);
        }
        struct aws_creds c;
        assert_int_equal(creds_from_json("{\"Code\":\"Success\",\"AccessKeyId\":\"ASIA1\","
                                         "\"SecretAccessKey\":\"s\",\"Token\":\"t\","
                                         "\"Expiration\":\"2026-11-23T15:04:05Z\"}",
                                         "x", &c, NULL),
                         0);
        assert_string_equal(c.access_key, "ASIA1");
        assert_string_equal(c.session_token, "t");
        assert_int_equal((long long)c.expires, 1795446245);
        aws_creds_done(&c);
        static const struct {
                const char *doc, *needle;
        } bad[] = {
                { "[]", "not a JSON object" },
                { "{\"AccessKeyId\":\"A\"}", "lacks AccessKeyId or SecretAccessKey" },
                { "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":7}", "lacks" },
                { "{\"Code\":\"Failed\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\"}",
                  "Code Failed" },
                { "{\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\",\"Expiration\":\"soon\"}",
                  "ISO 8601" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct bc_error err = BC_ERROR_INIT;
                assert_true(creds_from_json(bad[i].doc, "x", &c, &err) < 0);
                if (!strstr(bc_error_message(&err), bad[i].needle))
                        fail_msg("'%s': '%s'", bad[i].doc, bc_error_message(&err));
                bc_error_clear(&err);
        }
        static const struct {
                const char *url;
                int ok;
        } urls[] = {
                { "http://127.0.0.1:8080/x", 1 },
                { "http://localhost/x", 1 },
                { "http://169.254.170.2/v2/credentials", 1 },
                { "http://169.254.170.23/v1", 1 },
                { "http://[::1]:80/x", 1 },
                { "http://[fd00:ec2::23]/x", 1 },
                { "https://anything.example/x", 1 },
                { "http://169.254.169.254/x", 0 },
                { "http://example.com/x", 0 },
                { "ftp://127.0.0.1/x", 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(urls); i++)
                if ((creds_container_check_url(urls[i].url, NULL) == 0) != urls[i].ok)
                        fail_msg("%s: want %s", urls[i].url, urls[i].ok ? "allowed" : "refused");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_profile_files),
                cmocka_unit_test(test_chain_order),
                cmocka_unit_test(test_region_endpoint_path_style),
                cmocka_unit_test(test_documents),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
