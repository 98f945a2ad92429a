/* Unit tests for tree manifests (storage/tree.c, tree_s3.c): the exact
 * bytes of a small known tree, parse round trips, hostile manifests
 * refused, a tree that survives packing and extraction with the same id,
 * sparse files' maps, and the manifest file on disk. */
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

#include <openssl/evp.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/rmtree.h"
#include "storage/storage.h"

static char *scratch(void)
{
        char tmpl[] = "/tmp/test_storage_tree.XXXXXX";
        char *d = mkdtemp(tmpl);
        assert_non_null(d);
        return strdup(d);
}

static char *path_join(const char *a, const char *b)
{
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", a, b) > 0);
        return p;
}

static void write_file(const char *dir, const char *name, const char *data, mode_t mode)
{
        _cleanup_free_ char *p = path_join(dir, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

static void make_dir(const char *dir, const char *name, mode_t mode)
{
        _cleanup_free_ char *p = path_join(dir, name);
        assert_int_equal(mkdir(p, 0700), 0);
        assert_int_equal(chmod(p, mode), 0);
}

/* dir's tree (its layer, a whole tarball, to out or nowhere). */
static struct storage_tree *tree_of(const char *dir, const char *out)
{
        int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        struct storage_layer_args a = { .dir = dir };
        struct storage_layer_result res;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_layer_build(&a, fd, &res, &err) < 0)
                fail_msg("layer build %s: %s", dir, bc_error_message(&err));
        close(fd);
        assert_true(res.whole);
        return res.tree;
}

static void sha_hex(const void *buf, size_t len, char out[65])
{
        unsigned char md[32];
        EVP_Digest(buf, len, md, NULL, EVP_sha256(), NULL);
        for (int i = 0; i < 32; i++)
                snprintf(out + 2 * i, 3, "%02x", md[i]);
}

#define HELLO_SHA "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* The canonical bytes of a small tree, record by record. */
static void test_canonical_bytes(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        write_file(d, "a", "hello\n", 04644); /* setuid is not kept */
        make_dir(d, "d", 0750);
        write_file(d, "d/empty", "", 0600);
        _cleanup_free_ char *a = path_join(d, "a");
        _cleanup_free_ char *l = path_join(d, "d/l");
        _cleanup_free_ char *s = path_join(d, "d/x y");
        assert_int_equal(link(a, l), 0);
        assert_int_equal(symlink("t a r", s), 0);
        _cleanup_free_ char *fifo = path_join(d, "fifo");
        assert_int_equal(mkfifo(fifo, 0644), 0);

        struct storage_tree *t = tree_of(d, NULL);
        static const char want[] = "boxcar-tree 1\n"
                                   "a\0f 0644 6 " HELLO_SHA " -\0"
                                   "d\0d 0750\0"
                                   "d/empty\0f 0600 0 " EMPTY_SHA " -\0"
                                   "d/l\0h a\0"
                                   "d/x y\0l t a r\0";
        const void *buf;
        size_t len;
        storage_tree_bytes(t, &buf, &len);
        assert_int_equal(len, sizeof(want) - 1);
        assert_memory_equal(buf, want, len);
        char id[65];
        sha_hex(want, sizeof(want) - 1, id);
        assert_string_equal(storage_tree_id(t), id);
        uint64_t entries, files, data;
        storage_tree_stats(t, &entries, &files, &data);
        assert_int_equal(entries, 5);
        assert_int_equal(files, 4);
        assert_int_equal(data, 6);

        /* Parsed back: the same id, bytes and stats. */
        struct storage_tree *p = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_tree_parse(want, sizeof(want) - 1, id, &p, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        assert_string_equal(storage_tree_id(p), id);
        const void *pbuf;
        size_t plen;
        storage_tree_bytes(p, &pbuf, &plen);
        assert_int_equal(plen, len);
        assert_memory_equal(pbuf, want, len);
        storage_tree_stats(p, &entries, &files, &data);
        assert_int_equal(entries, 5);
        assert_int_equal(files, 4);
        assert_int_equal(data, 6);
        storage_tree_free(p);

        /* The empty tree is the header alone. */
        assert_int_equal(storage_tree_parse("boxcar-tree 1\n", 14, NULL, &p, &err), 0);
        storage_tree_stats(p, &entries, NULL, NULL);
        assert_int_equal(entries, 0);
        storage_tree_free(p);
        storage_tree_free(t);
        fs_rm_rf(d);
}

#define R(path, attrs) path "\0" attrs "\0"
#define F(perm, size, map) "f " perm " " size " " HELLO_SHA " " map

static void test_hostile(void **state)
{
        (void)state;
        static const struct {
                const char *name;
                const char *bytes;
                size_t len; /* 0: sizeof - 1 */
                const char *why;
        } cases[] = {
#define C(name, bytes, why) { name, bytes, sizeof(bytes) - 1, why }
                C("bad header", "boxcar-tree 2\n" R("a", "d 0755"), "bad header"),
                C("no header", "", "bad header"),
                C("unsorted", "boxcar-tree 1\n" R("b", "d 0755") R("a", "d 0755"), "out of order"),
                C("duplicate", "boxcar-tree 1\n" R("a", "d 0755") R("a", "d 0755"),
                  "out of order or duplicated"),
                C("dotdot", "boxcar-tree 1\n" R("..", "d 0755"), "unsafe"),
                C("dotdot inside", "boxcar-tree 1\n" R("a", "d 0755") R("a/../b", "d 0755"),
                  "unsafe"),
                C("absolute", "boxcar-tree 1\n" R("/etc", "d 0755"), "unsafe"),
                C("unnormalized", "boxcar-tree 1\n" R("a", "d 0755") R("a//b", "d 0755"),
                  "unsafe"),
                C("dot", "boxcar-tree 1\n" R(".", "d 0755"), "unsafe"),
                C("empty path", "boxcar-tree 1\n" R("", "d 0755"), "unsafe"),
                C("parent missing", "boxcar-tree 1\n" R("a/b", "d 0755"),
                  "parent is not a directory"),
                C("parent a file",
                  "boxcar-tree 1\n" R("a", F("0644", "6", "-")) R("a/b", "d 0755"),
                  "parent is not a directory"),
                C("parent a symlink", "boxcar-tree 1\n" R("a", "l /etc") R("a/b", "d 0755"),
                  "parent is not a directory"),
                C("link to missing", "boxcar-tree 1\n" R("b", "h a"), "hard link to no earlier"),
                C("link to later", "boxcar-tree 1\n" R("a", "h b") R("b", F("0644", "6", "-")),
                  "hard link to no earlier"),
                C("link to link",
                  "boxcar-tree 1\n" R("a", F("0644", "6", "-")) R("b", "h a") R("c", "h b"),
                  "hard link to no earlier"),
                C("link to dir", "boxcar-tree 1\n" R("a", "d 0755") R("b", "h a"),
                  "hard link to no earlier"),
                C("sticky", "boxcar-tree 1\n" R("a", "d 1777"), "bad permissions"),
                C("perm 01777", "boxcar-tree 1\n" R("a", F("1777", "6", "-")), "bad permissions"),
                C("perm 3 digits", "boxcar-tree 1\n" R("a", "d 755"), "bad permissions"),
                C("perm 8", "boxcar-tree 1\n" R("a", "d 0758"), "bad permissions"),
                C("perm trailing", "boxcar-tree 1\n" R("a", "d 0755 "), "bad permissions"),
                C("truncated attrs", "boxcar-tree 1\n" R("a", "d 0755") "b\0d 07", "truncated"),
                C("truncated path", "boxcar-tree 1\n" R("a", "d 0755") "b", "truncated"),
                C("unknown kind", "boxcar-tree 1\n" R("a", "x 0755"), "unknown kind"),
                C("no space", "boxcar-tree 1\n" R("a", "d0755"), "bad attributes"),
                C("empty attrs", "boxcar-tree 1\n" R("a", ""), "bad attributes"),
                C("size leading zero", "boxcar-tree 1\n" R("a", F("0644", "06", "-")), "bad size"),
                C("size sign", "boxcar-tree 1\n" R("a", F("0644", "+6", "-")), "bad size"),
                C("size overflow",
                  "boxcar-tree 1\n" R("a", F("0644", "99999999999999999999", "-")), "bad size"),
                C("sha upper",
                  "boxcar-tree 1\n" R(
                          "a",
                          "f 0644 6 "
                          "5891B5B522D5DF086D0FF0B110FBD9D21BB4FC7163AF34D08286A2E846F6BE03 -"),
                  "bad sha256"),
                C("sha short", "boxcar-tree 1\n" R("a", "f 0644 6 abc -"), "bad sha256"),
                C("map missing", "boxcar-tree 1\n" R("a", "f 0644 6 " HELLO_SHA), "bad sha256"),
                C("map empty", "boxcar-tree 1\n" R("a", F("0644", "6", "")), "bad map"),
                C("map unaligned", "boxcar-tree 1\n" R("a", F("0644", "10000", "1+4096")),
                  "bad map"),
                C("map whole", "boxcar-tree 1\n" R("a", F("0644", "8192", "0+8192")), "bad map"),
                C("map past end", "boxcar-tree 1\n" R("a", F("0644", "8192", "4096+8192")),
                  "bad map"),
                C("map touching", "boxcar-tree 1\n" R("a", F("0644", "20000", "0+4096,4096+4096")),
                  "bad map"),
                C("map unsorted", "boxcar-tree 1\n" R("a", F("0644", "20000", "8192+4096,0+4096")),
                  "bad map"),
                C("map zero length", "boxcar-tree 1\n" R("a", F("0644", "20000", "8192+0")),
                  "bad map"),
                C("map trailing comma", "boxcar-tree 1\n" R("a", F("0644", "20000", "8192+4096,")),
                  "bad map"),
                C("all hole of nothing", "boxcar-tree 1\n" R("a", F("0644", "0", "0+0")),
                  "bad map"),
                C("empty symlink", "boxcar-tree 1\n" R("a", "l "), "bad symlink target"),
#undef C
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct storage_tree *t = NULL;
                struct bc_error err = BC_ERROR_INIT;
                if (storage_tree_parse(cases[i].bytes, cases[i].len, NULL, &t, &err) == 0)
                        fail_msg("%s: accepted", cases[i].name);
                if (err.code != BC_BAD_ARCHIVE || !strstr(bc_error_message(&err), cases[i].why))
                        fail_msg("%s: code %d, %s", cases[i].name, err.code,
                                 bc_error_message(&err));
                bc_error_clear(&err);
        }

        /* What is well-formed passes, and an id that is not its is refused. */
        static const char ok[] = "boxcar-tree 1\n" R(
                "a", F("0644", "20000", "8192+4096,16384+3616")) R("a b", F("0000", "100", "0+0"))
                R("a c", "h a") R("d", "d 0000") R("d/\n\xff", "l ../x y");
        struct storage_tree *t = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_tree_parse(ok, sizeof(ok) - 1, NULL, &t, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        uint64_t entries, files, data;
        storage_tree_stats(t, &entries, &files, &data);
        assert_int_equal(entries, 5);
        assert_int_equal(files, 4);
        assert_int_equal(data, 4096 + 3616);
        char other[65];
        memset(other, 'a', 64);
        other[64] = '\0';
        struct storage_tree *u = NULL;
        assert_true(storage_tree_parse(ok, sizeof(ok) - 1, other, &u, &err) < 0);
        assert_int_equal(err.code, BC_BAD_ARCHIVE);
        assert_non_null(strstr(bc_error_message(&err), "expected"));
        bc_error_clear(&err);
        assert_int_equal(storage_tree_parse(ok, sizeof(ok) - 1, storage_tree_id(t), &u, &err), 0);
        storage_tree_free(u);
        storage_tree_free(t);
}

/* A tree with everything packing keeps, packed and extracted elsewhere,
 * has the same manifest; the whole layer is storage_pack_dir's tarball. */
static void test_pack_extract_same_tree(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *src = path_join(d, "src");
        _cleanup_free_ char *dst = path_join(d, "dst");
        _cleanup_free_ char *out = path_join(d, "layer.tgz");
        assert_int_equal(mkdir(src, 0755), 0);
        make_dir(src, "empty", 0700);
        make_dir(src, "ro", 0555);
        make_dir(src, "odd", 0751);
        write_file(src, "odd/none", "no permissions\n", 0);
        write_file(src, "odd/sticky", "x", 01755);
        write_file(src, "with space", "s\n", 0644);
        write_file(src, "new\nline", "n\n", 0644);
        write_file(src, "bin\xff\xfe", "b\n", 0644);
        write_file(src, "first", "shared\n", 0640);
        _cleanup_free_ char *first = path_join(src, "first");
        _cleanup_free_ char *l1 = path_join(src, "odd/link");
        _cleanup_free_ char *l2 = path_join(src, "zz");
        assert_int_equal(link(first, l1), 0);
        assert_int_equal(link(first, l2), 0);
        _cleanup_free_ char *sl = path_join(src, "odd/sym link");
        assert_int_equal(symlink("../no where\n", sl), 0);
        _cleanup_free_ char *sp = path_join(src, "sparse");
        int fd = open(sp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, "data", 4, 5000000), 4);
        assert_int_equal(pwrite(fd, "more", 4, 9000000), 4);
        assert_int_equal(ftruncate(fd, 10 << 20), 0);
        close(fd);
        _cleanup_free_ char *hole = path_join(src, "hole");
        fd = open(hole, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 1 << 20), 0);
        close(fd);

        struct storage_tree *t1 = tree_of(src, out);
        struct storage_pack_result p;
        fd = open("/dev/null", O_WRONLY);
        assert_int_equal(storage_pack_dir(src, fd, NULL, &p, NULL), 0);
        close(fd);
        struct storage_fetch_result r;
        struct bc_error err = BC_ERROR_INIT;
        if (storage_extract_file(out, p.sha256, dst, NULL, &r, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        struct storage_tree *t2 = tree_of(dst, NULL);
        const void *b1, *b2;
        size_t n1, n2;
        storage_tree_bytes(t1, &b1, &n1);
        storage_tree_bytes(t2, &b2, &n2);
        assert_int_equal(n1, n2);
        assert_memory_equal(b1, b2, n1);
        assert_string_equal(storage_tree_id(t1), storage_tree_id(t2));

        /* The sparse file's map and hash: its 4 KiB blocks of data only. */
        char block[4096] = { 0 };
        memcpy(block + (5000000 % 4096), "data", 4);
        char region[8192] = { 0 };
        memcpy(region, block, 4096);
        memcpy(region + 4096 + (9000000 % 4096), "more", 4);
        char sha[65];
        sha_hex(region, sizeof(region), sha);
        char want[256];
        snprintf(want, sizeof(want), "sparse%cf 0644 10485760 %s %d+4096,%d+4096%c", 0, sha,
                 5000000 / 4096 * 4096, 9000000 / 4096 * 4096, 0);
        size_t wl = strlen(want) + 1 + strlen(want + 7) + 1;
        assert_non_null(memmem(b1, n1, want, wl));
        snprintf(want, sizeof(want), "hole%cf 0644 1048576 " EMPTY_SHA " 0+0%c", 0, 0);
        wl = strlen(want) + 1 + strlen(want + 5) + 1;
        assert_non_null(memmem(b1, n1, want, wl));
        static const char links[] = "odd/link\0h first\0";
        assert_non_null(memmem(b1, n1, links, sizeof(links) - 1));
        static const char zz[] = "zz\0h first\0";
        assert_non_null(memmem(b1, n1, zz, sizeof(zz) - 1));
        static const char sticky[] = "odd/sticky\0f 0755 ";
        assert_non_null(memmem(b1, n1, sticky, sizeof(sticky) - 1));
        storage_tree_free(t1);
        storage_tree_free(t2);
        fs_rm_rf(d);
}

static void test_save_load_key(void **state)
{
        (void)state;
        _cleanup_free_ char *d = scratch();
        _cleanup_free_ char *src = path_join(d, "src");
        _cleanup_free_ char *file = path_join(d, "t.tree");
        assert_int_equal(mkdir(src, 0755), 0);
        write_file(src, "a", "hello\n", 0644);
        struct storage_tree *t = tree_of(src, NULL);
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(storage_tree_save(t, file, &err), 0);
        struct storage_tree *u = NULL;
        if (storage_tree_load(file, storage_tree_id(t), &u, &err) < 0)
                fail_msg("%s", bc_error_message(&err));
        assert_string_equal(storage_tree_id(u), storage_tree_id(t));
        storage_tree_free(u);

        /* A byte changed: refused, not believed. */
        int fd = open(file, O_WRONLY);
        assert_int_equal(pwrite(fd, "b", 1, 14), 1);
        close(fd);
        assert_true(storage_tree_load(file, storage_tree_id(t), &u, &err) < 0);
        assert_int_equal(err.code, BC_BAD_ARCHIVE);
        bc_error_clear(&err);
        _cleanup_free_ char *missing = path_join(d, "missing.tree");
        assert_true(storage_tree_load(missing, NULL, &u, &err) < 0);
        assert_int_equal(err.code, BC_NOT_FOUND);
        bc_error_clear(&err);

        struct storage_config cfg = { .prefix = "pre/fix" };
        _cleanup_free_ char *key = NULL;
        assert_int_equal(storage_tree_key(&cfg, storage_tree_id(t), &key, &err), 0);
        char want[128];
        snprintf(want, sizeof(want), "pre/fix/trees/%.2s/%s.tree.gz", storage_tree_id(t),
                 storage_tree_id(t));
        assert_string_equal(key, want);
        cfg.prefix = "";
        _cleanup_free_ char *key2 = NULL;
        assert_int_equal(storage_tree_key(&cfg, storage_tree_id(t), &key2, &err), 0);
        assert_string_equal(key2, want + 8);
        char *bad = NULL;
        assert_true(storage_tree_key(&cfg, "ABC", &bad, &err) < 0);
        assert_int_equal(err.code, BC_USAGE);
        bc_error_clear(&err);
        storage_tree_free(t);
        fs_rm_rf(d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_canonical_bytes),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_pack_extract_same_tree),
                cmocka_unit_test(test_save_load_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
