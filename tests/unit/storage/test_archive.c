/* Unit tests for storage/ archives and transfers plumbing: path
 * normalization, URL redaction, retry decisions, and pack/extract round
 * trips and refusals on archives built in memory with libarchive. */
#include <errno.h>
#include <fcntl.h>
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

#include <archive.h>
#include <archive_entry.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/rmtree.h"
#include "storage/fsutil.h"
#include "storage/http.h"
#include "storage/storage.h"
#include "tests/unit/storage/fake_archive.h"

static void test_normalize(void **state)
{
        (void)state;
        static const struct {
                const char *in;
                int depth;
                const char *out;
        } cases[] = {
                { "a/b/c", 3, "a/b/c" },
                { "./a//b/./", 2, "a/b" },
                { ".", 0, "" },
                { "./", 0, "" },
                { "/etc/passwd", -EINVAL, NULL },
                { "..", -EINVAL, NULL },
                { "a/../b", -EINVAL, NULL },
                { "a/..", -EINVAL, NULL },
                { "...", 1, "..." },
                { "a/..b", 2, "a/..b" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char out[FS_MAX_PATH + 1];
                int r = fs_normalize(cases[i].in, out);
                if (r != cases[i].depth)
                        fail_msg("%s: got %d want %d", cases[i].in, r, cases[i].depth);
                if (r >= 0)
                        assert_string_equal(out, cases[i].out);
        }
        char long_name[300];
        memset(long_name, 'x', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        char out[FS_MAX_PATH + 1];
        assert_int_equal(fs_normalize(long_name, out), -ENAMETOOLONG);
        char deep[2 * (FS_MAX_DEPTH + 1) + 1] = "";
        for (int i = 0; i <= FS_MAX_DEPTH; i++)
                strcat(deep, "d/");
        assert_int_equal(fs_normalize(deep, out), -E2BIG);
}

static void test_redact(void **state)
{
        (void)state;
        static const struct {
                const char *in, *want;
        } cases[] = {
                { "https://b.s3.amazonaws.com/k?X-Amz-Signature=abc&X-Amz-Credential=AK",
                  "https://b.s3.amazonaws.com/k" },
                { "http://user:pw@host:9000/b/k#frag", "http://host:9000/b/k" },
                { "http://h/p", "http://h/p" },
                { "http://h?x=1", "http://h" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *r = http_redact(cases[i].in);
                assert_string_equal(r, cases[i].want);
                free(r);
        }
}

static void test_retryable(void **state)
{
        (void)state;
        assert_true(http_retryable(CURLE_COULDNT_CONNECT, 0));
        assert_true(http_retryable(CURLE_OPERATION_TIMEDOUT, 0));
        assert_true(http_retryable(CURLE_OK, 500));
        assert_true(http_retryable(CURLE_OK, 503));
        assert_true(http_retryable(CURLE_OK, 429));
        assert_false(http_retryable(CURLE_OK, 403));
        assert_false(http_retryable(CURLE_OK, 404));
        assert_false(http_retryable(CURLE_OK, 200));
        assert_false(http_retryable(CURLE_URL_MALFORMAT, 0));
        char code[64];
        http_s3_error_code("<Error><Code>SlowDown</Code><Message>x</Message></Error>", code);
        assert_string_equal(code, "SlowDown");
        http_s3_error_code("<Code>a\"<script></Code>", code);
        assert_string_equal(code, "a");
}

/* A scratch directory per test. */
static char *scratch(void)
{
        char tmpl[] = "/tmp/test_storage_archive.XXXXXX";
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        return strdup(d);
}

static void write_file(const char *path, const char *data, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
        fchmod(fd, mode);
        close(fd);
}

static char *path_join(const char *a, const char *b)
{
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", a, b) > 0);
        return p;
}

static void test_pack_roundtrip(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *src = path_join(d, "src");
        _cleanup_free_ char *sub = path_join(d, "src/sub");
        _cleanup_free_ char *f1 = path_join(d, "src/sub/f");
        _cleanup_free_ char *f2 = path_join(d, "src/a");
        _cleanup_free_ char *ln = path_join(d, "src/link");
        _cleanup_free_ char *out = path_join(d, "out.tgz");
        _cleanup_free_ char *dst = path_join(d, "dst");
        assert_int_equal(mkdir(src, 0755), 0);
        assert_int_equal(mkdir(sub, 0700), 0);
        write_file(f1, "inner\n", 0640);
        write_file(f2, "outer\n", 04755); /* setuid is not packed */
        assert_int_equal(symlink("/nonexistent/target", ln), 0);

        int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
        struct storage_pack_result p1, p2;
        assert_int_equal(storage_pack_dir(src, fd, NULL, &p1, NULL), 0);
        assert_int_equal(p1.file_count, 3);
        assert_int_equal(p1.skipped, 0);
        assert_true(storage_sha256_valid(p1.sha256));
        assert_int_equal((uint64_t)lseek(fd, 0, SEEK_CUR), p1.size);
        close(fd);
        fd = open("/dev/null", O_WRONLY);
        assert_int_equal(storage_pack_dir(src, fd, NULL, &p2, NULL), 0);
        close(fd);
        assert_string_equal(p1.sha256, p2.sha256);

        struct storage_fetch_result r;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_extract_file(out, p1.sha256, dst, NULL, &r, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        assert_string_equal(r.sha256, p1.sha256);
        assert_int_equal(r.size, p1.size);
        struct stat st;
        _cleanup_free_ char *xf = path_join(dst, "sub/f");
        _cleanup_free_ char *xa = path_join(dst, "a");
        _cleanup_free_ char *xs = path_join(dst, "sub");
        _cleanup_free_ char *xl = path_join(dst, "link");
        assert_int_equal(stat(xf, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        assert_int_equal(stat(xa, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        assert_int_equal(stat(xs, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);
        char target[64] = "";
        assert_int_equal(readlink(xl, target, sizeof(target) - 1), 19);
        assert_string_equal(target, "/nonexistent/target");

        /* A non-empty destination is refused before anything is read. */
        assert_true(storage_extract_file(out, NULL, dst, NULL, &r, &err) < 0);
        assert_int_equal(err.code, BC_IO);
        bc_error_clear(&err);
        fs_rm_rf(d);
}


/* Hard links stay links and sparse files stay sparse, deterministically
 * (the same tree packs to the same bytes, and unpacks to links and holes);
 * a tree over a limit is WORKSPACE_LIMIT naming the limit. */
static void test_pack_links_sparse_limits(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *src = path_join(d, "src");
        _cleanup_free_ char *f = path_join(d, "src/f");
        _cleanup_free_ char *l1 = path_join(d, "src/z-link");
        _cleanup_free_ char *l0 = path_join(d, "src/a-link");
        _cleanup_free_ char *sp = path_join(d, "src/sparse");
        _cleanup_free_ char *out = path_join(d, "out.tgz");
        _cleanup_free_ char *dst = path_join(d, "dst");
        assert_int_equal(mkdir(src, 0755), 0);
        write_file(f, "shared data\n", 0644);
        assert_int_equal(link(f, l1), 0);
        assert_int_equal(link(f, l0), 0);
        int sfd = open(sp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(sfd >= 0);
        assert_int_equal(pwrite(sfd, "x", 1, 1 << 20), 1);
        assert_int_equal(ftruncate(sfd, (off_t)1 << 30), 0); /* 1 GiB, one block */
        close(sfd);

        int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
        struct storage_pack_result p1, p2;
        assert_int_equal(storage_pack_dir(src, fd, NULL, &p1, NULL), 0);
        close(fd);
        assert_true(p1.size < 65536); /* the holes are not stored */
        fd = open("/dev/null", O_WRONLY);
        assert_int_equal(storage_pack_dir(src, fd, NULL, &p2, NULL), 0);
        close(fd);
        assert_string_equal(p1.sha256, p2.sha256);

        struct storage_fetch_result r;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_extract_file(out, p1.sha256, dst, NULL, &r, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        struct stat a, b, s;
        _cleanup_free_ char *xf = path_join(dst, "f");
        _cleanup_free_ char *xl = path_join(dst, "z-link");
        _cleanup_free_ char *xs = path_join(dst, "sparse");
        assert_int_equal(stat(xf, &a), 0);
        assert_int_equal(stat(xl, &b), 0);
        assert_int_equal(a.st_ino, b.st_ino);
        assert_int_equal(a.st_nlink, 3);
        assert_int_equal(stat(xs, &s), 0);
        assert_int_equal(s.st_size, (off_t)1 << 30);
        assert_true(s.st_blocks < 1024);

        struct storage_pack_limits lim;
        storage_pack_limits_default(&lim);
        lim.max_entries = 2;
        fd = open("/dev/null", O_WRONLY);
        assert_true(storage_pack_dir(src, fd, &lim, &p2, &err) < 0);
        assert_int_equal(err.code, BC_WORKSPACE_LIMIT);
        assert_non_null(strstr(bc_error_message(&err), "more than 2 files"));
        storage_pack_limits_default(&lim);
        lim.max_bytes = 1000; /* the links cost nothing, the sparse data 4 KiB */
        assert_true(storage_pack_dir(src, fd, &lim, &p2, &err) < 0);
        assert_int_equal(err.code, BC_WORKSPACE_LIMIT);
        assert_non_null(strstr(bc_error_message(&err), "more than 1000 bytes"));
        close(fd);
        bc_error_clear(&err);
        fs_rm_rf(d);
}

static void test_refusals(void **state)
{
        (void)state;
        static const struct fake_entry through_symlink[] = {
                { "l", AE_IFLNK, 0777, "/tmp", false },
                { "l/x", AE_IFREG, 0644, "pwned", false },
        };
        static const struct fake_entry dup[] = {
                { "f", AE_IFREG, 0644, "one", false },
                { "f", AE_IFREG, 0644, "two", false },
        };
        static const struct fake_entry dotdot[] = { { "a/../../x", AE_IFREG, 0644, "x", false } };
        static const struct fake_entry fifo[] = { { "p", AE_IFIFO, 0644, NULL, false } };
        static const struct fake_entry suid[] = { { "s", AE_IFREG, 04755, "x", false } };
        static const struct fake_entry hl_out[] = { { "h", AE_IFREG, 0644, "/etc/passwd", true } };
        static const struct fake_entry hl_missing[] = { { "h", AE_IFREG, 0644, "nothere", true } };
        static const struct {
                const char *name;
                const struct fake_entry *e;
                size_t n;
                const char *needle;
        } cases[] = {
                { "through symlink", through_symlink, 2, "symlink" },
                { "duplicate", dup, 2, "duplicate" },
                { "dotdot", dotdot, 1, "unsafe path" },
                { "fifo", fifo, 1, "fifo" },
                { "setuid", suid, 1, "setuid" },
                { "hardlink out", hl_out, 1, "hard link" },
                { "hardlink missing", hl_missing, 1, "hard link" },
        };
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *tgz = path_join(d, "a.tgz");
        _cleanup_free_ char *dst = path_join(d, "dst");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                write_archive(tgz, cases[i].e, cases[i].n);
                struct storage_fetch_result r;
                struct bc_error err = BC_ERROR_INIT;
                int rc = storage_extract_file(tgz, NULL, dst, NULL, &r, &err);
                if (rc >= 0 || err.code != BC_BAD_ARCHIVE ||
                    !strstr(bc_error_message(&err), cases[i].needle))
                        fail_msg("%s: rc=%d %s: %s", cases[i].name, rc, bc_code_name(err.code),
                                 bc_error_message(&err));
                assert_int_equal(access(dst, F_OK), -1); /* removed */
                bc_error_clear(&err);
        }
        fs_rm_rf(d);
}

/* An image's archive: setuid/setgid bits and device nodes are what a root
 * filesystem holds, so they are neutralised (bits cleared, devices, fifos
 * not made) rather than refused; the rest of the policy still holds. */
static void test_image_rules(void **state)
{
        (void)state;
        static const struct fake_entry img[] = {
                { "bin", AE_IFDIR, 0755, NULL, false },
                { "bin/su", AE_IFREG, 04755, "su", false },
                { "bin/wall", AE_IFREG, 02755, "wall", false },
                { "dev", AE_IFDIR, 0755, NULL, false },
                { "dev/null", AE_IFCHR, 0666, NULL, false },
                { "dev/sda", AE_IFBLK, 0660, NULL, false },
                { "run/initctl", AE_IFIFO, 0600, NULL, false },
                { "etc/os-release", AE_IFREG, 0644, "ID=test", false },
        };
        static const struct fake_entry dotdot[] = { { "a/../../x", AE_IFREG, 04755, "x", false } };
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *tgz = path_join(d, "a.tgz");
        _cleanup_free_ char *dst = path_join(d, "dst");
        struct storage_limits l;
        storage_limits_default(&l);
        struct storage_fetch_result r;
        struct bc_error err = BC_ERROR_INIT;
        write_archive(tgz, img, ELEMENTSOF(img));
        /* A volume refuses the very same archive. */
        assert_true(storage_extract_file(tgz, NULL, dst, &l, &r, &err) < 0);
        assert_int_equal(err.code, BC_BAD_ARCHIVE);
        bc_error_clear(&err);
        l.image = true;
        if (storage_extract_file(tgz, NULL, dst, &l, &r, &err) < 0)
                fail_msg("image: %s", bc_error_message(&err));
        struct stat st;
        _cleanup_free_ char *su = path_join(dst, "bin/su");
        _cleanup_free_ char *wall = path_join(dst, "bin/wall");
        assert_int_equal(stat(su, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        assert_int_equal(stat(wall, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        static const char *const absent[] = { "dev/null", "dev/sda", "run/initctl" };
        for (size_t i = 0; i < ELEMENTSOF(absent); i++) {
                _cleanup_free_ char *p = path_join(dst, absent[i]);
                assert_int_equal(lstat(p, &st), -1);
        }
        _cleanup_free_ char *os = path_join(dst, "etc/os-release");
        assert_int_equal(stat(os, &st), 0);
        fs_rm_rf(dst);
        /* Unsafe paths stay refused. */
        write_archive(tgz, dotdot, 1);
        assert_true(storage_extract_file(tgz, NULL, dst, &l, &r, &err) < 0);
        assert_non_null(strstr(bc_error_message(&err), "unsafe path"));
        bc_error_clear(&err);
        fs_rm_rf(d);
}

static void test_limits_enforced(void **state)
{
        (void)state;
        char *big = malloc(3 << 20);
        memset(big, 'a', 3 << 20);
        big[(3 << 20) - 1] = '\0';
        const struct fake_entry bomb[] = { { "zeros", AE_IFREG, 0644, big, false } };
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *tgz = path_join(d, "a.tgz");
        _cleanup_free_ char *dst = path_join(d, "dst");
        write_archive(tgz, bomb, 1);
        free(big);
        struct storage_limits l;
        storage_limits_default(&l);
        l.max_ratio = 50;
        l.ratio_floor = 1 << 20;
        struct storage_fetch_result r;
        struct bc_error err = BC_ERROR_INIT;
        assert_true(storage_extract_file(tgz, NULL, dst, &l, &r, &err) < 0);
        assert_int_equal(err.code, BC_BAD_ARCHIVE);
        assert_non_null(strstr(bc_error_message(&err), "ratio"));
        bc_error_clear(&err);
        l.max_ratio = 0;
        l.max_bytes = 1 << 20;
        assert_true(storage_extract_file(tgz, NULL, dst, &l, &r, &err) < 0);
        assert_non_null(strstr(bc_error_message(&err), "size limit"));
        bc_error_clear(&err);
        l.max_bytes = 0; /* invalid limits are a usage error, not a silent default */
        assert_true(storage_extract_file(tgz, NULL, dst, &l, &r, &err) < 0);
        assert_int_equal(err.code, BC_USAGE);
        bc_error_clear(&err);
        storage_limits_default(&l);
        assert_int_equal(storage_extract_file(tgz, NULL, dst, &l, &r, NULL), 0);
        assert_int_equal(r.bytes, (3 << 20) - 1);
        fs_rm_rf(d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normalize),
                cmocka_unit_test(test_redact),
                cmocka_unit_test(test_retryable),
                cmocka_unit_test(test_pack_roundtrip),
                cmocka_unit_test(test_pack_links_sparse_limits),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_image_rules),
                cmocka_unit_test(test_limits_enforced),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
