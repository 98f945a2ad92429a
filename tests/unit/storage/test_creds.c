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
                "AWS_CA_BUNDLE",
                "AWS_ENDPOINT_URL_STS",
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
                  "RFC 3339" },
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


/* credential_process is split as the AWS CLI splits it (shlex.split),
 * never given to a shell. */
static void test_split_command(void **state)
{
        (void)state;
        static const struct {
                const char *cmd;
                const char *want; /* words joined with '|' */
        } ok[] = {
                { "/opt/bin/creds --user helen", "/opt/bin/creds|--user|helen" },
                { "  a\tb  ", "a|b" },
                { "\"/opt/my dir/creds\" \"x y\"", "/opt/my dir/creds|x y" },
                { "a 'b \"c\" $HOME' d", "a|b \"c\" $HOME|d" },
                { "a \"q \\\"w\\\" \\\\ \\n\"", "a|q \"w\" \\ \\n" },
                { "a b\\ c", "a|b c" },
                { "a x\"y z\"w", "a|xy zw" },
                { "a '' b", "a||b" },
                { "~/bin/x $HOME", "~/bin/x|$HOME" }, /* no shell: literal */
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                char **argv = NULL;
                struct bc_error err = BC_ERROR_INIT;
                if (creds_split_command(ok[i].cmd, &argv, &err) < 0)
                        fail_msg("%s: %s", ok[i].cmd, bc_error_message(&err));
                char joined[256] = "";
                for (char **a = argv; *a; a++)
                        snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s",
                                 a == argv ? "" : "|", *a);
                if (strcmp(joined, ok[i].want) != 0)
                        fail_msg("%s: got %s, want %s", ok[i].cmd, joined, ok[i].want);
                creds_argv_free(argv);
        }
        static const struct {
                const char *cmd, *why;
        } bad[] = {
                { "", "it is empty" },
                { "   ", "it is empty" },
                { "\"/opt/x", "a \" is not closed" },
                { "x 'y", "a ' is not closed" },
                { "x \\", "it ends in a lone backslash" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char **argv = NULL;
                struct bc_error err = BC_ERROR_INIT;
                assert_true(creds_split_command(bad[i].cmd, &argv, &err) < 0);
                assert_int_equal(err.code, BC_CONFIG);
                if (!strstr(bc_error_message(&err), bad[i].why))
                        fail_msg("'%s': error '%s' lacks '%s'", bad[i].cmd, bc_error_message(&err),
                                 bad[i].why);
                bc_error_clear(&err);
        }
}

static void test_process_json(void **state)
{
        (void)state;
        struct aws_creds c = { 0 };
        assert_int_equal(
                creds_from_process_json(
                        "{\"Version\": 1, \"AccessKeyId\": \"ASIAP\", \"SecretAccessKey\":"
                        " \"sek\", \"SessionToken\": \"tok\", \"Expiration\": "
                        "\"2026-11-23T15:04:05Z\"}",
                        &c, NULL),
                0);
        assert_string_equal(c.access_key, "ASIAP");
        assert_string_equal(c.secret_key, "sek");
        assert_string_equal(c.session_token, "tok");
        assert_int_equal(c.expires, 1795446245);
        aws_creds_done(&c);
        assert_int_equal(creds_from_process_json("{\"Version\": 1, \"AccessKeyId\": \"AKIA\", "
                                                 "\"SecretAccessKey\": \"sek\"}",
                                                 &c, NULL),
                         0);
        assert_null(c.session_token);
        assert_int_equal(c.expires, 0); /* no Expiration: never refreshed */
        aws_creds_done(&c);
        static const struct {
                const char *doc, *why;
        } bad[] = {
                { "", "not a JSON object" },
                { "[1]", "not a JSON object" },
                { "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\"}", "no numeric Version" },
                { "{\"Version\": \"1\", \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\"}",
                  "no numeric Version" },
                { "{\"Version\": 2, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S\"}",
                  "Version 2 is not supported" },
                { "{\"Version\": 1, \"SecretAccessKey\": \"S3CR3T\"}", "lacks AccessKeyId" },
                { "{\"Version\": 1, \"AccessKeyId\": \"A\"}", "lacks SecretAccessKey" },
                { "{\"Version\": 1}", "lacks AccessKeyId and SecretAccessKey" },
                { "{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"S3CR3T\", "
                  "\"Expiration\": \"tomorrow\"}",
                  "Expiration is not an RFC 3339 time" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct bc_error err = BC_ERROR_INIT;
                assert_true(creds_from_process_json(bad[i].doc, &c, &err) < 0);
                const char *m = bc_error_message(&err);
                if (!strstr(m, bad[i].why) || strstr(m, "S3CR3T"))
                        fail_msg("%s: error '%s' lacks '%s' or quotes the secret", bad[i].doc, m,
                                 bad[i].why);
                bc_error_clear(&err);
        }
}

static void test_sts_assume_role_xml(void **state)
{
        (void)state;
        static const char ok[] =
                "<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                "<AssumeRoleResult><SourceIdentity>x</SourceIdentity><AssumedRoleUser>"
                "<Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn></AssumedRoleUser>"
                "<Credentials><AccessKeyId>ASIAROLE</AccessKeyId>"
                "<SecretAccessKey>wJal&amp;rXUt</SecretAccessKey>"
                "<SessionToken>FQoGZX&lt;tok</SessionToken>"
                "<Expiration>2026-11-23T15:04:05Z</Expiration></Credentials>"
                "</AssumeRoleResult></AssumeRoleResponse>";
        struct aws_creds c = { 0 };
        assert_int_equal(creds_sts_credentials("AssumeRole", ok, &c, NULL), 0);
        assert_string_equal(c.access_key, "ASIAROLE");
        assert_string_equal(c.secret_key, "wJal&rXUt");
        assert_string_equal(c.session_token, "FQoGZX<tok");
        assert_int_equal(c.expires, 1795446245);
        aws_creds_done(&c);
        struct bc_error err = BC_ERROR_INIT;
        assert_true(creds_sts_credentials("AssumeRole",
                                          "<AssumeRoleResponse><Credentials><AccessKeyId>A"
                                          "</AccessKeyId></Credentials></AssumeRoleResponse>",
                                          &c, &err) < 0);
        assert_non_null(strstr(bc_error_message(&err), "STS AssumeRole: the response lacks"));
        bc_error_clear(&err);
        assert_true(creds_sts_error("AssumeRole", 403,
                                    "<ErrorResponse><Error><Code>AccessDenied</Code><Message>not "
                                    "allowed\nto assume</Message></Error></ErrorResponse>",
                                    &err) < 0);
        assert_string_equal(
                bc_error_message(&err),
                "STS AssumeRole returned HTTP 403 (AccessDenied): not allowed to assume");
        bc_error_clear(&err);
}

static const char CHAIN[] = "[profile base]\n"
                            "aws_access_key_id = AKIDBASE\n"
                            "aws_secret_access_key = base-secret\n"
                            "[profile role]\n"
                            "role_arn = arn:aws:iam::123456789012:role/r\n"
                            "source_profile = base\n"
                            "aws_access_key_id = SHADOWED\n"
                            "aws_secret_access_key = shadowed\n"
                            "[profile role2]\n"
                            "role_arn = arn:aws:iam::123456789012:role/r2\n"
                            "source_profile = role\n"
                            "[profile self]\n"
                            "role_arn = arn:aws:iam::123456789012:role/s\n"
                            "source_profile = self\n"
                            "aws_access_key_id = AKIDSELF\n"
                            "aws_secret_access_key = self-secret\n"
                            "[profile proc]\n"
                            "credential_process = /bin/echo '{}'\n"
                            "[profile role-proc]\n"
                            "role_arn = arn:aws:iam::123456789012:role/p\n"
                            "source_profile = proc\n"
                            "[profile a]\n"
                            "role_arn = arn:aws:iam::123456789012:role/a\n"
                            "source_profile = b\n"
                            "[profile b]\n"
                            "role_arn = arn:aws:iam::123456789012:role/b\n"
                            "source_profile = c\n"
                            "[profile c]\n"
                            "role_arn = arn:aws:iam::123456789012:role/c\n"
                            "source_profile = b\n"
                            "[profile mfa]\n"
                            "role_arn = arn:aws:iam::123456789012:role/m\n"
                            "source_profile = base\n"
                            "mfa_serial = arn:aws:iam::123456789012:mfa/u\n"
                            "[profile csrc]\n"
                            "role_arn = arn:aws:iam::123456789012:role/c\n"
                            "credential_source = Ec2InstanceMetadata\n"
                            "[profile badsts]\n"
                            "role_arn = arn:aws:iam::123456789012:role/r\n"
                            "source_profile = base\n"
                            "sts =\n"
                            "    endpoint_url = sts.example\n";

/* role_arn + source_profile is picked before the profile's own keys (as
 * the SDKs do), and the profile chain's mistakes are configuration
 * errors at start, before any network. */
static void test_profile_chain(void **state)
{
        (void)state;
        clear_env();
        write_file(config_path, CHAIN);
        static const struct {
                const char *profile, *source;
        } ok[] = {
                { "role", "assume role (profile role, source_profile base)" },
                { "role2", "assume role (profile role2, source_profile role)" },
                { "self", "assume role (profile self, source_profile self)" },
                { "role-proc", "assume role (profile role-proc, source_profile proc)" },
                { "proc", "credential_process (profile proc: /bin/echo)" },
                { "base", "shared files (profile base)" },
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                setenv("AWS_PROFILE", ok[i].profile, 1);
                expect_source(ok[i].source);
        }
        static const struct {
                const char *profile, *why;
        } bad[] = {
                { "a", "source_profile chain a -> b -> c -> b is a cycle" },
                { "mfa", "profile mfa (" },
                { "csrc", "credential_source (use source_profile) is not supported" },
                { "badsts", "the profile's sts endpoint_url must start with http:// or https://" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                setenv("AWS_PROFILE", bad[i].profile, 1);
                expect_error(bad[i].why);
        }
        setenv("AWS_PROFILE", "mfa", 1);
        expect_error("mfa_serial (nobody types a code) is not supported");
        /* env keys still come first, as in the SDKs */
        setenv("AWS_PROFILE", "a", 1);
        setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
        setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
        expect_source("env");
        clear_env();
        /* The CA bundle: checked at start, named with where it came from. */
        setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
        setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
        setenv("AWS_CA_BUNDLE", "/nonexistent/ca.pem", 1);
        expect_error("AWS_CA_BUNDLE /nonexistent/ca.pem: No such file or directory");
        setenv("AWS_CA_BUNDLE", config_path, 1); /* empty: no certificate in it */
        expect_error("is empty");
        write_file(creds_path, "-----BEGIN CERTIFICATE-----\n");
        setenv("AWS_CA_BUNDLE", creds_path, 1);
        struct storage_config *cfg = config_ok();
        assert_string_equal(cfg->ca_bundle, creds_path);
        storage_config_free(cfg);
        unsetenv("AWS_CA_BUNDLE");
        write_file(config_path, "[default]\nca_bundle = /nonexistent/p.pem\n");
        expect_error("the profile's ca_bundle /nonexistent/p.pem: No such file or directory");
        clear_env();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_profile_files),
                cmocka_unit_test(test_chain_order),
                cmocka_unit_test(test_region_endpoint_path_style),
                cmocka_unit_test(test_documents),
                cmocka_unit_test(test_split_command),
                cmocka_unit_test(test_process_json),
                cmocka_unit_test(test_sts_assume_role_xml),
                cmocka_unit_test(test_profile_chain),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
