/* Unit tests for worker/workdir/disk_budget.c on the real filesystem of a
 * temporary work dir: the reserve is set to leave ROOM bytes for jobs, so
 * the figures do not depend on how full the disk is.  As root the work dir
 * is a tmpfs of its own, so that nothing else writing to the host's disk
 * meanwhile (other suites, other checkouts) moves its free space between
 * the reserve's reading and a take: that made "waits" read "never fits". */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "worker/workdir/disk_budget.h"

#define MIB (UINT64_C(1) << 20)
#define ROOM (64 * MIB)

static char work[] = "/var/tmp/boxcar-disk-budget-XXXXXX";
static char image[256];
static int waits;
static char last_why[512];
static _Atomic int not_stopped;

static pthread_mutex_t why_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_wait(void *ctx, const char *why)
{
        (void)ctx;
        pthread_mutex_lock(&why_lock);
        waits++;
        snprintf(last_why, sizeof(last_why), "%s", why);
        pthread_mutex_unlock(&why_lock);
}

/* The reserve that leaves ROOM of the free space to jobs right now. */
static uint64_t reserve_for_room(void)
{
        struct statvfs sv;
        assert_int_equal(statvfs(work, &sv), 0);
        uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
        assert_true(avail > 2 * ROOM);
        return avail - ROOM;
}

static struct disk_budget *open_budget(uint64_t reserve)
{
        struct disk_budget *b = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(disk_budget_open(&b, work, reserve, -1, &err), 0);
        return b;
}

static int take(struct disk_budget *b, uint64_t image_bytes, uint64_t extra, unsigned wait_ms,
                struct disk_grant **g, struct bc_error *err)
{
        struct disk_ask ask = { .image = image, .image_bytes = image_bytes, .extra_bytes = extra };
        return disk_budget_take(b, &ask, -1, &not_stopped, wait_ms, on_wait, NULL, g, err);
}

static int setup(void **state)
{
        (void)state;
        assert_non_null(mkdtemp(work));
        /* Unprivileged: the host disk's directory, as before.  The tmpfs
         * has other files on it, as a disk has: what no job could use even
         * with none running is then more than the room left to jobs. */
        if (mount("boxcar-disk-budget", work, "tmpfs", MS_NOSUID | MS_NODEV,
                  "size=1g,mode=0700") == 0) {
                char other[300];
                snprintf(other, sizeof(other), "%s/others", work);
                int fd = open(other, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                assert_int_equal(posix_fallocate(fd, 0, (off_t)(384 * MIB)), 0);
                close(fd);
        } else {
                assert_true(errno == EPERM || errno == EACCES);
        }
        snprintf(image, sizeof(image), "%s/ws.img", work);
        waits = 0;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        umount2(work, MNT_DETACH); /* fails harmlessly when not mounted */
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
        assert_int_equal(system(cmd), 0);
        memcpy(work + strlen(work) - 6, "XXXXXX", 6);
        return 0;
}

static void test_fits_then_waits_then_fits(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g1 = NULL, *g2 = NULL;
        uint64_t room, avail, reserve;
        assert_int_equal(disk_budget_room(b, &room, &avail, &reserve), 0);
        assert_true(room > ROOM - 16 * MIB && room < ROOM + 16 * MIB && avail - reserve == room);
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g1, &err), 0);
        assert_non_null(g1);
        assert_int_equal(waits, 0);
        assert_int_equal(disk_budget_room(b, &room, &avail, &reserve), 0);
        assert_true(room > ROOM - 56 * MIB && room < ROOM - 24 * MIB);
        /* 40 more do not fit beside what the first may still write. */
        assert_int_equal(take(b, 40 * MIB, 0, 150, &g2, &err), -EAGAIN);
        assert_null(g2);
        assert_int_equal(waits, 1);
        assert_non_null(strstr(last_why, "running jobs may still write 40 MiB"));
        /* Control: smaller asks still fit. */
        assert_int_equal(take(b, 16 * MIB, 0, 0, &g2, &err), 0);
        disk_budget_give_back(b, g2);
        disk_budget_give_back(b, g1);
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g2, &err), 0);
        disk_budget_give_back(b, g2);
        disk_budget_close(b);
}

/* An artifact job's packed tree counts beside its image. */
static void test_extra_counts(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL;
        assert_int_equal(take(b, 30 * MIB, 30 * MIB, 0, &g, &err), 0);
        assert_int_equal(take(b, 8 * MIB, 0, 100, &(struct disk_grant *){ NULL }, &err), -EAGAIN);
        disk_budget_give_back(b, g);
        /* Added once known (an overlay's base), the same. */
        assert_int_equal(take(b, 30 * MIB, 0, 0, &g, &err), 0);
        struct disk_grant *g2 = NULL;
        assert_int_equal(take(b, 8 * MIB, 0, 0, &g2, &err), 0);
        disk_budget_give_back(b, g2);
        disk_budget_add(b, g, 30 * MIB);
        assert_int_equal(take(b, 8 * MIB, 0, 100, &g2, &err), -EAGAIN);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

/* More than the filesystem holds above its reserve: at once. */
static void test_never_fits(void **state)
{
        (void)state;
        struct statvfs sv;
        assert_int_equal(statvfs(work, &sv), 0);
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL;
        assert_int_equal(take(b, (uint64_t)sv.f_blocks * sv.f_frsize, 0, 5000, &g, &err), -ENOSPC);
        assert_null(g);
        assert_int_equal(waits, 0);
        assert_int_equal(err.code, BC_SANDBOX_SETUP);
        assert_non_null(strstr(bc_error_message(&err), "is on a filesystem of"));
        assert_non_null(strstr(bc_error_message(&err), "MiB of which --disk-reserve keeps free"));
        bc_error_clear(&err);
        disk_budget_close(b);
}

/* More than the free space above the reserve, even with no job running:
 * it fails once the wait (or the grace for disk on its way back) is over. */
static void test_no_room(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL;
        assert_int_equal(take(b, 100 * MIB, 0, 300, &g, &err), -ENOSPC);
        assert_null(g);
        assert_int_equal(waits, 1);
        assert_int_equal(err.code, BC_SANDBOX_SETUP);
        assert_non_null(strstr(bc_error_message(&err), "need 100 MiB of disk"));
        assert_non_null(strstr(bc_error_message(&err), "even with none running"));
        assert_non_null(strstr(bc_error_message(&err), "--disk-reserve"));
        bc_error_clear(&err);
        /* Control: what fits is taken. */
        assert_int_equal(take(b, 60 * MIB, 0, 0, &g, &err), 0);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

struct asker {
        struct disk_budget *b;
        uint64_t bytes;
        unsigned wait_ms;
        int r;
};

static void *ask_thread(void *arg)
{
        struct asker *a = arg;
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL;
        a->r = take(a->b, a->bytes, 0, a->wait_ms, &g, &err);
        disk_budget_give_back(a->b, g);
        bc_error_clear(&err);
        return NULL;
}

struct taker {
        struct disk_budget *b;
        struct disk_grant *g;
        int r;
};

static void *take_and_hold(void *arg)
{
        struct taker *t = arg;
        struct bc_error err = BC_ERROR_INIT;
        t->r = take(t->b, 4 * MIB, 0, 1000, &t->g, &err);
        bc_error_clear(&err);
        return NULL;
}

/* Jobs that arrive together with room for all take in turn on the lock:
 * none waits (the bench's 8 slots found 919 of 1000 jobs waiting behind
 * each other when the queue ordered them too). */
static void test_arrivals_together_do_not_wait(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        for (int round = 0; round < 20; round++) {
                struct taker t[8];
                pthread_t th[8];
                for (int i = 0; i < 8; i++) {
                        t[i] = (struct taker){ b, NULL, 1 };
                        assert_int_equal(pthread_create(&th[i], NULL, take_and_hold, &t[i]), 0);
                }
                for (int i = 0; i < 8; i++) {
                        pthread_join(th[i], NULL);
                        assert_int_equal(t[i].r, 0);
                        disk_budget_give_back(b, t[i].g);
                }
        }
        assert_int_equal(waits, 0);
        disk_budget_close(b);
}

/* Waiting is in order of arrival, but a job that has no room even with
 * none running does not hold back the jobs behind it. */
static void test_order_of_arrival(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL, *g2 = NULL;
        struct asker big = { b, 100 * MIB, 1500, 1 };
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, ask_thread, &big), 0);
        nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g, &err), 0);
        /* A job that waits for the running one holds back those after it,
         * even one small enough to fit now. */
        struct asker mid = { b, 40 * MIB, 1000, 1 };
        pthread_t t2;
        assert_int_equal(pthread_create(&t2, NULL, ask_thread, &mid), 0);
        nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
        assert_int_equal(take(b, 8 * MIB, 0, 150, &g2, &err), -EAGAIN);
        assert_non_null(strstr(last_why, "waits behind an earlier job of this worker"));
        disk_budget_give_back(b, g);
        pthread_join(t2, NULL);
        assert_int_equal(mid.r, 0);
        pthread_join(t, NULL);
        assert_int_equal(big.r, -ENOSPC);
        disk_budget_close(b);
}

/* What a running job's image already holds is out of the free space: it
 * is counted as room it gives back, and no longer as what it may write. */
static void test_image_blocks_count_as_held(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL, *g2 = NULL;
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g, &err), 0);
        int fd = open(image, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)(40 * MIB)), 0);
        assert_int_equal(posix_fallocate(fd, 0, (off_t)(30 * MIB)), 0);
        fsync(fd);
        close(fd);
        /* 52 MiB: more than is free above the reserve now (about 34), but
         * within what jobs get once the image's 30 come back: it waits. */
        assert_int_equal(take(b, 52 * MIB, 0, 100, &g2, &err), -EAGAIN);
        assert_int_equal(waits, 1);
        /* The first may still write 10 of its 40. */
        assert_non_null(strstr(last_why, "running jobs may still write 10 MiB"));
        unlink(image);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

static void test_workers_share_a_work_dir(void **state)
{
        (void)state;
        uint64_t reserve = reserve_for_room();
        struct disk_budget *a = open_budget(reserve), *b = open_budget(reserve);
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *ga = NULL, *gb = NULL;
        assert_int_equal(take(a, 40 * MIB, 0, 0, &ga, &err), 0);
        assert_int_equal(take(b, 40 * MIB, 0, 100, &gb, &err), -EAGAIN);
        /* A worker that goes away gives back what its jobs held. */
        disk_budget_close(a);
        assert_int_equal(take(b, 40 * MIB, 0, 0, &gb, &err), 0);
        disk_budget_give_back(b, gb);
        disk_budget_close(b);
}

/* A dead worker's file (nobody holds its lock) is ignored and removed. */
static void test_dead_worker_file_ignored(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        char dead[300];
        snprintf(dead, sizeof(dead), "%s/disk/w.deadbeef", work);
        FILE *f = fopen(dead, "w");
        assert_non_null(f);
        fputs("999999999999999 0\n", f);
        fclose(f);
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL;
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g, &err), 0);
        assert_int_equal(access(dead, F_OK), -1);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

static void test_stop_ends_the_wait(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL, *g2 = NULL;
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g, &err), 0);
        _Atomic int stopped = 1;
        struct disk_ask ask = { .image = image, .image_bytes = 40 * MIB };
        assert_int_equal(disk_budget_take(b, &ask, -1, &stopped, 60000, on_wait, NULL, &g2, &err),
                         -ECANCELED);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

/* The reclaimer stands for the worker's caches: a file it deletes. */
struct reclaimer {
        char path[300];
        uint64_t size, asked;
        unsigned calls;
};

static uint64_t reclaim_file(void *ctx, uint64_t bytes)
{
        struct reclaimer *r = ctx;
        r->calls++;
        r->asked = bytes;
        if (!r->size || unlink(r->path) < 0)
                return 0;
        uint64_t freed = r->size;
        r->size = 0;
        return freed;
}

static void fill(struct reclaimer *r, uint64_t bytes)
{
        snprintf(r->path, sizeof(r->path), "%s/cached", work);
        int fd = open(r->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(posix_fallocate(fd, 0, (off_t)bytes), 0);
        fsync(fd);
        close(fd);
        r->size = bytes;
}

/* A job that does not fit first asks the reclaimer for what it lacks, and
 * starts without waiting when that frees enough. */
static void test_reclaim_before_waiting(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct reclaimer r = { 0 };
        fill(&r, 40 * MIB);
        disk_budget_set_reclaim(b, reclaim_file, &r);
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL;
        assert_int_equal(take(b, 40 * MIB, 0, 5000, &g, &err), 0);
        assert_int_equal(waits, 0);
        assert_int_equal(r.calls, 1);
        /* 40 asked, about 24 free above the reserve with the file there. */
        assert_true(r.asked > 8 * MIB && r.asked < 24 * MIB);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

/* A reclaimer that frees nothing: the job waits as before, and asks again
 * at most once a second. */
static void test_reclaim_nothing_then_wait(void **state)
{
        (void)state;
        struct disk_budget *b = open_budget(reserve_for_room());
        struct reclaimer r = { 0 };
        disk_budget_set_reclaim(b, reclaim_file, &r);
        struct bc_error err = BC_ERROR_INIT;
        struct disk_grant *g = NULL, *g2 = NULL;
        assert_int_equal(take(b, 40 * MIB, 0, 0, &g, &err), 0);
        assert_int_equal(r.calls, 0);
        assert_int_equal(take(b, 40 * MIB, 0, 1500, &g2, &err), -EAGAIN);
        assert_int_equal(waits, 1);
        assert_int_equal(r.calls, 2);
        /* What the running job may still write is part of what it lacks. */
        assert_true(r.asked > 8 * MIB && r.asked < 24 * MIB);
        disk_budget_give_back(b, g);
        disk_budget_close(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_fits_then_waits_then_fits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_extra_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_never_fits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_room, setup, teardown),
                cmocka_unit_test_setup_teardown(test_order_of_arrival, setup, teardown),
                cmocka_unit_test_setup_teardown(test_arrivals_together_do_not_wait, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_image_blocks_count_as_held, setup, teardown),
                cmocka_unit_test_setup_teardown(test_workers_share_a_work_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dead_worker_file_ignored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_ends_the_wait, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reclaim_before_waiting, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reclaim_nothing_then_wait, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
