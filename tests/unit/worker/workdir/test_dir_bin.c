/* Unit tests for worker/workdir/dir_bin.c: a finished job's directory is kept
 * only when it can be put back exactly as a new one is made (lock file,
 * empty workspace, fs and meta), never through a mount or a symlink, with
 * its lock held all along; anything else is left for the usual removal. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/io.h"
#include "sandbox/sandbox.h"
#include "worker/workdir/dir_bin.h"

static char work[64];
static char jobs[96];

static int setup(void **state)
{
        (void)state;
        snprintf(work, sizeof(work), "/tmp/test-dir-bin-XXXXXX");
        if (!mkdtemp(work))
                return -1;
        snprintf(jobs, sizeof(jobs), "%s/jobs", work);
        return mkdir(jobs, 0700);
}

static int teardown(void **state)
{
        (void)state;
        sandbox_workspace_remove_tree(work);
        return 0;
}

static void path_of(char *buf, size_t n, const char *name, const char *leaf)
{
        snprintf(buf, n, "%s/%s%s", jobs, name, leaf);
}

static void put_file(const char *dir, const char *leaf, const char *text)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, leaf);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A job directory as job_dir_make and a job leave it: lock held, a used
 * workspace and meta, and something else besides.  Returns the lock. */
static int make_used(const char *name)
{
        char dir[256], p[512];
        path_of(dir, sizeof(dir), name, "");
        assert_int_equal(mkdir(dir, 0700), 0);
        snprintf(p, sizeof(p), "%s/lock", dir);
        int lock = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(lock >= 0);
        assert_int_equal(flock(lock, LOCK_EX), 0);
        snprintf(p, sizeof(p), "%s/workspace", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        put_file(p, "out.txt", "the last job's output");
        snprintf(p, sizeof(p), "%s/workspace/deep/er", dir);
        assert_int_equal(bc_mkdir_p(p, 0755, &(struct bc_error)BC_ERROR_INIT), 0);
        snprintf(p, sizeof(p), "%s/workspace/deep", dir);
        assert_int_equal(chmod(p, 0), 0);
        snprintf(p, sizeof(p), "%s/meta", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        put_file(p, "script.sh", "echo secret");
        snprintf(p, sizeof(p), "%s/inputs", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        put_file(p, "volume.tar", "tar");
        return lock;
}

static bool exists(const char *dir, const char *leaf)
{
        char p[512];
        snprintf(p, sizeof(p), "%s%s", dir, leaf);
        struct stat st;
        return lstat(p, &st) == 0;
}

/* Whether dir exists and holds nothing. */
static bool is_empty(const char *dir)
{
        char cmd[1200];
        snprintf(cmd, sizeof(cmd), "test -d '%s' && test -z \"$(ls -A '%s')\"", dir, dir);
        return system(cmd) == 0;
}

/* Whether another open of path's lock can take it (it is not held). */
static bool lock_free(const char *dir)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/lock", dir);
        int fd = open(p, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        bool free_ = flock(fd, LOCK_EX | LOCK_NB) == 0;
        close(fd);
        return free_;
}

static void test_kept_emptied_and_taken_with_its_lock(void **state)
{
        (void)state;
        struct dir_bin *b = dir_bin_new(work, 2);
        assert_non_null(b);
        int lock = make_used("a.1");
        struct stat held;
        assert_int_equal(fstat(lock, &held), 0);
        char a[256], c[256];
        path_of(a, sizeof(a), "a.1", "");
        path_of(c, sizeof(c), "c.1", "");
        assert_true(dir_bin_keep(b, a, lock));
        assert_false(exists(a, ""));
        /* Nothing is taken until asked: the kept one still holds its lock,
         * so the start-up cleanup of another worker passes it by. */
        bc_remove_unlocked_dirs(jobs, sandbox_workspace_remove_tree);
        int got = dir_bin_take(b, c);
        assert_int_equal(got, lock);
        assert_true(exists(c, "/lock"));
        assert_false(lock_free(c));
        struct stat st;
        assert_int_equal(stat(c, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700 & ~(mode_t)022);
        assert_false(exists(a, ""));
        char ws[300], meta[300];
        snprintf(ws, sizeof(ws), "%s/workspace", c);
        snprintf(meta, sizeof(meta), "%s/meta", c);
        assert_true(is_empty(ws));
        /* meta holds a new progress FIFO, never opened, and nothing else. */
        char fifo[320];
        snprintf(fifo, sizeof(fifo), "%s/progress", meta);
        assert_int_equal(lstat(fifo, &st), 0);
        assert_true(S_ISFIFO(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(unlink(fifo), 0);
        assert_true(is_empty(meta));
        assert_false(exists(c, "/inputs"));
        assert_int_equal(stat(ws, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0755);
        /* Only one was kept. */
        assert_int_equal(dir_bin_take(b, a), -1);
        close(got);
        dir_bin_free(b);
}

static void test_full_bin_and_foreign_modes_left_to_the_caller(void **state)
{
        (void)state;
        struct dir_bin *b = dir_bin_new(work, 1);
        assert_non_null(b);
        char a[256], c[256], d[256];
        path_of(a, sizeof(a), "a.1", "");
        path_of(c, sizeof(c), "c.1", "");
        path_of(d, sizeof(d), "d.1", "");
        int la = make_used("a.1"), lc = make_used("c.1"), ld = make_used("d.1");
        assert_true(dir_bin_keep(b, a, la));
        assert_false(dir_bin_keep(b, c, lc));         /* full */
        assert_true(exists(c, "/workspace/out.txt")); /* untouched */
        assert_int_equal(dir_bin_take(b, a), la);
        /* The job made its directory someone else's mode: not as made. */
        assert_int_equal(chmod(d, 0755), 0);
        assert_false(dir_bin_keep(b, d, ld));
        /* A workspace whose mode the job changed is removed, not kept. */
        char p[300];
        snprintf(p, sizeof(p), "%s/workspace", c);
        assert_int_equal(chmod(p, 0777), 0);
        assert_true(dir_bin_keep(b, c, lc));
        sandbox_workspace_remove_tree(d);
        close(ld);
        int got = dir_bin_take(b, d);
        assert_int_equal(got, lc);
        assert_false(exists(d, "/workspace"));
        assert_true(exists(d, "/meta"));
        close(got);
        close(la);
        dir_bin_free(b);
}

static void test_symlinks_and_a_replaced_lock(void **state)
{
        (void)state;
        struct dir_bin *b = dir_bin_new(work, 4);
        assert_non_null(b);
        char a[256], c[256], p[300], outside[300];
        path_of(a, sizeof(a), "a.1", "");
        path_of(c, sizeof(c), "c.1", "");
        snprintf(outside, sizeof(outside), "%s/outside", work);
        assert_int_equal(mkdir(outside, 0755), 0);
        put_file(outside, "keep.txt", "not the job's");
        int la = make_used("a.1");
        /* workspace and meta made symlinks to a directory outside. */
        snprintf(p, sizeof(p), "%s/workspace", a);
        sandbox_workspace_remove_tree(p);
        assert_int_equal(symlink(outside, p), 0);
        snprintf(p, sizeof(p), "%s/meta/link", a);
        assert_int_equal(symlink(outside, p), 0);
        assert_true(dir_bin_keep(b, a, la));
        assert_true(exists(outside, "/keep.txt"));
        assert_int_equal(dir_bin_take(b, a), la);
        assert_false(exists(a, "/workspace"));
        assert_true(exists(a, "/lock"));
        /* The lock file replaced by another: the kept one would have no
         * lock held at its path. */
        int lc = make_used("c.1");
        snprintf(p, sizeof(p), "%s/lock", c);
        assert_int_equal(unlink(p), 0);
        put_file(c, "lock", "");
        assert_int_equal(chmod(p, 0600 & ~(mode_t)022), 0);
        assert_false(dir_bin_keep(b, c, lc));
        close(lc);
        close(la);
        dir_bin_free(b);
}

/* A mount left in the directory (a release that failed): never entered,
 * never kept.  In a mount namespace of its own, so that nothing shows
 * outside this test. */
static void test_a_mount_is_never_entered(void **state)
{
        (void)state;
        if (geteuid() != 0)
                skip();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (unshare(CLONE_NEWNS) < 0 ||
                    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
                        _exit(2);
                struct dir_bin *b = dir_bin_new(work, 4);
                char a[256], p[300], src[300];
                path_of(a, sizeof(a), "a.1", "");
                snprintf(src, sizeof(src), "%s/cache", work);
                int la = make_used("a.1");
                if (!b || mkdir(src, 0755) < 0)
                        _exit(3);
                put_file(src, "entry", "a cache entry");
                snprintf(p, sizeof(p), "%s/workspace/vol", a);
                if (mkdir(p, 0755) < 0 || mount(src, p, "none", MS_BIND, NULL) < 0)
                        _exit(4);
                if (dir_bin_keep(b, a, la))
                        _exit(5);
                if (!exists(src, "/entry"))
                        _exit(6);
                /* The same bind at fs (as a workspace mount point). */
                umount2(p, MNT_DETACH);
                snprintf(p, sizeof(p), "%s/fs", a);
                if (mkdir(p, 0700) < 0 || mount(src, p, "none", MS_BIND, NULL) < 0)
                        _exit(7);
                if (dir_bin_keep(b, a, la) || !exists(src, "/entry"))
                        _exit(8);
                umount2(p, MNT_DETACH);
                dir_bin_free(b);
                _exit(0);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_freed_and_leftovers_removed(void **state)
{
        (void)state;
        struct dir_bin *b = dir_bin_new(work, 4);
        assert_non_null(b);
        char a[256];
        path_of(a, sizeof(a), "a.1", "");
        int la = make_used("a.1");
        assert_true(dir_bin_keep(b, a, la));
        assert_false(is_empty(jobs));
        dir_bin_free(b);
        assert_true(is_empty(jobs));
        /* A killed worker's kept directory: its lock is no longer held, and
         * the next start removes it like any leftover. */
        b = dir_bin_new(work, 4);
        int lc = make_used("c.1");
        char c[256];
        path_of(c, sizeof(c), "c.1", "");
        assert_true(dir_bin_keep(b, c, lc));
        close(lc);
        bc_remove_unlocked_dirs(jobs, sandbox_workspace_remove_tree);
        assert_true(is_empty(jobs));
        assert_int_equal(dir_bin_take(b, c), -1);
        assert_null(dir_bin_new(work, 0));
        dir_bin_free(b);
}

int main(void)
{
        umask(022);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_kept_emptied_and_taken_with_its_lock, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_full_bin_and_foreign_modes_left_to_the_caller,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlinks_and_a_replaced_lock, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_a_mount_is_never_entered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_freed_and_leftovers_removed, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
