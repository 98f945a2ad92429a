/* Unit tests for layers applied onto a tree (storage_apply_file): replace
 * semantics that never write through a shared inode, whiteouts, type and
 * mode changes, hard links into the tree, and every hostile layer refused
 * with nothing outside the tree changed; stack ids; hard-link clones of a
 * tree and their stats.  Layers are built in memory with libarchive. */
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
#include <openssl/sha.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/rmtree.h"
#include "storage/fsutil.h"
#include "storage/storage.h"
#include "tests/unit/storage/fake_archive.h"


static char *scratch(void)
{
        char tmpl[] = "/tmp/test_storage_apply.XXXXXX";
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        return strdup(d);
}

static char *join(const char *a, const char *b)
{
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", a, b) > 0);
        return p;
}

static void put(const char *dir, const char *rel, const char *data, mode_t mode)
{
        _cleanup_free_ char *p = join(dir, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
        fchmod(fd, mode);
        close(fd);
}

static void mkd(const char *dir, const char *rel, mode_t mode)
{
        _cleanup_free_ char *p = join(dir, rel);
        assert_int_equal(mkdir(p, mode), 0);
        chmod(p, mode);
}

static void lnk(const char *dir, const char *rel, const char *target)
{
        _cleanup_free_ char *p = join(dir, rel);
        assert_int_equal(symlink(target, p), 0);
}

/* The content of dir/rel, "" when it cannot be read, in a static buffer. */
static const char *get(const char *dir, const char *rel)
{
        static char buf[256];
        _cleanup_free_ char *p = join(dir, rel);
        buf[0] = '\0';
        int fd = open(p, O_RDONLY | O_NOFOLLOW);
        if (fd < 0)
                return buf;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        close(fd);
        return buf;
}

/* lstat's type and permission bits, 0 when missing. */
static mode_t mode_of(const char *dir, const char *rel)
{
        _cleanup_free_ char *p = join(dir, rel);
        struct stat st;
        return lstat(p, &st) == 0 ? st.st_mode & (S_IFMT | 07777) : 0;
}


static int apply(const char *dir, const char *dest, const struct fake_entry *e, size_t n,
                 struct bc_error *err)
{
        _cleanup_free_ char *tgz = join(dir, "layer.tgz");
        write_archive(tgz, e, n);
        struct storage_fetch_result r;
        return storage_apply_file(tgz, NULL, dest, NULL, &r, err);
}

static void apply_ok(const char *dir, const char *dest, const struct fake_entry *e, size_t n)
{
        struct bc_error err = BC_ERROR_INIT;
        if (apply(dir, dest, e, n, &err) < 0)
                fail_msg("apply: %s", bc_error_message(&err));
}

/* Replacing never writes through: a file of the tree that is a hard link
 * to a file outside it (another cache entry) keeps the outside content. */
static void test_replace_semantics(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *t = join(d, "t");
        mkd(d, "t", 0755);
        mkd(d, "other", 0755);
        put(d, "other/shared", "old", 0444);
        _cleanup_free_ char *shared = join(d, "other/shared");
        _cleanup_free_ char *inside = join(t, "f");
        assert_int_equal(link(shared, inside), 0);
        mkd(t, "dir2file", 0755);
        put(t, "dir2file/inner", "x", 0644);
        put(t, "file2dir", "x", 0644);
        lnk(t, "sym2file", "f");
        put(t, "file2sym", "x", 0644);
        mkd(t, "m", 0755);
        put(t, "m/kept", "kept", 0644);
        put(t, "gone", "x", 0644);
        mkd(t, "gonedir", 0755);
        mkd(t, "gonedir/sub", 0700);
        put(t, "gonedir/sub/deep", "x", 0644);
        put(t, "keep", "keep", 0640);

        static const struct fake_entry layer[] = {
                { ".wh.gone", AE_IFREG, 0644, NULL, false },
                { ".wh.gonedir", AE_IFREG, 0644, NULL, false },
                { "dir2file", AE_IFREG, 0600, "now a file", false },
                { "f", AE_IFREG, 0644, "new", false },
                { "file2dir", AE_IFDIR, 0750, NULL, false },
                { "file2dir/in", AE_IFREG, 0644, "in", false },
                { "file2sym", AE_IFLNK, 0777, "keep", false },
                { "hl_new", AE_IFREG, 0644, "f", true },
                { "hl_old", AE_IFREG, 0644, "keep", true },
                { "m", AE_IFDIR, 0700, NULL, false },
                { "sym2file", AE_IFREG, 0644, "plain", false },
        };
        apply_ok(d, t, layer, ELEMENTSOF(layer));
        assert_string_equal(get(t, "f"), "new");
        assert_string_equal(get(d, "other/shared"), "old");
        assert_int_equal(mode_of(d, "other/shared"), S_IFREG | 0444);
        assert_int_equal(mode_of(t, "gone"), 0);
        assert_int_equal(mode_of(t, "gonedir"), 0);
        assert_int_equal(mode_of(t, "dir2file"), S_IFREG | 0600);
        assert_string_equal(get(t, "dir2file"), "now a file");
        assert_int_equal(mode_of(t, "file2dir"), S_IFDIR | 0750);
        assert_string_equal(get(t, "file2dir/in"), "in");
        assert_int_equal(mode_of(t, "file2sym"), S_IFLNK | 0777);
        assert_int_equal(mode_of(t, "sym2file"), S_IFREG | 0644);
        assert_string_equal(get(t, "sym2file"), "plain");
        assert_int_equal(mode_of(t, "m"), S_IFDIR | 0700);
        assert_string_equal(get(t, "m/kept"), "kept");
        /* Hard links: to a file of the tree, and to one of this layer. */
        _cleanup_free_ char *keep = join(t, "keep");
        _cleanup_free_ char *hl_old = join(t, "hl_old");
        _cleanup_free_ char *f = join(t, "f");
        _cleanup_free_ char *hl_new = join(t, "hl_new");
        struct stat a, b;
        assert_int_equal(stat(keep, &a), 0);
        assert_int_equal(stat(hl_old, &b), 0);
        assert_int_equal(a.st_ino, b.st_ino);
        assert_int_equal(stat(f, &a), 0);
        assert_int_equal(stat(hl_new, &b), 0);
        assert_int_equal(a.st_ino, b.st_ino);
        assert_int_equal(stat(shared, &b), 0);
        assert_int_not_equal(a.st_ino, b.st_ino);
        fs_rm_rf(d);
}

/* A directory that denies its owner write gets its mode back after a
 * layer put something in it, unless the layer gave it one. */
static void test_dir_modes(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *t = join(d, "t");
        mkd(d, "t", 0755);
        mkd(t, "ro", 0555);
        mkd(t, "ro2", 0555);
        put(t, "ro2/old", "x", 0444);
        static const struct fake_entry layer[] = {
                { "ro/new", AE_IFREG, 0644, "n", false },
                { "ro2", AE_IFDIR, 0500, NULL, false },
                { "ro2/.wh.old", AE_IFREG, 0644, NULL, false },
                { "ro2/new", AE_IFREG, 0644, "n", false },
        };
        apply_ok(d, t, layer, ELEMENTSOF(layer));
        assert_int_equal(mode_of(t, "ro"), S_IFDIR | 0555);
        assert_string_equal(get(t, "ro/new"), "n");
        assert_int_equal(mode_of(t, "ro2"), S_IFDIR | 0500);
        assert_int_equal(mode_of(t, "ro2/old"), 0);
        assert_string_equal(get(t, "ro2/new"), "n");
        /* The root itself, read-only, opened up and given back. */
        assert_int_equal(chmod(t, 0555), 0);
        static const struct fake_entry top[] = { { "top", AE_IFREG, 0644, "t", false } };
        apply_ok(d, t, top, ELEMENTSOF(top));
        assert_int_equal(mode_of(d, "t"), S_IFDIR | 0555);
        assert_string_equal(get(t, "top"), "t");
        fs_rm_rf(d);
}

/* Every hostile layer is BC_BAD_ARCHIVE naming the fault, and nothing
 * outside the tree changes: a sentinel file outside, reachable from the
 * tree through symlinks (to it, and to its directory), keeps its content,
 * its mode and its directory's listing. */
static void test_hostile(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *out = join(d, "outside");
        _cleanup_free_ char *sentinel = join(d, "outside/sentinel");
        _cleanup_free_ char *abs_entry = NULL;
        assert_true(asprintf(&abs_entry, "%s", sentinel) > 0);
        static const struct fake_entry wh_dotdot[] = { { "dir/.wh...", AE_IFREG, 0644, NULL,
                                                         false } };
        static const struct fake_entry wh_dot[] = { { ".wh..", AE_IFREG, 0644, NULL, false } };
        static const struct fake_entry wh_empty[] = { { "dir/.wh.", AE_IFREG, 0644, NULL,
                                                        false } };
        static const struct fake_entry wh_opq[] = { { "dir/.wh..wh..opq", AE_IFREG, 0644, NULL,
                                                      false } };
        static const struct fake_entry wh_missing[] = { { ".wh.nothere", AE_IFREG, 0644, NULL,
                                                          false } };
        static const struct fake_entry wh_nonempty[] = { { ".wh.file", AE_IFREG, 0644, "data",
                                                           false } };
        static const struct fake_entry wh_after_create[] = {
                { "new", AE_IFREG, 0644, "n", false },
                { ".wh.new", AE_IFREG, 0644, NULL, false },
        };
        static const struct fake_entry wh_before_create[] = {
                { ".wh.file", AE_IFREG, 0644, NULL, false },
                { "file", AE_IFREG, 0644, "again", false },
        };
        static const struct fake_entry wh_over_created[] = {
                { "dir/y", AE_IFREG, 0644, "y", false },
                { ".wh.dir", AE_IFREG, 0644, NULL, false },
        };
        static const struct fake_entry under_whiteout[] = {
                { ".wh.dir", AE_IFREG, 0644, NULL, false },
                { "dir/y", AE_IFREG, 0644, "y", false },
        };
        static const struct fake_entry under_symlink[] = { { "todir/sentinel", AE_IFREG, 0644,
                                                             "pwned", false } };
        static const struct fake_entry new_under_symlink[] = { { "todir/new", AE_IFREG, 0644,
                                                                 "pwned", false } };
        static const struct fake_entry dir_under_symlink[] = { { "todir/sub", AE_IFDIR, 0755, NULL,
                                                                 false } };
        static const struct fake_entry wh_through_symlink[] = { { "todir/.wh.sentinel", AE_IFREG,
                                                                  0644, NULL, false } };
        static const struct fake_entry hl_through_symlink[] = { { "h", AE_IFREG, 0644,
                                                                  "todir/sentinel", true } };
        static const struct fake_entry hl_to_symlink[] = { { "h", AE_IFREG, 0644, "tofile",
                                                             true } };
        static const struct fake_entry hl_dotdot[] = { { "h", AE_IFREG, 0644,
                                                         "../outside/sentinel", true } };
        static const struct fake_entry dotdot[] = { { "dir/../../outside/sentinel", AE_IFREG, 0644,
                                                      "pwned", false } };
        const struct fake_entry absolute[] = { { abs_entry, AE_IFREG, 0644, "pwned", false } };
        const struct fake_entry hl_absolute[] = { { "h", AE_IFREG, 0644, abs_entry, true } };
        static const struct fake_entry dup[] = {
                { "file", AE_IFREG, 0644, "one", false },
                { "file", AE_IFREG, 0644, "two", false },
        };
        static const struct fake_entry fill_then_replace[] = {
                { "dir/z", AE_IFREG, 0644, "z", false },
                { "dir", AE_IFREG, 0644, "file now", false },
        };
        static const struct fake_entry suid[] = { { "file", AE_IFREG, 04755, "x", false } };
        const struct {
                const char *name;
                const struct fake_entry *e;
                size_t n;
                const char *needle;
        } cases[] = {
                { ".wh..", wh_dotdot, ELEMENTSOF(wh_dotdot), "\"..\"" },
                { ".wh. at the root", wh_dot, ELEMENTSOF(wh_dot), "\".\"" },
                { ".wh.", wh_empty, ELEMENTSOF(wh_empty), "empty name" },
                { "opaque", wh_opq, ELEMENTSOF(wh_opq), "opaque" },
                { "whiteout of nothing", wh_missing, ELEMENTSOF(wh_missing), "not there" },
                { "whiteout with data", wh_nonempty, ELEMENTSOF(wh_nonempty), "not an empty" },
                { "whiteout after create", wh_after_create, ELEMENTSOF(wh_after_create),
                  "also creates" },
                { "whiteout before create", wh_before_create, ELEMENTSOF(wh_before_create),
                  "whiteout of this layer removes" },
                { "whiteout over created", wh_over_created, ELEMENTSOF(wh_over_created),
                  "also creates" },
                { "entry under whiteout", under_whiteout, ELEMENTSOF(under_whiteout),
                  "whiteout of this layer removes" },
                { "entry under symlink", under_symlink, ELEMENTSOF(under_symlink), "symlink" },
                { "new entry under symlink", new_under_symlink, ELEMENTSOF(new_under_symlink),
                  "symlink" },
                { "dir under symlink", dir_under_symlink, ELEMENTSOF(dir_under_symlink),
                  "symlink" },
                { "whiteout through symlink", wh_through_symlink, ELEMENTSOF(wh_through_symlink),
                  "symlink" },
                { "hard link through symlink", hl_through_symlink, ELEMENTSOF(hl_through_symlink),
                  "hard link" },
                { "hard link to a symlink", hl_to_symlink, ELEMENTSOF(hl_to_symlink),
                  "hard link" },
                { "hard link ..", hl_dotdot, ELEMENTSOF(hl_dotdot), "hard link" },
                { "hard link absolute", hl_absolute, ELEMENTSOF(hl_absolute), "hard link" },
                { "..", dotdot, ELEMENTSOF(dotdot), "unsafe path" },
                { "absolute", absolute, ELEMENTSOF(absolute), "unsafe path" },
                { "duplicate", dup, ELEMENTSOF(dup), "duplicate" },
                { "replace a dir it filled", fill_then_replace, ELEMENTSOF(fill_then_replace),
                  "fills" },
                { "setuid", suid, ELEMENTSOF(suid), "setuid" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *t = join(d, "t");
                fs_rm_rf(t);
                fs_rm_rf(out);
                mkd(d, "outside", 0755);
                put(d, "outside/sentinel", "precious", 0644);
                mkd(d, "t", 0755);
                mkd(t, "dir", 0755);
                put(t, "dir/x", "x", 0644);
                put(t, "file", "file", 0644);
                lnk(t, "todir", out);
                lnk(t, "tofile", sentinel);
                struct bc_error err = BC_ERROR_INIT;
                int rc = apply(d, t, cases[i].e, cases[i].n, &err);
                if (rc >= 0 || err.code != BC_BAD_ARCHIVE ||
                    !strstr(bc_error_message(&err), cases[i].needle))
                        fail_msg("%s: rc=%d %s: %s", cases[i].name, rc, bc_code_name(err.code),
                                 bc_error_message(&err));
                if (strcmp(get(d, "outside/sentinel"), "precious") != 0 ||
                    mode_of(d, "outside/sentinel") != (S_IFREG | 0644) ||
                    mode_of(d, "outside/new") || mode_of(d, "outside/sub"))
                        fail_msg("%s: outside changed", cases[i].name);
                bc_error_clear(&err);
        }
        fs_rm_rf(d);
}

/* What may look hostile but is not: an entry or a whiteout naming a
 * symlink replaces or removes the symlink itself, never its target. */
static void test_symlink_replaced_not_followed(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *out = join(d, "outside");
        _cleanup_free_ char *sentinel = join(d, "outside/sentinel");
        _cleanup_free_ char *t = join(d, "t");
        mkd(d, "outside", 0755);
        put(d, "outside/sentinel", "precious", 0644);
        mkd(d, "t", 0755);
        lnk(t, "todir", out);
        lnk(t, "tofile", sentinel);
        lnk(t, "gone", sentinel);
        static const struct fake_entry layer[] = {
                { ".wh.gone", AE_IFREG, 0644, NULL, false },
                { "todir", AE_IFDIR, 0755, NULL, false },
                { "todir/sentinel", AE_IFREG, 0644, "mine", false },
                { "tofile", AE_IFREG, 0644, "mine", false },
        };
        apply_ok(d, t, layer, ELEMENTSOF(layer));
        assert_string_equal(get(d, "outside/sentinel"), "precious");
        assert_int_equal(mode_of(d, "outside/sentinel"), S_IFREG | 0644);
        assert_int_equal(mode_of(t, "todir"), S_IFDIR | 0755);
        assert_string_equal(get(t, "todir/sentinel"), "mine");
        assert_string_equal(get(t, "tofile"), "mine");
        assert_int_equal(mode_of(t, "gone"), 0);
        fs_rm_rf(d);
}

static void test_stack_id(void **state)
{
        (void)state;
        const char *a = "0000000000000000000000000000000000000000000000000000000000000001";
        const char *b = "00000000000000000000000000000000000000000000000000000000000000ff";
        const char *one[] = { a };
        const char *two[] = { a, b };
        const char *rev[] = { b, a };
        char id[STORAGE_SHA256_HEX_LEN + 1], id2[STORAGE_SHA256_HEX_LEN + 1];
        storage_stack_id(one, 1, id);
        assert_string_equal(id, a);
        storage_stack_id(two, 2, id);
        char text[512];
        int len = snprintf(text, sizeof(text), "boxcar-stack 1\n%s\n%s\n", a, b);
        unsigned char md[SHA256_DIGEST_LENGTH];
        SHA256((const unsigned char *)text, (size_t)len, md);
        char want[STORAGE_SHA256_HEX_LEN + 1];
        for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
                snprintf(want + 2 * i, 3, "%02x", md[i]);
        assert_string_equal(id, want);
        storage_stack_id(rev, 2, id2);
        assert_string_not_equal(id, id2);
}

/* A clone shares every file (hard links), makes its own directories with
 * the same modes and its own symlinks; stats count a linked inode once. */
static void test_clone_and_stats(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *s = join(d, "s");
        _cleanup_free_ char *c = join(d, "c");
        mkd(d, "s", 0755);
        mkd(s, "sub", 0750);
        put(s, "sub/f", "12345", 0444);
        _cleanup_free_ char *f = join(s, "sub/f");
        _cleanup_free_ char *f2 = join(s, "f2");
        assert_int_equal(link(f, f2), 0);
        put(s, "g", "abc", 0640);
        lnk(s, "l", "sub/f");
        assert_int_equal(mkdir(c, 0700), 0);
        assert_int_equal(fs_clone_tree(s, c, geteuid(), getegid()), 0);
        _cleanup_free_ char *cf = join(c, "sub/f");
        struct stat a, b;
        assert_int_equal(stat(f, &a), 0);
        assert_int_equal(stat(cf, &b), 0);
        assert_int_equal(a.st_ino, b.st_ino);
        assert_int_equal(mode_of(c, "sub"), S_IFDIR | 0750);
        assert_int_equal(mode_of(c, "l"), S_IFLNK | 0777);
        assert_int_equal(mode_of(d, "c"), S_IFDIR | 0755);
        int fd = open(c, O_RDONLY | O_DIRECTORY);
        uint64_t bytes = 0, entries = 0;
        assert_int_equal(fs_tree_stats(fd, &bytes, &entries), 0);
        close(fd);
        assert_int_equal(bytes, 8);   /* f and f2 once, g */
        assert_int_equal(entries, 5); /* sub, sub/f, f2, g, l */
        fs_rm_rf(d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_replace_semantics),
                cmocka_unit_test(test_dir_modes),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_symlink_replaced_not_followed),
                cmocka_unit_test(test_stack_id),
                cmocka_unit_test(test_clone_and_stats),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
