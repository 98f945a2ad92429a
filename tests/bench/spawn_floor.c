/* The floor under "commit -> inside": how long the benchmark's job command
 * takes from its spawn, without any sandbox or queue, to the instant it
 * prints (its own clock, like the job's `date +%s%N`).
 *
 *   spawn-floor RUNS COMMAND [ARGS...]   -> "p50_ms=X p99_ms=Y"
 *
 * COMMAND must print a CLOCK_REALTIME instant in nanoseconds first. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int cmp_long(const void *a, const void *b)
{
        long x = *(const long *)a, y = *(const long *)b;
        return (x > y) - (x < y);
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
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        long before = t.tv_sec * 1000000000L + t.tv_nsec;
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

int main(int argc, char **argv)
{
        int runs = argc > 2 ? atoi(argv[1]) : 0;
        if (runs < 1 || runs > 100000) {
                fprintf(stderr, "usage: spawn-floor RUNS COMMAND [ARGS...]\n");
                return 2;
        }
        long *d = calloc((size_t)runs, sizeof(*d));
        if (!d)
                return 1;
        for (int i = 0; i < runs; i++) {
                d[i] = one_run(argv + 2);
                if (d[i] < 0)
                        return 1;
        }
        qsort(d, (size_t)runs, sizeof(*d), cmp_long);
        printf("p50_ms=%.2f p99_ms=%.2f\n", d[runs / 2] / 1e6, d[runs * 99 / 100] / 1e6);
        free(d);
        return 0;
}
