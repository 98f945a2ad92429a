/* Unit tests for common/session_wire.c: every message through its encoder,
 * a stream and its decoder; every prefix of every message refused; the
 * malformed payloads a broken or hostile peer could send; the stream's
 * framing fed a byte at a time and in odd chunks; the size limits. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/session_wire.h"

/* ---- the messages, each with its check ------------------------------------ */

static char *run_argv[] = { "sh", "-c", "echo hi", NULL };
static char *run_env[] = { "PATH=/usr/bin:/bin", "A=b c", NULL };
static char *no_strings[] = { NULL };

static int enc_run_full(struct dynbuf *out)
{
        struct sw_run r = { .argv = run_argv,
                            .env = run_env,
                            .cwd = "/workspace/sub",
                            .stdin_data = "in\0put",
                            .stdin_len = 6 };
        return sw_encode_run(out, 7, &r);
}

static void check_run_full(const char *p, size_t len)
{
        struct sw_run r;
        assert_int_equal(sw_decode_run(p, len, &r), 0);
        for (int i = 0; i < 3; i++)
                assert_string_equal(r.argv[i], run_argv[i]);
        assert_null(r.argv[3]);
        assert_string_equal(r.env[0], run_env[0]);
        assert_string_equal(r.env[1], run_env[1]);
        assert_null(r.env[2]);
        assert_string_equal(r.cwd, "/workspace/sub");
        assert_int_equal(r.stdin_len, 6);
        assert_memory_equal(r.stdin_data, "in\0put", 6);
        free(r.argv);
        free(r.env);
}

static int enc_run_bare(struct dynbuf *out)
{
        char *argv[] = { "true", NULL };
        struct sw_run r = { .argv = argv, .env = no_strings, .cwd = NULL };
        return sw_encode_run(out, 1, &r);
}

static void check_run_bare(const char *p, size_t len)
{
        struct sw_run r;
        assert_int_equal(sw_decode_run(p, len, &r), 0);
        assert_string_equal(r.argv[0], "true");
        assert_null(r.argv[1]);
        assert_null(r.env[0]);
        assert_string_equal(r.cwd, "");
        assert_int_equal(r.stdin_len, 0);
        free(r.argv);
        free(r.env);
}

static const struct sw_file_req file_ops[] = {
        { SW_FILE_WRITE, SW_FILE_PARENTS, "a/b.txt", "", "x\0y", 3 },
        { SW_FILE_READ, 0, "/etc/hostname", "", NULL, 0 },
        { SW_FILE_LIST, 0, ".", "", NULL, 0 },
        { SW_FILE_STAT, 0, "a", "", NULL, 0 },
        { SW_FILE_MKDIR, SW_FILE_PARENTS, "d/e/f", "", NULL, 0 },
        { SW_FILE_REMOVE, SW_FILE_RECURSIVE, "d", "", NULL, 0 },
        { SW_FILE_MOVE, 0, "a/b.txt", "c.txt", NULL, 0 },
};

static int enc_files_all(struct dynbuf *out)
{
        struct sw_files f = { .max_read = 1024, .n = 7, .ops = (struct sw_file_req *)file_ops };
        return sw_encode_files(out, 3, &f);
}

static void check_files_all(const char *p, size_t len)
{
        struct sw_files f;
        assert_int_equal(sw_decode_files(p, len, &f), 0);
        assert_int_equal(f.max_read, 1024);
        assert_int_equal(f.n, 7);
        for (int i = 0; i < 7; i++) {
                assert_int_equal(f.ops[i].op, file_ops[i].op);
                assert_int_equal(f.ops[i].flags, file_ops[i].flags);
                assert_string_equal(f.ops[i].path, file_ops[i].path);
                assert_string_equal(f.ops[i].to, file_ops[i].to);
                assert_int_equal(f.ops[i].data_len, file_ops[i].data_len);
                if (file_ops[i].data_len)
                        assert_memory_equal(f.ops[i].data, file_ops[i].data, file_ops[i].data_len);
        }
        free(f.ops);
}

static int enc_files_none(struct dynbuf *out)
{
        struct sw_files f = { .max_read = 0, .n = 0, .ops = NULL };
        return sw_encode_files(out, 4, &f);
}

static void check_files_none(const char *p, size_t len)
{
        struct sw_files f;
        assert_int_equal(sw_decode_files(p, len, &f), 0);
        assert_int_equal(f.n, 0);
        free(f.ops);
}

static int enc_code(struct dynbuf *out)
{
        struct sw_code c = { .language = "python",
                             .source = "def main(a):\n    return a\n",
                             .arguments = "{\"a\": 1}",
                             .env = run_env,
                             .cwd = "/workspace" };
        return sw_encode_code(out, 9, &c);
}

static void check_code(const char *p, size_t len)
{
        struct sw_code c;
        assert_int_equal(sw_decode_code(p, len, &c), 0);
        assert_string_equal(c.language, "python");
        assert_string_equal(c.source, "def main(a):\n    return a\n");
        assert_string_equal(c.arguments, "{\"a\": 1}");
        assert_string_equal(c.env[1], "A=b c");
        assert_null(c.env[2]);
        assert_string_equal(c.cwd, "/workspace");
        free(c.env);
}

static int enc_exit(struct dynbuf *out)
{
        struct sw_exit x = { .wstatus = 3 << 8,
                             .exec_errno = ENOENT,
                             .cpu_us = 123456789012ull,
                             .max_rss_kb = 4096 };
        return sw_encode_exit(out, 5, &x);
}

static void check_exit(const char *p, size_t len)
{
        struct sw_exit x;
        assert_int_equal(sw_decode_exit(p, len, &x), 0);
        assert_int_equal(x.wstatus, 3 << 8);
        assert_int_equal(x.exec_errno, ENOENT);
        assert_int_equal(x.cpu_us, 123456789012ull);
        assert_int_equal(x.max_rss_kb, 4096);
}

static const struct sw_entry entries[] = {
        { 'd', 0755, 4096, -1, "dir" },
        { 'l', 0777, 7, INT64_MAX, "link" },
        { 'f', 0644, UINT64_MAX, 1700000000123456789ll, "f\xc3\xa9.txt" },
        { 'o', 0600, 0, 0, "fifo" },
};

static int enc_file_result(struct dynbuf *out)
{
        struct sw_file_result r = { .index = 2,
                                    .err = 0,
                                    .truncated = true,
                                    .size = 99,
                                    .n_entries = 4,
                                    .entries = (struct sw_entry *)entries,
                                    .data = "abc\0",
                                    .data_len = 4 };
        return sw_encode_file_result(out, 6, &r);
}

static void check_file_result(const char *p, size_t len)
{
        struct sw_file_result r;
        assert_int_equal(sw_decode_file_result(p, len, &r), 0);
        assert_int_equal(r.index, 2);
        assert_int_equal(r.err, 0);
        assert_true(r.truncated);
        assert_int_equal(r.size, 99);
        assert_int_equal(r.n_entries, 4);
        for (int i = 0; i < 4; i++) {
                assert_int_equal(r.entries[i].type, entries[i].type);
                assert_int_equal(r.entries[i].mode, entries[i].mode);
                assert_int_equal(r.entries[i].size, entries[i].size);
                assert_int_equal(r.entries[i].mtime_ns, entries[i].mtime_ns);
                assert_string_equal(r.entries[i].name, entries[i].name);
        }
        assert_int_equal(r.data_len, 4);
        assert_memory_equal(r.data, "abc\0", 4);
        free(r.entries);
}

static int enc_file_error(struct dynbuf *out)
{
        struct sw_file_result r = { .index = 999, .err = EISDIR };
        return sw_encode_file_result(out, 6, &r);
}

static void check_file_error(const char *p, size_t len)
{
        struct sw_file_result r;
        assert_int_equal(sw_decode_file_result(p, len, &r), 0);
        assert_int_equal(r.index, 999);
        assert_int_equal(r.err, EISDIR);
        assert_false(r.truncated);
        assert_int_equal(r.n_entries, 0);
        assert_int_equal(r.data_len, 0);
        free(r.entries);
}

static int enc_code_done(struct dynbuf *out)
{
        struct sw_code_done d = { .status = SW_CODE_CRASHED,
                                  .return_value = "null",
                                  .error = "killed",
                                  .wstatus = 9 };
        return sw_encode_code_done(out, 8, &d);
}

static void check_code_done(const char *p, size_t len)
{
        struct sw_code_done d;
        assert_int_equal(sw_decode_code_done(p, len, &d), 0);
        assert_int_equal(d.status, SW_CODE_CRASHED);
        assert_string_equal(d.return_value, "null");
        assert_string_equal(d.error, "killed");
        assert_int_equal(d.wstatus, 9);
}

/* Decoders with one signature, for the malformed-input tests. */
static int dec_run(const char *p, size_t len)
{
        struct sw_run r;
        int e = sw_decode_run(p, len, &r);
        if (e == 0) {
                free(r.argv);
                free(r.env);
        }
        return e;
}

static int dec_files(const char *p, size_t len)
{
        struct sw_files f;
        int e = sw_decode_files(p, len, &f);
        if (e == 0)
                free(f.ops);
        return e;
}

static int dec_code(const char *p, size_t len)
{
        struct sw_code c;
        int e = sw_decode_code(p, len, &c);
        if (e == 0)
                free(c.env);
        return e;
}

static int dec_exit(const char *p, size_t len)
{
        struct sw_exit x;
        return sw_decode_exit(p, len, &x);
}

static int dec_file_result(const char *p, size_t len)
{
        struct sw_file_result r;
        int e = sw_decode_file_result(p, len, &r);
        if (e == 0)
                free(r.entries);
        return e;
}

static int dec_code_done(const char *p, size_t len)
{
        struct sw_code_done d;
        return sw_decode_code_done(p, len, &d);
}

static const struct message {
        const char *name;
        enum sw_type type;
        uint32_t seq;
        int (*encode)(struct dynbuf *out);
        void (*check)(const char *p, size_t len);
        int (*decode)(const char *p, size_t len);
} messages[] = {
        { "run", SW_RUN, 7, enc_run_full, check_run_full, dec_run },
        { "run, bare", SW_RUN, 1, enc_run_bare, check_run_bare, dec_run },
        { "files", SW_FILES, 3, enc_files_all, check_files_all, dec_files },
        { "files, none", SW_FILES, 4, enc_files_none, check_files_none, dec_files },
        { "code", SW_CODE, 9, enc_code, check_code, dec_code },
        { "exit", SA_EXIT, 5, enc_exit, check_exit, dec_exit },
        { "file result", SA_FILE, 6, enc_file_result, check_file_result, dec_file_result },
        { "file error", SA_FILE, 6, enc_file_error, check_file_error, dec_file_result },
        { "code done", SA_CODE_DONE, 8, enc_code_done, check_code_done, dec_code_done },
};

/* One frame of out from offset at: its header, checked against its own
 * length. */
static struct sw_header header_at(const struct dynbuf *out, size_t at)
{
        struct sw_header h;
        assert_true(out->len - at >= sizeof(h));
        memcpy(&h, out->data + at, sizeof(h));
        assert_int_equal(out->len - at - sizeof(h), h.len);
        return h;
}

static void test_round_trips(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
                const struct message *m = &messages[i];
                print_message("# %s\n", m->name);
                struct dynbuf out;
                dynbuf_init(&out, SW_PAYLOAD_MAX + 64);
                assert_int_equal(m->encode(&out), 0);
                struct sw_header h = header_at(&out, 0);
                assert_int_equal(h.type, m->type);
                assert_int_equal(h.seq, m->seq);
                assert_memory_equal(h.pad, "\0\0\0", 3);
                m->check(out.data + sizeof(h), h.len);
                dynbuf_done(&out);
        }
}

/* Every prefix of every payload is malformed, and so is the payload with
 * a byte more. */
static void test_truncated(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
                const struct message *m = &messages[i];
                struct dynbuf out;
                dynbuf_init(&out, SW_PAYLOAD_MAX + 64);
                assert_int_equal(m->encode(&out), 0);
                struct sw_header h = header_at(&out, 0);
                /* A copy of exactly each length, so a read past it is
                 * valgrind's and ASan's to see. */
                for (size_t len = 0; len < h.len; len++) {
                        char *p = malloc(len ? len : 1);
                        memcpy(p, out.data + sizeof(h), len);
                        if (m->decode(p, len) != -EBADMSG)
                                fail_msg("%s: a payload cut at %zu of %u bytes was taken", m->name,
                                         len, h.len);
                        free(p);
                }
                assert_int_equal(dynbuf_add(&out, "", 1), 0);
                assert_int_equal(m->decode(out.data + sizeof(h), h.len + 1), -EBADMSG);
                dynbuf_done(&out);
        }
}

/* ---- malformed payloads ----------------------------------------------------- */

static void mal_run_no_argv(struct dynbuf *b)
{
        sw_put_u32(b, 0);
        sw_put_u32(b, 0);
        sw_put_str(b, "/");
        sw_put_blob(b, NULL, 0);
}

static void mal_run_huge_argc(struct dynbuf *b)
{
        sw_put_u32(b, 1000000);
        sw_put_str(b, "a");
}

static void mal_run_unterminated(struct dynbuf *b)
{
        sw_put_u32(b, 1);
        dynbuf_add(b, "sh", 2);
}

static void mal_run_blob_too_long(struct dynbuf *b)
{
        char *argv[] = { "cat", NULL };
        sw_put_strv(b, argv);
        sw_put_u32(b, 0);
        sw_put_str(b, "/");
        sw_put_u32(b, 10);
        dynbuf_add(b, "abc", 3);
}

static void files_head(struct dynbuf *b, uint32_t n)
{
        sw_put_u32(b, 4096);
        sw_put_u32(b, n);
}

static void file_op(struct dynbuf *b, uint8_t op, uint8_t flags)
{
        sw_put_u8(b, op);
        sw_put_u8(b, flags);
        sw_put_str(b, "p");
        sw_put_str(b, "");
        sw_put_blob(b, NULL, 0);
}

static void mal_files_too_many(struct dynbuf *b)
{
        files_head(b, SW_FILES_MAX + 1);
        for (uint32_t i = 0; i < SW_FILES_MAX + 1; i++)
                file_op(b, SW_FILE_STAT, 0);
}

static void mal_files_op_zero(struct dynbuf *b)
{
        files_head(b, 1);
        file_op(b, 0, 0);
}

static void mal_files_op_eight(struct dynbuf *b)
{
        files_head(b, 1);
        file_op(b, SW_FILE_MOVE + 1, 0);
}

static void mal_files_flags(struct dynbuf *b)
{
        files_head(b, 1);
        file_op(b, SW_FILE_REMOVE, 4);
}

static void mal_files_count_short(struct dynbuf *b)
{
        files_head(b, 2);
        file_op(b, SW_FILE_STAT, 0);
}

static void mal_code_no_cwd(struct dynbuf *b)
{
        sw_put_str(b, "python");
        sw_put_str(b, "x = 1");
        sw_put_str(b, "{}");
        sw_put_u32(b, 0);
}

static void mal_exit_short(struct dynbuf *b)
{
        sw_put_i32(b, 0);
        sw_put_i32(b, 0);
        sw_put_u64(b, 0);
}

static void result_head(struct dynbuf *b, uint8_t truncated, uint32_t n_entries)
{
        sw_put_u32(b, 0);
        sw_put_i32(b, 0);
        sw_put_u8(b, truncated);
        sw_put_u64(b, 0);
        sw_put_u32(b, n_entries);
}

static void entry(struct dynbuf *b, char type)
{
        sw_put_u8(b, (uint8_t)type);
        sw_put_u32(b, 0644);
        sw_put_u64(b, 1);
        sw_put_i64(b, 1);
        sw_put_str(b, "n");
}

static void mal_result_entry_type(struct dynbuf *b)
{
        result_head(b, 0, 1);
        entry(b, 'x');
        sw_put_blob(b, NULL, 0);
}

static void mal_result_entry_nul_type(struct dynbuf *b)
{
        result_head(b, 0, 1);
        entry(b, '\0');
        sw_put_blob(b, NULL, 0);
}

static void mal_result_truncated(struct dynbuf *b)
{
        result_head(b, 2, 0);
        sw_put_blob(b, NULL, 0);
}

static void mal_result_too_many(struct dynbuf *b)
{
        result_head(b, 0, SW_ENTRIES_MAX + 1);
        for (uint32_t i = 0; i < SW_ENTRIES_MAX + 1; i++)
                entry(b, 'f');
        sw_put_blob(b, NULL, 0);
}

static void mal_done_status(struct dynbuf *b)
{
        sw_put_u8(b, SW_CODE_NO_INTERP + 1);
        sw_put_str(b, "null");
        sw_put_str(b, "");
        sw_put_i32(b, 0);
}

static void test_malformed(void **state)
{
        (void)state;
        static const struct {
                const char *name;
                void (*build)(struct dynbuf *b);
                int (*decode)(const char *p, size_t len);
        } cases[] = {
                { "run without argv", mal_run_no_argv, dec_run },
                { "run, argc over the bytes left", mal_run_huge_argc, dec_run },
                { "run, a string without its NUL", mal_run_unterminated, dec_run },
                { "run, stdin longer than the payload", mal_run_blob_too_long, dec_run },
                { "files, more than SW_FILES_MAX", mal_files_too_many, dec_files },
                { "files, op 0", mal_files_op_zero, dec_files },
                { "files, op 8", mal_files_op_eight, dec_files },
                { "files, unknown flags", mal_files_flags, dec_files },
                { "files, fewer ops than n", mal_files_count_short, dec_files },
                { "code without cwd", mal_code_no_cwd, dec_code },
                { "exit without max_rss", mal_exit_short, dec_exit },
                { "file result, entry type x", mal_result_entry_type, dec_file_result },
                { "file result, entry type NUL", mal_result_entry_nul_type, dec_file_result },
                { "file result, truncated 2", mal_result_truncated, dec_file_result },
                { "file result, entries over SW_ENTRIES_MAX", mal_result_too_many,
                  dec_file_result },
                { "code done, status 4", mal_done_status, dec_code_done },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct dynbuf b;
                dynbuf_init(&b, SW_PAYLOAD_MAX);
                cases[i].build(&b);
                if (cases[i].decode(b.data, b.len) != -EBADMSG)
                        fail_msg("%s: taken", cases[i].name);
                dynbuf_done(&b);
        }
}

/* ---- field readers and writers -------------------------------------------- */

static void test_fields(void **state)
{
        (void)state;
        struct dynbuf b;
        dynbuf_init(&b, 1024);
        char *v[] = { "a", "", "ccc", NULL };
        assert_int_equal(sw_put_u8(&b, 0xfe), 0);
        assert_int_equal(sw_put_u32(&b, 0xdeadbeef), 0);
        assert_int_equal(sw_put_i32(&b, -5), 0);
        assert_int_equal(sw_put_u64(&b, UINT64_MAX - 1), 0);
        assert_int_equal(sw_put_i64(&b, INT64_MIN), 0);
        assert_int_equal(sw_put_str(&b, "hello"), 0);
        assert_int_equal(sw_put_blob(&b, "\0\1\2", 3), 0);
        assert_int_equal(sw_put_strv(&b, v), 0);
        assert_int_equal(sw_put_strv(&b, NULL), 0);

        struct sw_reader r = { b.data, b.len };
        uint8_t u8;
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        int64_t i64;
        const char *s;
        uint32_t n;
        char **sv;
        assert_int_equal(sw_get_u8(&r, &u8), 0);
        assert_int_equal(u8, 0xfe);
        assert_int_equal(sw_get_u32(&r, &u32), 0);
        assert_int_equal(u32, 0xdeadbeef);
        assert_int_equal(sw_get_i32(&r, &i32), 0);
        assert_int_equal(i32, -5);
        assert_int_equal(sw_get_u64(&r, &u64), 0);
        assert_true(u64 == UINT64_MAX - 1);
        assert_int_equal(sw_get_i64(&r, &i64), 0);
        assert_true(i64 == INT64_MIN);
        assert_int_equal(sw_get_str(&r, &s), 0);
        assert_string_equal(s, "hello");
        assert_int_equal(sw_get_blob(&r, &s, &n), 0);
        assert_int_equal(n, 3);
        assert_memory_equal(s, "\0\1\2", 3);
        /* A count over max is refused before anything is read. */
        struct sw_reader before = r;
        assert_int_equal(sw_get_strv(&r, 2, &sv), -EBADMSG);
        r = before;
        assert_int_equal(sw_get_strv(&r, 3, &sv), 0);
        assert_string_equal(sv[0], "a");
        assert_string_equal(sv[1], "");
        assert_string_equal(sv[2], "ccc");
        assert_null(sv[3]);
        free(sv);
        assert_int_equal(sw_get_strv(&r, 3, &sv), 0);
        assert_null(sv[0]);
        free(sv);
        assert_int_equal(r.left, 0);
        /* Nothing left: every reader refuses and moves nothing. */
        assert_int_equal(sw_get_u8(&r, &u8), -EBADMSG);
        assert_int_equal(sw_get_u64(&r, &u64), -EBADMSG);
        assert_int_equal(sw_get_str(&r, &s), -EBADMSG);
        assert_int_equal(sw_get_blob(&r, &s, &n), -EBADMSG);
        assert_int_equal(sw_get_strv(&r, 3, &sv), -EBADMSG);
        dynbuf_done(&b);
}

/* A frame over SW_PAYLOAD_MAX is not sent, and nothing of it stays in the
 * buffer; a buffer's own cap is a frame too big as well. */
static void test_frame_limits(void **state)
{
        (void)state;
        struct dynbuf b;
        dynbuf_init(&b, SW_PAYLOAD_MAX + 1024);
        assert_int_equal(enc_exit(&b), 0);
        size_t kept = b.len;
        size_t start;
        assert_int_equal(sw_frame_begin(&b, SA_OUTPUT, 1, &start), 0);
        assert_int_equal(start, kept);
        char *big = calloc(1, SW_PAYLOAD_MAX);
        assert_int_equal(sw_put_u8(&b, 1), 0);
        assert_int_equal(dynbuf_add(&b, big, SW_PAYLOAD_MAX), 0);
        assert_int_equal(sw_frame_end(&b, start), -EMSGSIZE);
        assert_int_equal(b.len, kept);
        /* Exactly SW_PAYLOAD_MAX is a frame. */
        assert_int_equal(sw_frame_begin(&b, SA_OUTPUT, 1, &start), 0);
        assert_int_equal(dynbuf_add(&b, big, SW_PAYLOAD_MAX), 0);
        assert_int_equal(sw_frame_end(&b, start), 0);
        assert_int_equal(header_at(&b, start).len, SW_PAYLOAD_MAX);
        free(big);
        dynbuf_done(&b);

        dynbuf_init(&b, 40);
        assert_int_equal(enc_exit(&b), 0);
        kept = b.len;
        assert_int_equal(enc_run_full(&b), -EMSGSIZE);
        assert_int_equal(b.len, kept);
        assert_int_equal(sw_put_str(&b, "a string longer than what is left"), -EMSGSIZE);
        dynbuf_done(&b);
}

/* ---- the stream ----------------------------------------------------------- */

static void encode_all(struct dynbuf *all)
{
        dynbuf_init(all, 4 * SW_PAYLOAD_MAX);
        for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++)
                assert_int_equal(messages[i].encode(all), 0);
        size_t start;
        assert_int_equal(sw_frame_begin(all, SW_KILL, 12, &start), 0);
        assert_int_equal(sw_frame_end(all, start), 0);
}

/* Takes every whole frame s holds, checking each against the messages in
 * order (a SW_KILL with an empty payload last); returns how many so far. */
static size_t take_all(struct sw_stream *s, size_t seen)
{
        struct sw_header h;
        const char *payload;
        int r;
        while ((r = sw_stream_take(s, &h, &payload)) == 1) {
                if (seen < sizeof(messages) / sizeof(messages[0])) {
                        assert_int_equal(h.type, messages[seen].type);
                        assert_int_equal(h.seq, messages[seen].seq);
                        messages[seen].check(payload, h.len);
                } else {
                        assert_int_equal(h.type, SW_KILL);
                        assert_int_equal(h.seq, 12);
                        assert_int_equal(h.len, 0);
                }
                seen++;
        }
        assert_int_equal(r, 0);
        return seen;
}

static void test_stream_byte_by_byte(void **state)
{
        (void)state;
        struct dynbuf all;
        encode_all(&all);
        struct sw_stream s;
        sw_stream_init(&s);
        size_t seen = 0;
        for (size_t i = 0; i < all.len; i++) {
                assert_int_equal(sw_stream_feed(&s, all.data + i, 1), 0);
                seen = take_all(&s, seen);
        }
        assert_int_equal(seen, sizeof(messages) / sizeof(messages[0]) + 1);
        sw_stream_done(&s);
        dynbuf_done(&all);
}

/* Chunks of every size from 1 to 97 bytes, frames split anywhere. */
static void test_stream_chunks(void **state)
{
        (void)state;
        struct dynbuf all;
        encode_all(&all);
        for (size_t chunk = 1; chunk < 98; chunk += 3) {
                struct sw_stream s;
                sw_stream_init(&s);
                size_t seen = 0;
                for (size_t at = 0; at < all.len; at += chunk) {
                        size_t n = all.len - at < chunk ? all.len - at : chunk;
                        assert_int_equal(sw_stream_feed(&s, all.data + at, n), 0);
                        seen = take_all(&s, seen);
                }
                assert_int_equal(seen, sizeof(messages) / sizeof(messages[0]) + 1);
                sw_stream_done(&s);
        }
        /* All at once. */
        struct sw_stream s;
        sw_stream_init(&s);
        assert_int_equal(sw_stream_feed(&s, all.data, all.len), 0);
        assert_int_equal(take_all(&s, 0), sizeof(messages) / sizeof(messages[0]) + 1);
        sw_stream_done(&s);
        dynbuf_done(&all);
}

static void test_stream_oversized(void **state)
{
        (void)state;
        struct sw_header h = { .len = SW_PAYLOAD_MAX + 1, .type = SA_OUTPUT, .seq = 1 };
        struct sw_header got;
        const char *payload;
        /* Fed whole: the feed says so, and so does every take after. */
        struct sw_stream s;
        sw_stream_init(&s);
        assert_int_equal(sw_stream_feed(&s, &h, sizeof(h)), -EMSGSIZE);
        assert_int_equal(sw_stream_take(&s, &got, &payload), -EMSGSIZE);
        assert_int_equal(sw_stream_feed(&s, "x", 1), -EMSGSIZE);
        sw_stream_done(&s);
        /* Fed a byte at a time after a good frame not yet taken: the good
         * frame comes out, then the error, from take and feed alike. */
        struct dynbuf b;
        dynbuf_init(&b, 1024);
        assert_int_equal(enc_exit(&b), 0);
        assert_int_equal(dynbuf_add(&b, &h, sizeof(h)), 0);
        sw_stream_init(&s);
        for (size_t i = 0; i < b.len; i++)
                assert_int_equal(sw_stream_feed(&s, b.data + i, 1), 0);
        assert_int_equal(sw_stream_take(&s, &got, &payload), 1);
        assert_int_equal(got.type, SA_EXIT);
        check_exit(payload, got.len);
        assert_int_equal(sw_stream_take(&s, &got, &payload), -EMSGSIZE);
        assert_int_equal(sw_stream_feed(&s, "x", 1), -EMSGSIZE);
        sw_stream_done(&s);
        dynbuf_done(&b);
        /* Exactly SW_PAYLOAD_MAX is a frame still to come. */
        h.len = SW_PAYLOAD_MAX;
        sw_stream_init(&s);
        assert_int_equal(sw_stream_feed(&s, &h, sizeof(h)), 0);
        assert_int_equal(sw_stream_take(&s, &got, &payload), 0);
        sw_stream_done(&s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trips),   cmocka_unit_test(test_truncated),
                cmocka_unit_test(test_malformed),     cmocka_unit_test(test_fields),
                cmocka_unit_test(test_frame_limits),  cmocka_unit_test(test_stream_byte_by_byte),
                cmocka_unit_test(test_stream_chunks), cmocka_unit_test(test_stream_oversized),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
