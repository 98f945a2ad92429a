/* Unit tests for storage_layer_build: what a layer over a known base tree
 * holds after each kind of change (read back with libarchive), when it
 * falls back to the whole tree, and that with an overlay's upper
 * directory the files absent from it are taken from the base manifest,
 * not read. */
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
#include "common/dynbuf.h"
#include "common/error.h"
#include "common/rmtree.h"
#include "storage/storage.h"

#define BIG_SIZE 65536

static char *path_join(const char *a, const char *b)
{
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", a, b) > 0);
        return p;
}

static void put(const char *dir, const char *name, const char *data, size_t len, mode_t mode)
{
        _cleanup_free_ char *p = path_join(dir, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void put_str(const char *dir, const char *name, const char *data)
{
        put(dir, name, data, strlen(data), 0644);
}

static void put_big(const char *dir, const char *name, unsigned seed)
{
        static char big[BIG_SIZE];
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (char)((i * 2654435761u + seed) >> 13);
        put(dir, name, big, sizeof(big), 0644);
}

static void run(const char *fmt, const char *dir)
{
        char cmd[512];
        snprintf(cmd, sizeof(cmd), fmt, dir, dir, dir);
        assert_int_equal(system(cmd), 0);
}

struct fixture {
        char *d;
        char *src;
        char *out;
        struct storage_tree *base;
};

/* big (64 KiB), a, d/{x,sub/y}, h1 = h2 (one inode), s -> target1. */
static void make_base(const char *src)
{
        assert_int_equal(mkdir(src, 0755), 0);
        put_big(src, "big", 1);
        put_str(src, "a", "alpha\n");
        run("mkdir -p %s/d/sub && echo x > %s/d/x && echo y > %s/d/sub/y", src);
        put_str(src, "h1", "linked\n");
        run("ln %s/h1 %s/h2", src);
        run("ln -s target1 %s/s", src);
}

static struct storage_layer_result build(const char *src, const char *out,
                                         const struct storage_layer_args *extra)
{
        struct storage_layer_args a = { .dir = src };
        if (extra)
                a = *extra;
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        struct storage_layer_result res;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_layer_build(&a, fd, &res, &err) < 0)
                fail_msg("layer build: %s", bc_error_message(&err));
        assert_int_equal((uint64_t)lseek(fd, 0, SEEK_CUR), res.pack.size);
        close(fd);
        return res;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        char tmpl[] = "/tmp/test_storage_layer.XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        f->d = strdup(tmpl);
        f->src = path_join(f->d, "src");
        f->out = path_join(f->d, "layer.tgz");
        make_base(f->src);
        struct storage_layer_result r = build(f->src, f->out, NULL);
        assert_true(r.whole);
        f->base = r.tree;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        storage_tree_free(f->base);
        fs_rm_rf(f->d);
        free(f->d);
        free(f->src);
        free(f->out);
        free(f);
        return 0;
}

/* The layer's entries, one a line: "<kind> <path>[ -> <link>] <perm> <size>". */
static char *list_layer(const char *path)
{
        struct archive *a = archive_read_new();
        archive_read_support_filter_gzip(a);
        archive_read_support_format_tar(a);
        assert_int_equal(archive_read_open_filename(a, path, 65536), ARCHIVE_OK);
        struct dynbuf b;
        dynbuf_init(&b, 1 << 20);
        struct archive_entry *e;
        while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
                const char *hl = archive_entry_hardlink(e);
                mode_t t = archive_entry_filetype(e);
                char kind = hl ? 'h' : t == AE_IFDIR ? 'd' : t == AE_IFLNK ? 'l' : 'f';
                const char *to = hl ? hl : t == AE_IFLNK ? archive_entry_symlink(e) : NULL;
                assert_int_equal(dynbuf_printf(&b, "%c %s%s%s %04o %lld\n", kind,
                                               archive_entry_pathname(e), to ? " -> " : "",
                                               to ? to : "", archive_entry_perm(e) & 07777,
                                               (long long)archive_entry_size(e)),
                                 0);
        }
        archive_read_free(a);
        return dynbuf_steal(&b);
}

static void mod_none(const char *s)
{
        (void)s;
}
static void mod_changed(const char *s)
{
        put_str(s, "a", "ALPHA!\n");
}
static void mod_new(const char *s)
{
        put_str(s, "n", "new\n");
}
static void mod_deleted(const char *s)
{
        run("rm %s/a", s);
}
static void mod_deleted_dir(const char *s)
{
        run("rm -r %s/d", s);
}
static void mod_deleted_deep(const char *s)
{
        run("rm %s/d/sub/y", s);
}
static void mod_mode(const char *s)
{
        run("chmod 0600 %s/a", s);
}
static void mod_dir_mode(const char *s)
{
        run("chmod 0700 %s/d", s);
}
static void mod_file_to_dir(const char *s)
{
        run("rm %s/a && mkdir %s/a && chmod 0751 %s/a", s);
}
static void mod_dir_to_file(const char *s)
{
        run("rm -r %s/d && echo file > %s/d", s);
}
static void mod_link_broken(const char *s)
{
        run("rm %s/h2 && echo linked > %s/h2", s);
}
static void mod_link_content(const char *s)
{
        put_str(s, "h1", "LINKED!\n"); /* O_TRUNC: the same inode, both names */
}
static void mod_new_dir(const char *s)
{
        run("mkdir %s/e && chmod 0705 %s/e && echo z > %s/e/z", s);
}
static void mod_first_name_gone(const char *s)
{
        run("rm %s/h1", s);
}
static void mod_symlink(const char *s)
{
        run("rm %s/s && ln -s target2 %s/s", s);
}

static void test_layer_contents(void **state)
{
        struct fixture *f = *state;
        static const struct {
                const char *name;
                void (*mod)(const char *src);
                const char *want;
                uint64_t whiteouts;
        } cases[] = {
                { "nothing", mod_none, "", 0 },
                { "changed file", mod_changed, "f a 0644 7\n", 0 },
                { "new file", mod_new, "f n 0644 4\n", 0 },
                { "deleted file", mod_deleted, "f .wh.a 0644 0\n", 1 },
                { "deleted directory", mod_deleted_dir, "f .wh.d 0644 0\n", 1 },
                { "deleted deep", mod_deleted_deep, "f d/sub/.wh.y 0644 0\n", 1 },
                { "mode", mod_mode, "f a 0600 6\n", 0 },
                { "directory mode", mod_dir_mode, "d d/ 0700 0\n", 0 },
                { "file to directory", mod_file_to_dir, "d a/ 0751 0\n", 0 },
                { "directory to file", mod_dir_to_file, "f d 0644 5\n", 0 },
                { "broken link group", mod_link_broken, "f h2 0644 7\n", 0 },
                { "linked file changed", mod_link_content, "f h1 0644 8\nh h2 -> h1 0644 0\n", 0 },
                { "new directory", mod_new_dir, "d e/ 0705 0\nf e/z 0644 2\n", 0 },
                { "first name gone", mod_first_name_gone, "f .wh.h1 0644 0\nf h2 0644 7\n", 1 },
                { "symlink", mod_symlink, "l s -> target2 0777 0\n", 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                fs_rm_rf(f->src);
                make_base(f->src);
                cases[i].mod(f->src);
                struct storage_layer_args a = { .dir = f->src, .below = f->base };
                struct storage_layer_result r = build(f->src, f->out, &a);
                _cleanup_free_ char *got = list_layer(f->out);
                if (r.whole || strcmp(got, cases[i].want) != 0)
                        fail_msg("%s: whole %d, entries:\n%s", cases[i].name, r.whole, got);
                assert_int_equal(r.whiteouts, cases[i].whiteouts);
                size_t lines = 0;
                for (const char *p = got; *p; p++)
                        lines += *p == '\n';
                assert_int_equal(r.changed_entries, lines);
                /* The tree is dir's whatever the layer: as a build without below. */
                struct storage_layer_result w = build(f->src, f->out, NULL);
                assert_string_equal(storage_tree_id(r.tree), storage_tree_id(w.tree));
                uint64_t files;
                storage_tree_stats(w.tree, NULL, &files, NULL);
                assert_int_equal(r.pack.file_count, files);
                storage_layer_result_done(&w);
                storage_layer_result_done(&r);
        }
        /* A changed file's data is what is counted. */
        fs_rm_rf(f->src);
        make_base(f->src);
        mod_changed(f->src);
        struct storage_layer_args a = { .dir = f->src, .below = f->base };
        struct storage_layer_result r = build(f->src, f->out, &a);
        assert_int_equal(r.changed_bytes, 7);
        storage_layer_result_done(&r);
}

/* The whole tree, byte for byte storage_pack_dir's, when most of the data
 * changed or a name could be taken for a whiteout. */
static void test_whole_fallback(void **state)
{
        struct fixture *f = *state;
        for (int c = 0; c < 3; c++) {
                fs_rm_rf(f->src);
                make_base(f->src);
                if (c == 0)
                        put_big(f->src, "big", 2);
                else if (c == 1)
                        put_str(f->src, ".wh.x", "not a whiteout\n");
                else
                        run("mkdir %s/d/.wh.sub", f->src);
                struct storage_layer_args a = { .dir = f->src, .below = f->base };
                struct storage_layer_result r = build(f->src, f->out, &a);
                assert_true(r.whole);
                assert_int_equal(r.whiteouts, 0);
                struct storage_pack_result p;
                int fd = open("/dev/null", O_WRONLY);
                assert_int_equal(storage_pack_dir(f->src, fd, NULL, &p, NULL), 0);
                close(fd);
                assert_string_equal(r.pack.sha256, p.sha256);
                assert_int_equal(r.pack.size, p.size);
                assert_int_equal(r.pack.file_count, p.file_count);
                uint64_t entries, data;
                storage_tree_stats(r.tree, &entries, NULL, &data);
                assert_int_equal(r.changed_entries, entries);
                assert_int_equal(r.changed_bytes, data);
                storage_layer_result_done(&r);
        }
}

/* base's manifest with big's sha256 replaced by zeros: a file hashed from
 * it can only have been taken from the manifest, never read. */
static struct storage_tree *forged_base(const struct storage_tree *base)
{
        const void *buf;
        size_t len;
        storage_tree_bytes(base, &buf, &len);
        char *copy = malloc(len);
        memcpy(copy, buf, len);
        static const char rec[] = "big\0f 0644 65536 ";
        char *p = memmem(copy, len, rec, sizeof(rec) - 1);
        assert_non_null(p);
        memset(p + sizeof(rec) - 1, '0', 64);
        struct storage_tree *t = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_tree_parse(copy, len, NULL, &t, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        free(copy);
        return t;
}

static bool has_record(const struct storage_tree *t, const char *rec, size_t len)
{
        const void *buf;
        size_t n;
        storage_tree_bytes(t, &buf, &n);
        return memmem(buf, n, rec, len) != NULL;
}

static void test_upper_not_read(void **state)
{
        struct fixture *f = *state;
        static const char forged[] =
                "big\0f 0644 65536 "
                "0000000000000000000000000000000000000000000000000000000000000000 -";
        _cleanup_free_ char *upper = path_join(f->d, "upper");
        fs_rm_rf(f->src);
        make_base(f->src);
        struct storage_tree *fb = forged_base(f->base);

        /* Only a changed in upper: big is taken from the base, unread. */
        mod_changed(f->src);
        assert_int_equal(mkdir(upper, 0755), 0);
        put_str(upper, "a", "ALPHA!\n");
        struct storage_layer_args a = { .dir = f->src, .base = fb, .upper = upper, .below = fb };
        struct storage_layer_result r = build(f->src, f->out, &a);
        assert_true(has_record(r.tree, forged, sizeof(forged)));
        _cleanup_free_ char *got = list_layer(f->out);
        assert_false(r.whole);
        assert_string_equal(got, "f a 0644 7\n");
        storage_layer_result_done(&r);

        /* big in upper (copied up): read, so its real hash, which differs
         * from the forged one below. */
        put_big(upper, "big", 1);
        r = build(f->src, f->out, &a);
        assert_false(has_record(r.tree, forged, sizeof(forged)));
        assert_true(r.whole);
        storage_layer_result_done(&r);

        /* Upper without big but big's size is not base's: read too. */
        run("rm %s/big", upper);
        put_big(f->src, "big", 1);
        run("truncate -s 65535 %s/big", f->src);
        r = build(f->src, f->out, &a);
        assert_false(has_record(r.tree, "big\0f 0644 65535 0000", 21));
        storage_layer_result_done(&r);

        /* Without upper every file is read. */
        put_big(f->src, "big", 1);
        a.upper = NULL;
        r = build(f->src, f->out, &a);
        assert_false(has_record(r.tree, forged, sizeof(forged)));
        struct storage_layer_result w = build(f->src, f->out, NULL);
        assert_string_equal(storage_tree_id(r.tree), storage_tree_id(w.tree));
        storage_layer_result_done(&w);
        storage_layer_result_done(&r);
        storage_tree_free(fb);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_layer_contents, setup, teardown),
                cmocka_unit_test_setup_teardown(test_whole_fallback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_upper_not_read, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
