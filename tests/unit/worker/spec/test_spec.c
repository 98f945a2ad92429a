/* Job spec parsing: defaults, every mode, and the shared malformed-spec
 * corpus (tests/data/bad_specs.tsv), whose messages the SQL validator must
 * give word for word too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "worker/spec/spec.h"

static struct job_spec *parse_ok(const char *json)
{
        struct job_spec *spec = NULL;
        struct bc_error err = BC_ERROR_INIT;
        int r = spec_parse(json, strlen(json), &spec, &err);
        if (r < 0)
                fail_msg("spec %s rejected: %s", json, bc_error_message(&err));
        bc_error_clear(&err);
        return spec;
}

static void test_defaults(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok("{\"command\": [\"echo\", \"hi\"]}");
        assert_int_equal(s->mode, SPEC_COMMAND);
        assert_string_equal(s->argv[0], "echo");
        assert_string_equal(s->argv[1], "hi");
        assert_null(s->argv[2]);
        assert_null(s->env[0]);
        assert_string_equal(s->workdir, "/workspace");
        assert_true(s->limits.timeout_s == 600);
        assert_int_equal(s->limits.memory_mb, 1024);
        assert_int_equal(s->limits.pids, 256);
        assert_int_equal(s->limits.output_bytes, 1048576);
        assert_false(s->network_host);
        assert_int_equal(s->retry_on, 0);
        spec_free(s);
}

static void test_full_spec(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok(
                "{\"version\": 1, \"code\": {\"language\": \"python\", \"source\": \"def main(): "
                "pass\", \"arguments\": {\"n\": 2}}, \"env\": {\"MODE\": \"prod\"},"
                "\"workdir\": \"/workspace/src\", \"startup_script\": \"true\","
                "\"startup_timeout_s\": 5, \"volumes\": [{\"name\": \"repo\", \"mount\": "
                "\"/mnt/repo\", \"url\": \"https://s3.example/x?sig=1\", \"sha256\": "
                "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"},"
                "{\"name\": \"data\", \"mount\": \"/mnt/data\", \"storage\": \"datasets\"}],"
                "\"artifact\": {\"storage\": \"session-42\", \"mount\": \"/workspace\"},"
                "\"limits\": {\"timeout_s\": 1.5, \"memory_mb\": 64, \"cpus\": 0.5, \"pids\": 32,"
                "\"disk_mb\": 10, \"output_bytes\": 0}, \"network\": \"host\","
                "\"webhook\": {\"url\": \"https://app.example/hook\"},"
                "\"retry\": {\"on\": [\"NONZERO_EXIT\", \"OOM\"]}}");
        assert_int_equal(s->mode, SPEC_CODE);
        assert_string_equal(s->code_language, "python");
        assert_string_equal(s->code_arguments, "{\"n\":2}");
        assert_string_equal(s->env[0], "MODE=prod");
        assert_string_equal(s->workdir, "/workspace/src");
        assert_int_equal(s->n_volumes, 2);
        assert_string_equal(s->volumes[1].version, "latest");
        assert_string_equal(s->artifact_storage, "session-42");
        assert_string_equal(s->artifact_base, "latest");
        assert_true(s->limits.timeout_s == 1.5);
        assert_int_equal(s->limits.output_bytes, 0);
        assert_true(s->network_host);
        assert_string_equal(s->webhook_url, "https://app.example/hook");
        assert_int_equal(s->retry_on, SPEC_RETRY_NONZERO_EXIT | SPEC_RETRY_OOM);
        spec_free(s);
}

static void test_script_mode(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok("{\"script\": \"echo $HOME; exit 3\"}");
        assert_int_equal(s->mode, SPEC_SCRIPT);
        assert_string_equal(s->script, "echo $HOME; exit 3");
        assert_null(s->argv);
        spec_free(s);
}

/* Duplicate keys: the last one counts, as in jsonb (what enqueue stored
 * and validated); the fuzz corpus found a spec where C read the first. */
static void test_duplicate_keys_last_wins(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok(
                "{\"script\": \"first\", \"env\": {\"A\": \"1\", \"A\": \"2\"}, "
                "\"script\": \"last\"}");
        assert_string_equal(s->script, "last");
        spec_free(s);
        struct bc_error err = BC_ERROR_INIT;
        const char *overlap =
                "{\"command\": [\"x\"], \"volumes\": [{\"name\": \"a\", \"mount\": \"/zz\", "
                "\"mount\": \"/mnt/a\", \"url\": \"https://s3/x\"}, {\"name\": \"b\", "
                "\"mount\": \"/mnt/a/b\", \"url\": \"https://s3/y\"}]}";
        s = NULL;
        assert_true(spec_parse(overlap, strlen(overlap), &s, &err) < 0);
        assert_non_null(strstr(bc_error_message(&err), "overlaps another volume at /mnt/a"));
        bc_error_clear(&err);
}

static void test_network_allow(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok("{\"command\": [\"x\"], \"network\": {\"allow\": "
                                      "[\"pypi.org:443\", \"*.githubusercontent.com:443\", "
                                      "\"10.2.0.0/16:5432\"]}}");
        assert_false(s->network_host);
        assert_int_equal(s->n_net_allow, 3);
        assert_string_equal(s->net_allow[0].name, "pypi.org");
        assert_false(s->net_allow[0].wildcard);
        assert_true(s->net_allow[1].wildcard);
        assert_string_equal(s->net_allow[1].name, "githubusercontent.com");
        assert_true(s->net_allow[2].is_cidr);
        assert_int_equal(s->net_allow[2].prefix, 16);
        assert_int_equal(s->net_allow[2].port, 5432);
        spec_free(s);
        s = parse_ok("{\"command\": [\"x\"], \"network\": \"none\"}");
        assert_int_equal(s->n_net_allow, 0);
        assert_null(s->net_allow);
        spec_free(s);
}

static void test_not_json(void **state)
{
        (void)state;
        struct job_spec *s = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_true(spec_parse("{\"command\": [", 13, &s, &err) < 0);
        assert_int_equal(err.code, BC_BAD_SPEC);
        assert_string_equal(bc_error_message(&err), "spec: not valid JSON (a value is missing)");
        assert_null(s);
        bc_error_clear(&err);
}

static void test_bad_spec_corpus(void **state)
{
        (void)state;
        FILE *f = fopen("tests/data/bad_specs.tsv", "re");
        assert_non_null(f);
        char line[8192];
        int cases = 0;
        while (fgets(line, sizeof(line), f)) {
                if (line[0] == '#' || line[0] == '\n')
                        continue;
                line[strcspn(line, "\n")] = '\0';
                char *tab = strchr(line, '\t');
                assert_non_null(tab);
                *tab = '\0';
                const char *want = line, *json = tab + 1;
                struct job_spec *s = NULL;
                struct bc_error err = BC_ERROR_INIT;
                int r = spec_parse(json, strlen(json), &s, &err);
                if (r >= 0 || err.code != BC_BAD_SPEC || strcmp(bc_error_message(&err), want) != 0)
                        fail_msg("spec %s: want BAD_SPEC '%s', got r=%d '%s'", json, want, r,
                                 bc_error_message(&err));
                assert_null(s);
                bc_error_clear(&err);
                cases++;
        }
        fclose(f);
        assert_true(cases >= 30);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_full_spec),
                cmocka_unit_test(test_script_mode),
                cmocka_unit_test(test_network_allow),
                cmocka_unit_test(test_not_json),
                cmocka_unit_test(test_duplicate_keys_last_wins),
                cmocka_unit_test(test_bad_spec_corpus),
        };
        return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
