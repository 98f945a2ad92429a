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
                "\"artifact\": {\"storage\": \"notes-42\", \"mount\": \"/workspace\"},"
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
        assert_string_equal(s->artifact_storage, "notes-42");
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

static void test_no_session(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok("{\"command\": [\"x\"]}");
        assert_null(s->session.id);
        assert_null(s->stdin_data);
        assert_int_equal(s->stdin_len, 0);
        assert_null(s->files);
        assert_int_equal(s->n_files, 0);
        assert_null(s->artifact_storage);
        spec_free(s);
}

/* A session job without an artifact gets its session's storage at
 * "latest", as the enqueue trigger fills it in SQL. */
static void test_session_defaults(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok(
                "{\"session\": {\"id\": \"chat-42\"}, \"command\": [\"x\"]}");
        assert_int_equal(s->mode, SPEC_COMMAND);
        assert_string_equal(s->session.id, "chat-42");
        assert_true(s->session.idle_timeout_s == SPEC_DEFAULT_IDLE_TIMEOUT_S);
        assert_true(s->session.idle_timeout_s == 300);
        assert_null(s->session.from_session);
        assert_null(s->session.from_version);
        assert_string_equal(s->artifact_storage, "session-chat-42");
        assert_string_equal(s->artifact_base, "latest");
        assert_null(s->stdin_data);
        spec_free(s);
}

static void test_session_full(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok(
                "{\"session\": {\"id\": \"chat-42\", \"idle_timeout_s\": 90.5, \"from\": "
                "{\"session\": \"template\"}}, \"code\": {\"language\": \"node\", \"source\": "
                "\"function main() {}\"}, \"stdin\": \"h\\u00e9llo\\n\", \"artifact\": "
                "{\"storage\": \"session-chat-42\", \"base\": \"empty\"}}");
        assert_int_equal(s->mode, SPEC_CODE);
        assert_true(s->session.idle_timeout_s == 90.5);
        assert_string_equal(s->session.from_session, "template");
        assert_string_equal(s->session.from_version, "latest");
        assert_string_equal(s->artifact_storage, "session-chat-42");
        assert_string_equal(s->artifact_base, "empty");
        assert_int_equal(s->stdin_len, 7); /* é is two bytes */
        assert_memory_equal(s->stdin_data, "h\xc3\xa9llo\n", 8);
        spec_free(s);
        s = parse_ok("{\"session\": {\"id\": \"b\", \"from\": {\"session\": \"a\", \"version\": "
                     "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}}, "
                     "\"script\": \"cat\", \"stdin\": \"\"}");
        assert_string_equal(s->session.from_version,
                            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
        assert_non_null(s->stdin_data);
        assert_int_equal(s->stdin_len, 0);
        spec_free(s);
}

/* Valid session specs, each at a rule's edge (the malformed side is in
 * tests/data/bad_specs.tsv; the same specs are fuzz seeds, which the
 * differential test runs through the SQL validator too). */
static void test_session_valid_table(void **state)
{
        (void)state;
        static const char *const valid[] = {
                /* id: 120 characters, every allowed kind */
                "{\"session\": {\"id\": \"A0_.-"
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}, \"command\": [\"x\"]}",
                "{\"session\": {\"id\": \"s\", \"idle_timeout_s\": 1}, \"command\": [\"x\"]}",
                "{\"session\": {\"id\": \"s\", \"idle_timeout_s\": 86400}, \"command\": [\"x\"]}",
                "{\"session\": {\"id\": \"s\", \"from\": {\"session\": \"t\", \"version\": "
                "\"latest\"}}, \"command\": [\"x\"]}",
                /* every code language, bash too (a fresh process each time) */
                "{\"session\": {\"id\": \"s\"}, \"code\": {\"language\": \"python\", \"source\": "
                "\"def main(): pass\"}}",
                "{\"session\": {\"id\": \"s\"}, \"code\": {\"language\": \"bash\", \"source\": "
                "\"main() { :; }\"}}",
                /* a storage merely containing "session-" is a plain job's */
                "{\"command\": [\"x\"], \"artifact\": {\"storage\": \"my-session-1\"}}",
                "{\"command\": [\"x\"], \"artifact\": {\"storage\": \"Session-1\"}}",
                "{\"session\": {\"id\": \"s\"}, \"files\": [{\"op\": \"list\", \"path\": \"/\"}]}",
                "{\"session\": {\"id\": \"s\"}, \"files\": [{\"op\": \"read\", \"path\": \"a\"}, "
                "{\"op\": \"stat\", \"path\": \"a b\"}, {\"op\": \"mkdir\", \"path\": \"d\", "
                "\"parents\": false}, {\"op\": \"remove\", \"path\": \"d\", \"recursive\": true}, "
                "{\"op\": \"move\", \"path\": \"a\", \"to\": \"../b\"}, {\"op\": \"write\", "
                "\"path\": \"c\", \"content\": \"\", \"encoding\": \"utf-8\", \"parents\": "
                "true}], \"stdin\": \"x\", \"env\": {\"A\": \"1\"}, \"limits\": {\"timeout_s\": "
                "5}}",
        };
        for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
                spec_free(parse_ok(valid[i]));
}

static void test_files(void **state)
{
        (void)state;
        struct job_spec *s = parse_ok(
                "{\"session\": {\"id\": \"s\"}, \"files\": ["
                "{\"op\": \"write\", \"path\": \"notes/a.txt\", \"content\": \"h\\u00e9\"},"
                "{\"op\": \"write\", \"path\": \"/workspace/b.bin\", \"content\": \"AP8=\", "
                "\"encoding\": \"base64\", \"parents\": true},"
                "{\"op\": \"read\", \"path\": \"notes/a.txt\"},"
                "{\"op\": \"list\", \"path\": \".\"},"
                "{\"op\": \"stat\", \"path\": \"b.bin\"},"
                "{\"op\": \"mkdir\", \"path\": \"x/y\", \"parents\": true},"
                "{\"op\": \"remove\", \"path\": \"x\", \"recursive\": true},"
                "{\"op\": \"move\", \"path\": \"b.bin\", \"to\": \"c.bin\"}]}");
        assert_int_equal(s->mode, SPEC_FILES);
        assert_null(s->argv);
        assert_string_equal(s->artifact_storage, "session-s");
        assert_int_equal(s->n_files, 8);
        const struct spec_file_op *f = s->files;
        static const enum spec_file_kind kinds[] = {
                SPEC_FILE_WRITE, SPEC_FILE_WRITE, SPEC_FILE_READ,   SPEC_FILE_LIST,
                SPEC_FILE_STAT,  SPEC_FILE_MKDIR, SPEC_FILE_REMOVE, SPEC_FILE_MOVE,
        };
        for (size_t i = 0; i < 8; i++)
                assert_int_equal(f[i].op, kinds[i]);
        assert_string_equal(f[0].path, "notes/a.txt");
        assert_int_equal(f[0].data_len, 3);
        assert_memory_equal(f[0].data, "h\xc3\xa9", 3);
        assert_false(f[0].parents);
        assert_string_equal(f[1].path, "/workspace/b.bin");
        assert_int_equal(f[1].data_len, 2);
        assert_memory_equal(f[1].data, "\x00\xff", 2);
        assert_true(f[1].parents);
        assert_null(f[2].data);
        assert_null(f[2].to);
        assert_true(f[5].parents);
        assert_false(f[5].recursive);
        assert_true(f[6].recursive);
        assert_string_equal(f[7].path, "b.bin");
        assert_string_equal(f[7].to, "c.bin");
        spec_free(s);
}

/* What base64 content decodes to: whitespace skipped, padding only at the
 * end (the malformed ones are in bad_specs.tsv, for SQL too). */
static void test_files_base64(void **state)
{
        (void)state;
        static const struct {
                const char *text; /* a JSON string's body */
                const char *want;
                size_t len;
        } cases[] = {
                { "", "", 0 },
                { "QQ==", "A", 1 },
                { "QUI=", "AB", 2 },
                { "QUJD", "ABC", 3 },
                { "QUJDRA==", "ABCD", 4 },
                { " Q U\\nJ D\\r\\n\\tRA = = \\n", "ABCD", 4 },
                { "QR==", "A", 1 }, /* unused bits are ignored, as decode() does */
                { "+/8=", "\xfb\xff", 2 },
                { "AAAA", "\0\0\0", 3 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char json[256];
                snprintf(json, sizeof(json),
                         "{\"session\": {\"id\": \"s\"}, \"files\": [{\"op\": \"write\", "
                         "\"path\": \"f\", \"content\": \"%s\", \"encoding\": \"base64\"}]}",
                         cases[i].text);
                struct job_spec *s = parse_ok(json);
                if (s->files[0].data_len != cases[i].len ||
                    memcmp(s->files[0].data, cases[i].want, cases[i].len) != 0)
                        fail_msg("base64 \"%s\": %zu bytes, want %zu", cases[i].text,
                                 s->files[0].data_len, cases[i].len);
                spec_free(s);
        }
}

static void parse_fails(const char *json, size_t len, const char *want)
{
        struct job_spec *s = NULL;
        struct bc_error err = BC_ERROR_INIT;
        int r = spec_parse(json, len, &s, &err);
        if (r >= 0 || err.code != BC_BAD_SPEC || strcmp(bc_error_message(&err), want) != 0)
                fail_msg("want BAD_SPEC '%s', got r=%d '%s'", want, r, bc_error_message(&err));
        assert_null(s);
        bc_error_clear(&err);
}

/* The limits too long for a corpus row: stdin's 1 MiB (in bytes), paths'
 * 4096 bytes in multi-byte characters, 1000 operations. */
static void test_session_sizes(void **state)
{
        (void)state;
        const char *head = "{\"session\": {\"id\": \"s\"}, \"command\": [\"cat\"], \"stdin\": \"";
        size_t hl = strlen(head), n = SPEC_STDIN_MAX;
        char *json = malloc(hl + n + 8);
        assert_non_null(json);
        memcpy(json, head, hl);
        memset(json + hl, 'x', n);
        memcpy(json + hl + n, "\"}", 3);
        struct job_spec *s = parse_ok(json);
        assert_int_equal(s->stdin_len, SPEC_STDIN_MAX);
        spec_free(s);
        /* One more byte: a two-byte character in place of the last one. */
        memcpy(json + hl + n - 1, "\xc3\xa9\"}", 5);
        parse_fails(json, strlen(json), "stdin: longer than 1048576 bytes");
        free(json);

        /* A path of 2048 two-byte characters is 4096 bytes; one more is too long. */
        char path_json[8192];
        int w = snprintf(path_json, sizeof(path_json),
                         "{\"session\": {\"id\": \"s\"}, \"files\": [{\"op\": \"stat\", "
                         "\"path\": \"");
        for (int i = 0; i < 2048; i++)
                w += snprintf(path_json + w, sizeof(path_json) - (size_t)w, "\xc3\xa9");
        snprintf(path_json + w, sizeof(path_json) - (size_t)w, "\"}]}");
        s = parse_ok(path_json);
        assert_int_equal(strlen(s->files[0].path), 4096);
        spec_free(s);
        snprintf(path_json + w, sizeof(path_json) - (size_t)w, "a\"}]}");
        parse_fails(path_json, strlen(path_json),
                    "files[0].path: must be a non-empty path of at most 4096 bytes");

        /* 1000 operations is the most. */
        const char *op = "{\"op\": \"stat\", \"path\": \"a\"},";
        size_t ol = strlen(op);
        char *big = malloc(64 + SPEC_FILES_MAX * ol);
        assert_non_null(big);
        size_t at = (size_t)sprintf(big, "{\"session\": {\"id\": \"s\"}, \"files\": [");
        for (unsigned i = 0; i < SPEC_FILES_MAX; i++, at += ol)
                memcpy(big + at, op, ol);
        memcpy(big + at - 1, "]}", 3);
        s = parse_ok(big);
        assert_int_equal(s->n_files, SPEC_FILES_MAX);
        spec_free(s);
        free(big);
}

static void test_bad_spec_corpus(void **state)
{
        (void)state;
        FILE *f = fopen("tests/data/bad_specs.tsv", "re");
        assert_non_null(f);
        /* The longest row is a 1001-operation files list. */
        static char line[65536];
        int cases = 0;
        while (fgets(line, sizeof(line), f)) {
                if (line[0] == '#' || line[0] == '\n')
                        continue;
                if (!strchr(line, '\n'))
                        fail_msg("tests/data/bad_specs.tsv: a row longer than %zu bytes",
                                 sizeof(line) - 2);
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
                cmocka_unit_test(test_no_session),
                cmocka_unit_test(test_session_defaults),
                cmocka_unit_test(test_session_full),
                cmocka_unit_test(test_session_valid_table),
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_files_base64),
                cmocka_unit_test(test_session_sizes),
                cmocka_unit_test(test_bad_spec_corpus),
        };
        return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
