/* A job's opened secrets (worker/job/job_secrets.c): the value reaches the
 * job's environment, and is masked in the output tails (a truncated tail
 * beginning inside a value too), the live log (a value split across
 * writes) and the outcome; a worker without keys fails clearly.  The
 * sealed value is real pgcrypto output (tests/data/secrets). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/tailbuf.h"
#include "worker/job/job.h"
#include "worker/job/job_secrets.h"
#include "worker/job/livelog.h"
#include "worker/secrets/keyring.h"
#include "worker/spec/spec.h"
#include "tests/unit/worker/secrets/fixture.h"

#define VALUE "hunter2-aes256"


static struct job_spec *sealed_spec(void)
{
        char *sealed = slurp(DATA "job.b64");
        char *json = NULL;
        assert_true(asprintf(&json,
                             "{\"command\": [\"true\"], \"env\": {\"X\": \"1\"}, \"secrets\": "
                             "{\"API_KEY\": {\"sealed\": \"%s\", \"key\": \"5e3440960b06c7f9\"}}}",
                             sealed) > 0);
        struct job_spec *spec = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (spec_parse(json, strlen(json), &spec, &err) < 0)
                fail_msg("spec: %s", bc_error_message(&err));
        free(json);
        free(sealed);
        return spec;
}

struct fixture {
        struct secret_keyring *kr;
        struct job_spec *spec;
        struct job_secrets js;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        f->kr = test_keyring();
        f->spec = sealed_spec();
        struct bc_error err = BC_ERROR_INIT;
        if (job_secrets_open(f->kr, f->spec, "default", &f->js, &err) < 0)
                fail_msg("open: %s", bc_error_message(&err));
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        job_secrets_done(&f->js);
        spec_free(f->spec);
        secret_keyring_free(f->kr);
        free(f);
        return 0;
}

static void test_value_in_env(void **state)
{
        struct fixture *f = *state;
        assert_string_equal(f->spec->env[0], "X=1");
        assert_string_equal(f->spec->env[1], "API_KEY=" VALUE);
        assert_null(f->spec->env[2]);
}

static char *tail_text(struct tailbuf *t)
{
        size_t len;
        return tailbuf_copy(t, &len);
}

static void test_tail_masked(void **state)
{
        struct fixture *f = *state;
        struct tailbuf t;
        assert_int_equal(tailbuf_init(&t, 1000), 0);
        const char *out = "key=" VALUE "\nagain " VALUE VALUE "\n";
        tailbuf_write(&t, out, strlen(out));
        job_secrets_mask_tail(&f->js, &t);
        char *s = tail_text(&t);
        /* Touching occurrences: one "***" each (common/secret_mask.h). */
        assert_string_equal(s, "key=***\nagain ******\n");
        assert_int_equal(t.total, strlen(out)); /* the count stays the job's */
        free(s);
        tailbuf_done(&t);
}

/* The kept tail begins inside the value: its end is masked too. */
static void test_truncated_tail_masked(void **state)
{
        struct fixture *f = *state;
        struct tailbuf t;
        assert_int_equal(tailbuf_init(&t, 12), 0);
        const char *out = "xxxxxxxx" VALUE " end";
        tailbuf_write(&t, out, strlen(out));
        assert_true(tailbuf_truncated(&t));
        job_secrets_mask_tail(&f->js, &t);
        char *s = tail_text(&t);
        assert_string_equal(s, "*** end");
        free(s);
        tailbuf_done(&t);
}

static int sink_calls;
static int sink(void *ctx, const struct livelog_batch *b, struct bc_error *err)
{
        (void)ctx;
        (void)b;
        (void)err;
        sink_calls++;
        return 0;
}

/* A value split across two writes is masked in the live log. */
static void test_live_log_masked(void **state)
{
        struct fixture *f = *state;
        struct livelog l;
        livelog_init(&l, "00000000-0000-0000-0000-000000000000", 1, 1, 0, 1 << 20, sink, NULL);
        livelog_set_masks(&l, f->js.live[0], f->js.live[1]);
        livelog_write(&l, 1, "a=hunter2", 9);
        livelog_write(&l, 1, "-aes256\n", 8);
        char *taken = livelog_take(&l);
        assert_non_null(taken);
        /* "a=***\n" in hex */
        assert_non_null(strstr(taken, "613d2a2a2a0a"));
        assert_null(strstr(taken, "68756e74657232")); /* "hunter2" */
        free(taken);
        livelog_done(&l);
}

static void test_outcome_masked(void **state)
{
        struct fixture *f = *state;
        struct job_outcome o = { 0 };
        o.result_json = strdup("{\"return_value\": \"" VALUE "\"}");
        o.error_json = strdup("{\"code\": \"NONZERO_EXIT\", \"message\": \"" VALUE "\"}");
        job_secrets_mask_outcome(&f->js, &o);
        assert_string_equal(o.result_json, "{\"return_value\": \"***\"}");
        assert_string_equal(o.error_json, "{\"code\": \"NONZERO_EXIT\", \"message\": \"***\"}");
        free(o.result_json);
        free(o.error_json);
}

static void test_no_keys(void **state)
{
        (void)state;
        struct job_spec *spec = sealed_spec();
        struct job_secrets js;
        struct bc_error err = BC_ERROR_INIT;
        assert_true(job_secrets_open(NULL, spec, "default", &js, &err) < 0);
        assert_int_equal(err.code, BC_SECRET_UNAVAILABLE);
        assert_string_equal(bc_error_message(&err), "secrets.API_KEY: sealed with key "
                                                    "5e3440960b06c7f9; this worker has no "
                                                    "--secret-keys");
        bc_error_clear(&err);
        job_secrets_done(&js);
        spec_free(spec);
}

/* The value is sealed for scope "default" and the name API_KEY: in a job
 * of another scope it opens nowhere (a value copied from another tenant's
 * job), nor under another name. */
static void test_other_scope_refused(void **state)
{
        (void)state;
        static const char *const queues[] = { "acme/q", "defaultx", "other" };
        struct secret_keyring *kr = test_keyring();
        for (size_t i = 0; i < 3; i++) {
                struct job_spec *spec = sealed_spec();
                struct job_secrets js;
                struct bc_error err = BC_ERROR_INIT;
                assert_true(job_secrets_open(kr, spec, queues[i], &js, &err) < 0);
                assert_int_equal(err.code, BC_SECRET_UNAVAILABLE);
                assert_non_null(
                        strstr(bc_error_message(&err), "sealed for another scope or name"));
                assert_null(strstr(bc_error_message(&err), "hunter2"));
                assert_null(spec->env[1]);
                bc_error_clear(&err);
                job_secrets_done(&js);
                spec_free(spec);
        }
        struct job_spec *spec = sealed_spec();
        struct job_secrets js;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(job_secrets_open(kr, spec, "default/sub", &js, &err), 0);
        assert_string_equal(spec->env[1], "API_KEY=" VALUE);
        job_secrets_done(&js);
        spec_free(spec);
        secret_keyring_free(kr);
}

/* A stored spec always holds sealed values: plaintext means a row written
 * around the sealing, refused rather than used. */
static void test_plaintext_refused(void **state)
{
        (void)state;
        static const struct {
                const char *json, *message;
        } cases[] = {
                { "{\"command\": [\"true\"], \"secrets\": {\"K\": \"plain\"}}",
                  "secrets.K: not sealed (a row written around boxcar.enqueue's sealing)" },
                { "{\"command\": [\"true\"], \"secrets\": {\"BOXCAR_X\": {\"sealed\": \"A\", "
                  "\"key\": \"0123456789abcdef\"}}}",
                  "secrets.BOXCAR_X: not a valid variable name (BOXCAR_* are reserved)" },
                { "{\"command\": [\"true\"], \"env\": {\"K\": \"1\"}, \"secrets\": {\"K\": "
                  "{\"sealed\": \"A\", \"key\": \"0123456789abcdef\"}}}",
                  "secrets.K: also set in env" },
                { "{\"command\": [\"true\"], \"secrets\": []}",
                  "secrets: must be an object of names to values" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct job_spec *spec = NULL;
                struct bc_error err = BC_ERROR_INIT;
                assert_true(spec_parse(cases[i].json, strlen(cases[i].json), &spec, &err) < 0);
                assert_int_equal(err.code, BC_BAD_SPEC);
                assert_string_equal(bc_error_message(&err), cases[i].message);
                bc_error_clear(&err);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_value_in_env, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tail_masked, setup, teardown),
                cmocka_unit_test_setup_teardown(test_truncated_tail_masked, setup, teardown),
                cmocka_unit_test_setup_teardown(test_live_log_masked, setup, teardown),
                cmocka_unit_test_setup_teardown(test_outcome_masked, setup, teardown),
                cmocka_unit_test(test_no_keys),
                cmocka_unit_test(test_other_scope_refused),
                cmocka_unit_test(test_plaintext_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
