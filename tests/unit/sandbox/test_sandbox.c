/* Unit tests for sandbox/: the argv the worker builds, the helper's
 * parsing of it (round trip), and the status object (table-driven). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/error.h"
#include "sandbox/helper-internal.h"
#include "sandbox/sandbox.h"

static char *cmd_true[] = { "true", NULL };
static char *cmd_py[] = { "python3", "-c", "print(1)", NULL };
static char *env_two[] = { "A=1", "PATH=/usr/bin", NULL };
static char *env_bad[] = { "NOEQUALS", NULL };
static char *env_empty_key[] = { "=x", NULL };
static char *cmd_empty[] = { NULL };
static const struct sandbox_bind bind_ok[] = { { "/srv/data", "/mnt/data" } };
static const struct sandbox_bind bind_rel[] = { { "/srv/data", "mnt/data" } };
static const struct sandbox_bind bind_proc[] = { { "/srv/data", "/proc/x" } };
static const struct sandbox_bind bind_dotdot[] = { { "/srv/data", "/mnt/../etc" } };
static const struct sandbox_bind bind_root[] = { { "/srv/data", "/" } };
static const struct sandbox_bind bind_ws[] = { { "/srv/data", "/workspace/x" } };
static const struct sandbox_bind bind_srcrel[] = { { "srv", "/mnt/x" } };

struct argv_case {
        const char *name;
        struct sandbox_opts o;
        int status_fd;
        int want_r;
        const char *want[32]; /* expected argv, NULL-terminated */
};

static const struct argv_case argv_cases[] = {
        { "minimal",
          { .argv = cmd_true },
          -1,
          0,
          { "H", "--network", "none", "--", "true", NULL } },
        { "everything",
          { .workspace = "/w",
            .ro_binds = bind_ok,
            .n_ro_binds = 1,
            .env = env_two,
            .argv = cmd_py,
            .timeout_s = 2.5,
            .memory_mb = 512,
            .pids = 64,
            .cpus = 0.5,
            .disk_mb = 100,
            .network = SANDBOX_NET_HOST },
          7,
          0,
          { "H",         "--status-fd", "7",           "--workspace", "/w",        "--ro-bind",
            "/srv/data", "/mnt/data",   "--env",       "A=1",         "--env",     "PATH=/usr/bin",
            "--timeout", "2.5",         "--memory-mb", "512",         "--pids",    "64",
            "--cpus",    "0.5",         "--disk-mb",   "100",         "--network", "host",
            "--",        "python3",     "-c",          "print(1)",    NULL } },
        { "empty command", { .argv = cmd_empty }, -1, -EINVAL, { NULL } },
        { "NULL command", { .argv = NULL }, -1, -EINVAL, { NULL } },
        { "env without =", { .argv = cmd_true, .env = env_bad }, -1, -EINVAL, { NULL } },
        { "env empty key", { .argv = cmd_true, .env = env_empty_key }, -1, -EINVAL, { NULL } },
        { "relative dest",
          { .argv = cmd_true, .ro_binds = bind_rel, .n_ro_binds = 1 },
          -1,
          -EINVAL,
          { NULL } },
        { "dest in /proc",
          { .argv = cmd_true, .ro_binds = bind_proc, .n_ro_binds = 1 },
          -1,
          -EINVAL,
          { NULL } },
        { "dest with ..",
          { .argv = cmd_true, .ro_binds = bind_dotdot, .n_ro_binds = 1 },
          -1,
          -EINVAL,
          { NULL } },
        { "dest /",
          { .argv = cmd_true, .ro_binds = bind_root, .n_ro_binds = 1 },
          -1,
          -EINVAL,
          { NULL } },
        { "dest in workspace",
          { .argv = cmd_true, .ro_binds = bind_ws, .n_ro_binds = 1 },
          -1,
          -EINVAL,
          { NULL } },
        { "relative src",
          { .argv = cmd_true, .ro_binds = bind_srcrel, .n_ro_binds = 1 },
          -1,
          -EINVAL,
          { NULL } },
        { "relative workspace", { .argv = cmd_true, .workspace = "w" }, -1, -EINVAL, { NULL } },
        { "negative timeout", { .argv = cmd_true, .timeout_s = -1 }, -1, -EINVAL, { NULL } },
        { "tiny cpus", { .argv = cmd_true, .cpus = 0.001 }, -1, -EINVAL, { NULL } },
};

static void test_argv_build_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(argv_cases) / sizeof(argv_cases[0]); i++) {
                const struct argv_case *tc = &argv_cases[i];
                struct bc_error err = BC_ERROR_INIT;
                char **argv = NULL;
                int r = sandbox_argv_build(&tc->o, "H", tc->status_fd, &argv, &err);
                print_message("# argv case: %s\n", tc->name);
                assert_int_equal(r, tc->want_r);
                if (r < 0) {
                        assert_null(argv);
                        assert_int_equal(err.code, BC_BAD_SPEC);
                        assert_non_null(err.message);
                        bc_error_clear(&err);
                        continue;
                }
                size_t n = 0;
                for (; tc->want[n]; n++) {
                        assert_non_null(argv[n]);
                        assert_string_equal(argv[n], tc->want[n]);
                }
                assert_null(argv[n]);
                sandbox_argv_free(argv);
        }
}

/* What the worker builds, the helper parses back to the same values. */
static void test_argv_round_trip(void **state)
{
        (void)state;
        const struct argv_case *tc = &argv_cases[1];
        char **argv = NULL;
        assert_int_equal(sandbox_argv_build(&tc->o, "H", 7, &argv, NULL), 0);
        int argc = 0;
        while (argv[argc])
                argc++;
        struct helper_config c;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(helper_config_parse(argc, argv, &c, &err), 0);
        assert_string_equal(c.workspace, "/w");
        assert_int_equal(c.n_ro_binds, 1);
        assert_string_equal(c.ro_binds[0].dest, "/mnt/data");
        assert_int_equal(c.n_env, 2);
        assert_string_equal(c.env[1], "PATH=/usr/bin");
        assert_null(c.env[2]);
        assert_true(c.timeout_s == 2.5);
        assert_true(c.cpus == 0.5);
        assert_int_equal(c.memory_mb, 512);
        assert_int_equal(c.disk_mb, 100);
        assert_int_equal(c.pids, 64);
        assert_int_equal(c.network, SANDBOX_NET_HOST);
        assert_int_equal(c.status_fd, 7);
        assert_int_equal(c.uid, SBX_DEFAULT_UID);
        assert_string_equal(c.argv[0], "python3");
        assert_string_equal(c.argv[2], "print(1)");
        assert_null(c.argv[3]);
        helper_config_done(&c);
        sandbox_argv_free(argv);

        /* Sizes with a unit, as every size flag takes them (common/size.c). */
        char *sized[] = { "H", "--memory-mb", "1GiB", "--disk-mb", "512MiB", "--", "true", NULL };
        assert_int_equal(helper_config_parse(7, sized, &c, &err), 0);
        assert_int_equal(c.memory_mb, 1024);
        assert_int_equal(c.disk_mb, 512);
        helper_config_done(&c);
}

/* A warm job process's warm-up parses its options (child.c): a shape the
 * parser no longer takes would quietly warm up less. */
static void test_options_warm_up(void **state)
{
        (void)state;
        assert_true(helper_config_warm_up());
}

struct parse_case {
        const char *args[12];
        int want_r;
};

static void test_options_reject(void **state)
{
        (void)state;
        static const struct parse_case cases[] = {
                { { "H", "true", NULL }, -EINVAL }, /* no -- */
                { { "H", "--", NULL }, -EINVAL },   /* no command */
                { { "H", "--bogus", "--", "true", NULL }, -EINVAL },
                { { "H", "--timeout", "abc", "--", "true", NULL }, -EINVAL },
                { { "H", "--timeout", "0", "--", "true", NULL }, -EINVAL },
                { { "H", "--memory-mb", "-5", "--", "true", NULL }, -EINVAL },
                { { "H", "--memory-mb", "10M", "--", "true", NULL }, -EINVAL },
                { { "H", "--memory-mb", "1500KiB", "--", "true", NULL }, -EINVAL },
                { { "H", "--disk-mb", "0GiB", "--", "true", NULL }, -EINVAL },
                { { "H", "--pids", "0", "--", "true", NULL }, -EINVAL },
                { { "H", "--network", "bridge", "--", "true", NULL }, -EINVAL },
                { { "H", "--uid", "0", "--", "true", NULL }, -EINVAL },
                { { "H", "--ro-bind", "/a", "--", "true", NULL }, -EINVAL },
                { { "H", "--ro-bind", "/a", "/dev/x", "--", "true", NULL }, -EINVAL },
                { { "H", "--hostname", "a b", "--", "true", NULL }, -EINVAL },
                { { "H", "--cpus", "nan", "--", "true", NULL }, -EINVAL },
                { { "H", "--help", NULL }, 0 },
                { { "H", "--uid", "1000", "--gid", "1000", "--", "id", NULL }, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int argc = 0;
                while (cases[i].args[argc])
                        argc++;
                struct helper_config c;
                struct bc_error err = BC_ERROR_INIT;
                int r = helper_config_parse(argc, (char **)cases[i].args, &c, &err);
                print_message("# options case %zu\n", i);
                assert_int_equal(r, cases[i].want_r);
                if (r == 0)
                        helper_config_done(&c);
                else
                        assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
}

struct status_case {
        const char *json;
        int want_r;
        int exit_code, signal;
        bool timed_out, oom, cancelled, setup_failed, exec_failed;
        uint64_t wall_ms;
        const char *step, *path, *message;
};

static void test_status_parse_table(void **state)
{
        (void)state;
        static const struct status_case cases[] = {
                { "{\"exit_code\":0,\"signal\":0,\"timed_out\":false,\"oom_killed\":false,"
                  "\"cancelled\":false,\"wall_ms\":12,\"cpu_ms\":3,\"max_rss_kb\":1234}",
                  0, 0, 0, false, false, false, false, false, 12, NULL, NULL, NULL },
                { "{\"exit_code\":137,\"signal\":9,\"timed_out\":true,\"wall_ms\":5000}", 0, 137,
                  9, true, false, false, false, false, 5000, NULL, NULL, NULL },
                { "{\"exit_code\":137,\"signal\":9,\"oom_killed\":true}", 0, 137, 9, false, true,
                  false, false, false, 0, NULL, NULL, NULL },
                { "{\"exit_code\":137,\"signal\":9,\"cancelled\":true}", 0, 137, 9, false, false,
                  true, false, false, 0, NULL, NULL, NULL },
                { "{\"exit_code\":122,\"setup_error\":{\"step\":\"mount\",\"path\":\"/usr\","
                  "\"errno\":2,\"message\":\"open_tree /usr: No such file\"}}",
                  0, 122, 0, false, false, false, true, false, 0, "mount", "/usr",
                  "open_tree /usr: No such file" },
                { "{\"exit_code\":127,\"exec_error\":{\"path\":\"python4\",\"errno\":2,"
                  "\"message\":\"exec python4: No such file or directory\"}}",
                  0, 127, 0, false, false, false, false, true, 0, NULL, "python4",
                  "exec python4: No such file or directory" },
                { "{\"exit_code\":0,\"future_field\":[1,2,3]}", 0, 0, 0, false, false, false,
                  false, false, 0, NULL, NULL, NULL },
                { "", -EINVAL, 0, 0, false, false, false, false, false, 0, NULL, NULL, NULL },
                { "[1,2]", -EINVAL, 0, 0, false, false, false, false, false, 0, NULL, NULL, NULL },
                { "{\"exit_code\":", -EINVAL, 0, 0, false, false, false, false, false, 0, NULL,
                  NULL, NULL },
                { "{\"exit_code\":300}", -EINVAL, 0, 0, false, false, false, false, false, 0, NULL,
                  NULL, NULL },
                { "{\"exit_code\":\"0\"}", -EINVAL, 0, 0, false, false, false, false, false, 0,
                  NULL, NULL, NULL },
                { "{\"sandbox_killed\":1}", -EINVAL, 0, 0, false, false, false, false, false, 0,
                  NULL, NULL, NULL },
                { "{\"timed_out\":1}", -EINVAL, 0, 0, false, false, false, false, false, 0, NULL,
                  NULL, NULL },
                { "{\"wall_ms\":-1}", -EINVAL, 0, 0, false, false, false, false, false, 0, NULL,
                  NULL, NULL },
                { "{\"setup_error\":{\"path\":\"/x\"}}", -EINVAL, 0, 0, false, false, false, false,
                  false, 0, NULL, NULL, NULL },
                { "{\"setup_error\":\"mount\"}", -EINVAL, 0, 0, false, false, false, false, false,
                  0, NULL, NULL, NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct status_case *tc = &cases[i];
                struct sandbox_status s;
                struct bc_error err = BC_ERROR_INIT;
                print_message("# status case %zu\n", i);
                int r = sandbox_status_parse(tc->json, strlen(tc->json), &s, &err);
                assert_int_equal(r, tc->want_r);
                if (r < 0) {
                        assert_int_equal(err.code, BC_SANDBOX_SETUP);
                        bc_error_clear(&err);
                        continue;
                }
                assert_int_equal(s.exit_code, tc->exit_code);
                assert_int_equal(s.signal, tc->signal);
                assert_int_equal(s.timed_out, tc->timed_out);
                assert_int_equal(s.oom_killed, tc->oom);
                assert_int_equal(s.cancelled, tc->cancelled);
                assert_int_equal(s.setup_failed, tc->setup_failed);
                assert_int_equal(s.exec_failed, tc->exec_failed);
                assert_int_equal(s.wall_ms, tc->wall_ms);
                if (tc->step)
                        assert_string_equal(s.setup_step, tc->step);
                else
                        assert_null(s.setup_step);
                if (tc->path)
                        assert_string_equal(s.setup_path, tc->path);
                if (tc->message)
                        assert_string_equal(s.message, tc->message);
                sandbox_status_done(&s);
        }
}

/* What the helper writes, the worker reads back identically; the parser
 * must also not read past len (the buffer is not NUL-terminated). */
static void test_status_round_trip(void **state)
{
        (void)state;
        struct sandbox_status in = {
                .exit_code = 124,
                .setup_failed = true,
                .setup_errno = 28,
                .setup_step = "workspace-out",
                .setup_path = "/w",
                .message = "copy: No space",
                .wall_ms = 77,
                .cpu_ms = 5,
                .max_rss_kb = 4096,
        };
        char *json = sbx_status_to_json(&in);
        assert_non_null(json);
        size_t len = strlen(json);
        char *copy = malloc(len);
        memcpy(copy, json, len);
        struct sandbox_status out;
        assert_int_equal(sandbox_status_parse(copy, len, &out, NULL), 0);
        assert_int_equal(out.exit_code, 124);
        assert_true(out.setup_failed);
        assert_int_equal(out.setup_errno, 28);
        assert_string_equal(out.setup_step, "workspace-out");
        assert_string_equal(out.setup_path, "/w");
        assert_string_equal(out.message, "copy: No space");
        assert_int_equal(out.max_rss_kb, 4096);
        assert_false(out.sandbox_killed);
        sandbox_status_done(&out);
        sandbox_status_done(NULL);
        free(copy);
        free(json);
        /* A sandbox killed from outside under its job. */
        struct sandbox_status killed = { .exit_code = 137, .signal = 9, .sandbox_killed = true };
        json = sbx_status_to_json(&killed);
        assert_non_null(json);
        assert_int_equal(sandbox_status_parse(json, strlen(json), &out, NULL), 0);
        assert_true(out.sandbox_killed);
        assert_int_equal(out.signal, 9);
        assert_false(out.setup_failed);
        sandbox_status_done(&out);
        free(json);
}

static void test_dest_check_table(void **state)
{
        (void)state;
        static const struct {
                const char *dest;
                int ok;
        } cases[] = {
                { "/mnt/repo", 1 },   { "/data", 1 },    { "/opt/x/y", 1 },   { "/workspacex", 1 },
                { "/", 0 },           { "", 0 },         { "mnt", 0 },        { "/mnt/", 0 },
                { "/mnt//x", 0 },     { "/mnt/./x", 0 }, { "/mnt/..", 0 },    { "/proc", 0 },
                { "/dev/shm", 0 },    { "/sys/x", 0 },   { "/workspace", 0 }, { "/tmp/x", 0 },
                { "/etc/passwd", 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                print_message("# dest '%s'\n", cases[i].dest);
                assert_int_equal(sbx_check_dest(cases[i].dest) == 0, cases[i].ok);
        }
}

static void test_detect_format(void **state)
{
        (void)state;
        struct sandbox_caps c;
        assert_int_equal(sandbox_detect(&c, NULL), 0);
        char *s = sandbox_caps_format(&c);
        assert_non_null(s);
        assert_non_null(strstr(s, "backend:"));
        assert_non_null(strstr(s, "cgroup:"));
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_argv_build_table),
                cmocka_unit_test(test_argv_round_trip),
                cmocka_unit_test(test_options_reject),
                cmocka_unit_test(test_options_warm_up),
                cmocka_unit_test(test_status_parse_table),
                cmocka_unit_test(test_status_round_trip),
                cmocka_unit_test(test_dest_check_table),
                cmocka_unit_test(test_detect_format),
        };
        return cmocka_run_group_tests_name("sandbox", tests, NULL, NULL);
}
