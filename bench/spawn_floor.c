/* The floors under the queue benchmark's figures: the benchmark's job
 * command alone, spawned without any sandbox or queue.
 *
 *   spawn-floor RUNS COMMAND [ARGS...]          -> "p50_ms=X p99_ms=Y"
 *     how long the command takes from its spawn to the instant it prints
 *     (its own clock, like the job's `date +%s%N`): the floor under
 *     "commit -> inside".  COMMAND must print a CLOCK_REALTIME instant in
 *     nanoseconds first.
 *   spawn-floor --every MS RUNS COMMAND [ARGS...]  -> "p50_ms=X p99_ms=Y"
 *     the same, one run started every MS milliseconds, as the queue
 *     benchmark's latency phase enqueues its jobs: between runs the CPUs
 *     idle and the caches cool, which back-to-back runs never let them
 *     (on a paravirtualised VM, a halted CPU's wake-up alone is tens of
 *     microseconds).
 *   spawn-floor --rate RUNS CONCURRENCY COMMAND [ARGS...]  -> "jobs_s=X"
 *     how many times a second the machine can run the command (found in
 *     PATH), CONCURRENCY at a time, its output thrown away: the ceiling over any queue's
 *     throughput with that job, since every job runs the command once and
 *     nothing here is cheaper than a queue's own spawn.
 *   spawn-floor --rate-namespaced RUNS CONCURRENCY COMMAND [ARGS...]
 *     the same, each run made by a clone into the namespaces a sandboxed
 *     job gets (mount, pid, ipc, uts and network; user when not root),
 *     and nothing else: no mounts, cgroup, seccomp or helper process.  A
 *     bound over any sandbox that gives every job fresh namespaces: the
 *     kernel's cost of making and tearing them down, with none of the
 *     sandbox's own work. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int cmp_long(const void *a, const void *b)
{
        long x = *(const long *)a, y = *(const long *)b;
        return (x > y) - (x < y);
}

static long now_ns(clockid_t clock)
{
        struct timespec t;
        clock_gettime(clock, &t);
        return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* One run: ns from just before the spawn to the instant printed, or -1
 * (said on stderr). */
static long one_run(char **argv)
{
        int p[2];
        if (pipe(p) < 0)
                return -1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addclose(&fa, p[0]);
        long before = now_ns(CLOCK_REALTIME);
        pid_t pid;
        int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (r != 0)
                fprintf(stderr, "spawn-floor: cannot spawn %s: %s\n", argv[0], strerror(r));
        char buf[64] = "";
        ssize_t n = r == 0 ? read(p[0], buf, sizeof(buf) - 1) : -1;
        close(p[0]);
        if (r == 0)
                waitpid(pid, NULL, 0);
        if (n <= 0) {
                if (r == 0)
                        fprintf(stderr, "spawn-floor: %s printed no instant\n", argv[0]);
                return -1;
        }
        buf[n] = '\0';
        return strtol(buf, NULL, 10) - before;
}

/* With every_ms > 0, run i starts at (start + i * every_ms), or at once
 * when the one before ran late. */
static int latency(int runs, int every_ms, char **argv)
{
        long *d = calloc((size_t)runs, sizeof(*d));
        if (!d)
                return 1;
        struct timespec next;
        clock_gettime(CLOCK_MONOTONIC, &next);
        for (int i = 0; i < runs; i++) {
                if (every_ms > 0) {
                        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
                                ;
                        next.tv_nsec += every_ms * 1000000L;
                        next.tv_sec += next.tv_nsec / 1000000000L;
                        next.tv_nsec %= 1000000000L;
                }
                d[i] = one_run(argv);
                if (d[i] < 0) {
                        free(d);
                        return 1;
                }
        }
        qsort(d, (size_t)runs, sizeof(*d), cmp_long);
        printf("p50_ms=%.2f p99_ms=%.2f\n", d[runs / 2] / 1e6, d[runs * 99 / 100] / 1e6);
        free(d);
        return 0;
}

/* One run of --rate: 0 with *pid, or an errno. */
typedef int spawn_fn(pid_t *pid, char **argv, const posix_spawn_file_actions_t *fa);

static int spawn_plain(pid_t *pid, char **argv, const posix_spawn_file_actions_t *fa)
{
        return posix_spawnp(pid, argv[0], fa, NULL, argv, environ);
}

/* The namespaces boxcar-sandbox's clone makes for a job's sandbox
 * (sandbox/supervise-start.c), in one raw clone with fork semantics. */
static int spawn_namespaced(pid_t *pid, char **argv, const posix_spawn_file_actions_t *fa)
{
        (void)fa;
        unsigned long flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                              CLONE_NEWNET | SIGCHLD;
        if (geteuid() != 0)
                flags |= CLONE_NEWUSER;
        long r = syscall(SYS_clone, flags, NULL, NULL, NULL, 0);
        if (r < 0)
                return errno;
        if (r == 0) {
                int null = open("/dev/null", O_WRONLY);
                if (null >= 0 && dup2(null, 1) >= 0)
                        execvp(argv[0], argv);
                fprintf(stderr, "spawn-floor: cannot run %s in new namespaces: %s\n", argv[0],
                        strerror(errno));
                _exit(127);
        }
        *pid = (pid_t)r;
        return 0;
}

/* Every run must exit 0: a command that fails early would make the
 * ceiling look higher than the job's. */
static int rate(int runs, int concurrency, spawn_fn *spawn, char **argv)
{
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        int started = 0, running = 0, failed = 0;
        long t0 = now_ns(CLOCK_MONOTONIC);
        while (started < runs || running > 0) {
                while (running < concurrency && started < runs) {
                        pid_t pid;
                        int r = spawn(&pid, argv, &fa);
                        if (r != 0) {
                                fprintf(stderr, "spawn-floor: cannot spawn %s: %s\n", argv[0],
                                        strerror(r));
                                runs = started;
                                failed = 1;
                                break;
                        }
                        started++;
                        running++;
                }
                if (running == 0)
                        break;
                int status;
                if (wait(&status) < 0)
                        break;
                running--;
                if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && !failed) {
                        fprintf(stderr, "spawn-floor: %s exited non-zero or was killed in a run\n",
                                argv[0]);
                        failed = 1;
                }
        }
        long t1 = now_ns(CLOCK_MONOTONIC);
        posix_spawn_file_actions_destroy(&fa);
        if (failed)
                return 1;
        printf("jobs_s=%.1f\n", runs / ((t1 - t0) / 1e9));
        return 0;
}

int main(int argc, char **argv)
{
        bool namespaced = argc > 4 && strcmp(argv[1], "--rate-namespaced") == 0;
        if (argc > 4 && (namespaced || strcmp(argv[1], "--rate") == 0)) {
                int runs = atoi(argv[2]), concurrency = atoi(argv[3]);
                if (runs >= 1 && runs <= 1000000 && concurrency >= 1 && concurrency <= 1024)
                        return rate(runs, concurrency, namespaced ? spawn_namespaced : spawn_plain,
                                    argv + 4);
        } else if (argc > 4 && strcmp(argv[1], "--every") == 0) {
                int every_ms = atoi(argv[2]), runs = atoi(argv[3]);
                if (every_ms >= 1 && every_ms <= 10000 && runs >= 1 && runs <= 100000)
                        return latency(runs, every_ms, argv + 4);
        } else if (argc > 2) {
                int runs = atoi(argv[1]);
                if (runs >= 1 && runs <= 100000)
                        return latency(runs, 0, argv + 2);
        }
        fprintf(stderr, "usage: spawn-floor RUNS COMMAND [ARGS...]\n"
                        "       spawn-floor --every MS RUNS COMMAND [ARGS...]\n"
                        "       spawn-floor --rate RUNS CONCURRENCY COMMAND [ARGS...]\n"
                        "       spawn-floor --rate-namespaced RUNS CONCURRENCY COMMAND [ARGS...]\n");
        return 2;
}
