/* Unit tests for worker/job/livelog's hand-over of the last output to the
 * job's result (livelog_take): what boxcar.append_report_logs parses, the
 * sequence numbers after what was taken, and the cap; what a flush hands
 * the job's services (append_logs), and what becomes of a batch they did
 * not store.  No database: the writes stay under the flush thresholds
 * (64 KiB, 200 ms), or flush to a sink of the test's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "worker/job/livelog.h"

static cJSON *take_json(struct livelog *l)
{
        char *text = livelog_take(l);
        assert_non_null(text);
        cJSON *j = cJSON_Parse(text);
        assert_non_null(j);
        free(text);
        return j;
}

static void assert_chunk(const cJSON *chunks, int i, int stream, const char *hex)
{
        const cJSON *c = cJSON_GetArrayItem(chunks, i);
        assert_int_equal(cJSON_GetArraySize(c), 2);
        assert_int_equal(cJSON_GetArrayItem(c, 0)->valueint, stream);
        assert_string_equal(cJSON_GetArrayItem(c, 1)->valuestring, hex);
}

/* Chunk i is the cap's marker (on stderr). */
static void assert_marker(const cJSON *chunks, int i)
{
        assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(chunks, i), 0)->valueint, 2);
}

static void test_nothing_pending_is_null(void **state)
{
        (void)state;
        struct livelog l;
        livelog_init(&l, "job", 1, 1, 0, 1024, NULL, NULL);
        assert_null(livelog_take(&l));
        livelog_write(&l, 0, NULL, 0); /* a tick with nothing to store */
        assert_null(livelog_take(&l));
        livelog_done(&l);
}

static void test_chunks_by_stream_in_hex(void **state)
{
        (void)state;
        struct livelog l;
        livelog_init(&l, "job", 1, 1, 0, 1024, NULL, NULL);
        livelog_write(&l, 1, "hi", 2);
        livelog_write(&l, 1, "\n", 1); /* the same stream: one chunk */
        livelog_write(&l, 2, "\xff\x00", 2);
        livelog_write(&l, 1, "\"", 1);
        cJSON *j = take_json(&l);
        assert_int_equal(cJSON_GetObjectItem(j, "seq")->valueint, 1);
        const cJSON *chunks = cJSON_GetObjectItem(j, "chunks");
        assert_int_equal(cJSON_GetArraySize(chunks), 3);
        assert_chunk(chunks, 0, 1, "68690a");
        assert_chunk(chunks, 1, 2, "ff00");
        assert_chunk(chunks, 2, 1, "22");
        cJSON_Delete(j);
        assert_int_equal(l.stored, 6);
        assert_null(livelog_take(&l));
        /* What comes after is numbered after what was taken. */
        livelog_write(&l, 2, "x", 1);
        j = take_json(&l);
        assert_int_equal(cJSON_GetObjectItem(j, "seq")->valueint, 4);
        cJSON_Delete(j);
        livelog_done(&l);
}

static void test_cap_marker_is_taken_too(void **state)
{
        (void)state;
        struct livelog l;
        livelog_init(&l, "job", 2, 1, 0, 4, NULL, NULL);
        livelog_write(&l, 1, "abcdef", 6);
        cJSON *j = take_json(&l);
        const cJSON *chunks = cJSON_GetObjectItem(j, "chunks");
        assert_int_equal(cJSON_GetArraySize(chunks), 2);
        assert_chunk(chunks, 0, 1, "61626364");
        assert_marker(chunks, 1);
        cJSON_Delete(j);
        assert_int_equal(l.dropped, 2);
        livelog_done(&l);
}

/* A run handed back by a drain and claimed again (same attempt): the cap
 * counts what the earlier run stored, numbered after its chunks. */
static void test_cap_counts_an_earlier_run_of_the_attempt(void **state)
{
        (void)state;
        struct livelog l;
        livelog_init(&l, "job", 3, 5, 3, 4, NULL, NULL);
        livelog_write(&l, 1, "abc", 3);
        cJSON *j = take_json(&l);
        assert_int_equal(cJSON_GetObjectItem(j, "seq")->valueint, 5);
        const cJSON *chunks = cJSON_GetObjectItem(j, "chunks");
        assert_int_equal(cJSON_GetArraySize(chunks), 2);
        assert_chunk(chunks, 0, 1, "61");
        assert_marker(chunks, 1);
        cJSON_Delete(j);
        assert_int_equal(l.dropped, 2);
        livelog_done(&l);
        /* The earlier run reached the cap and stored the marker (the only
         * thing that takes it past the cap): nothing more, not a second one. */
        livelog_init(&l, "job", 3, 9, 4 + 60, 4, NULL, NULL);
        livelog_write(&l, 1, "abc", 3);
        assert_null(livelog_take(&l));
        assert_int_equal(l.dropped, 3);
        livelog_done(&l);
        /* Exactly at the cap, no marker yet: this run's first byte over it
         * brings it. */
        livelog_init(&l, "job", 3, 9, 4, 4, NULL, NULL);
        livelog_write(&l, 1, "abc", 3);
        j = take_json(&l);
        chunks = cJSON_GetObjectItem(j, "chunks");
        assert_int_equal(cJSON_GetArraySize(chunks), 1);
        assert_marker(chunks, 0);
        cJSON_Delete(j);
        livelog_done(&l);
}

static void test_logs_off_takes_nothing(void **state)
{
        (void)state;
        struct livelog l;
        livelog_init(&l, "job", 1, 1, 0, 0, NULL, NULL);
        livelog_write(&l, 1, "hi", 2);
        assert_null(livelog_take(&l));
        livelog_done(&l);
}


/* What the sink was handed, and whether it stores it. */
struct sink {
        bool refuse;
        int calls;
        char job_id[16], streams[64], chunks[128];
        int attempt, first_seq;
};

static int sink_append(void *ctx, const struct livelog_batch *b, struct bc_error *err)
{
        struct sink *k = ctx;
        k->calls++;
        snprintf(k->job_id, sizeof(k->job_id), "%s", b->job_id);
        snprintf(k->streams, sizeof(k->streams), "%s", b->streams);
        snprintf(k->chunks, sizeof(k->chunks), "%s", b->chunks);
        k->attempt = b->attempt;
        k->first_seq = b->first_seq;
        if (k->refuse)
                return bc_error_set(err, BC_DATABASE, ECONNREFUSED, "test: not stored");
        return 0;
}

/* A flush hands the batch as boxcar.append_logs takes it: a smallint[]
 * and a bytea[] literal (hex, its backslash escaped), numbered on. */
static void test_flush_hands_the_batch_as_array_literals(void **state)
{
        (void)state;
        struct sink k = { 0 };
        struct livelog l;
        livelog_init(&l, "job", 2, 4, 0, 1 << 20, sink_append, &k);
        livelog_write(&l, 1, "hi", 2);
        livelog_write(&l, 2, "!", 1);
        livelog_flush(&l);
        assert_int_equal(k.calls, 1);
        assert_string_equal(k.job_id, "job");
        assert_int_equal(k.attempt, 2);
        assert_int_equal(k.first_seq, 4);
        assert_string_equal(k.streams, "{1,2}");
        assert_string_equal(k.chunks, "{\"\\\\x6869\",\"\\\\x21\"}");
        assert_int_equal(l.stored, 3);
        assert_int_equal(l.n_chunks, 0);
        livelog_write(&l, 1, "x", 1);
        livelog_flush(&l);
        assert_int_equal(k.first_seq, 6);
        livelog_done(&l);
        assert_int_equal(k.calls, 2);
}

/* A flush the services refuse (the database is away, or the claim did not
 * commit) keeps the batch: it goes with the result, numbered from the
 * first sequence. */
static void test_failed_flush_is_kept_for_the_result(void **state)
{
        (void)state;
        struct sink k = { .refuse = true };
        struct livelog l;
        livelog_init(&l, "job", 1, 1, 0, 1 << 20, sink_append, &k);
        livelog_write(&l, 1, "kept", 4);
        livelog_flush(&l);
        assert_int_equal(k.calls, 1);
        assert_int_equal(l.dropped, 0);
        assert_int_equal(l.n_chunks, 1);
        livelog_write(&l, 2, "!", 1);
        cJSON *j = take_json(&l);
        assert_int_equal(cJSON_GetObjectItem(j, "seq")->valueint, 1);
        const cJSON *chunks = cJSON_GetObjectItem(j, "chunks");
        assert_int_equal(cJSON_GetArraySize(chunks), 2);
        assert_chunk(chunks, 0, 1, "6b657074");
        assert_chunk(chunks, 1, 2, "21");
        cJSON_Delete(j);
        /* Past 64 KiB pending, a batch the database refuses is dropped and
         * counted: the job's output must not pile up in the worker. */
        static char big[64 * 1024];
        memset(big, 'x', sizeof(big));
        livelog_write(&l, 1, big, sizeof(big));
        assert_int_equal(l.n_chunks, 0);
        assert_int_equal(l.dropped, sizeof(big));
        livelog_done(&l);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_nothing_pending_is_null),
                cmocka_unit_test(test_chunks_by_stream_in_hex),
                cmocka_unit_test(test_cap_marker_is_taken_too),
                cmocka_unit_test(test_cap_counts_an_earlier_run_of_the_attempt),
                cmocka_unit_test(test_logs_off_takes_nothing),
                cmocka_unit_test(test_flush_hands_the_batch_as_array_literals),
                cmocka_unit_test(test_failed_flush_is_kept_for_the_result),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
