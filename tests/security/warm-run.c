/* sandbox-warm-run: boxcar-sandbox's command line, run the way the worker
 * runs a pooled job: it starts `boxcar-sandbox --warm` (from its own
 * directory), waits until that sandbox is ready, then hands it the job
 * (sandbox_warm_handoff, the worker's code) with its own stdout, stderr
 * and --status-fd, and exits as the helper does.  The security suite runs
 * every check through it too (SANDBOX_BIN=build/sandbox-warm-run).
 * SIGTERM/SIGINT/SIGHUP are passed on (cancel); it dies with its parent
 * as the helper does.  --uid, --gid and --hostname are not supported (the
 * worker never sets them).  Unprivileged there are no warm sandboxes (the
 * worker's pool needs root too): it runs the helper cold, as the worker
 * would.  SANDBOX_WARM_LIMITS="MEMORY_MB PIDS CPUS" makes the sandbox with
 * those limits in its cgroup, as the worker's pool does with the spec's
 * defaults (unset: none). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

static volatile sig_atomic_t helper_pid;

static void pass_on(int sig)
{
        (void)sig;
        if (helper_pid > 0)
                kill(helper_pid, SIGTERM);
}

static int fail(const char *what, struct bc_error *err)
{
        fprintf(stderr, "sandbox-warm-run: %s: %s\n", what, bc_error_message(err));
        return 125;
}

int main(int argc, char **argv)
{
        char self[PATH_MAX], helper[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n < 0)
                return 125;
        self[n] = '\0';
        snprintf(helper, sizeof(helper), "%s/boxcar-sandbox", dirname(self));
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "--help") == 0)
                        execv(helper, (char *[]){ helper, "--help", NULL });
        if (geteuid() != 0) {
                argv[0] = helper;
                execv(helper, argv);
                return 125;
        }
        /* The job's options: ours without --status-fd, which travels as
         * an fd; --network and --cgroup-parent also make the sandbox. */
        char **job = calloc((size_t)argc + 1, sizeof(char *));
        int status_fd = -1, k = 0;
        enum sandbox_network net = SANDBOX_NET_NONE;
        const char *cgroup_parent = NULL;
        bool in_options = true;
        for (int i = 0; i < argc; i++) {
                if (in_options && i > 0 && strcmp(argv[i], "--") == 0)
                        in_options = false;
                if (in_options && i + 1 < argc && strcmp(argv[i], "--status-fd") == 0) {
                        status_fd = atoi(argv[++i]);
                        continue;
                }
                if (in_options && i + 1 < argc && strcmp(argv[i], "--network") == 0)
                        net = strcmp(argv[i + 1], "host") == 0 ? SANDBOX_NET_HOST : SANDBOX_NET_NONE;
                if (in_options && i + 1 < argc && strcmp(argv[i], "--cgroup-parent") == 0)
                        cgroup_parent = argv[i + 1];
                job[k++] = argv[i];
        }
        /* Dies with its parent, as the helper does; the helper dies with us. */
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        struct sigaction sa = { .sa_handler = pass_on };
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        struct bc_error err = BC_ERROR_INIT;
        struct sandbox_warm_limits preset = { 0 };
        const char *given = getenv("SANDBOX_WARM_LIMITS");
        unsigned long long mem = 0;
        unsigned pids = 0;
        if (given && sscanf(given, "%llu %u %lf", &mem, &pids, &preset.cpus) != 3) {
                fprintf(stderr, "sandbox-warm-run: SANDBOX_WARM_LIMITS: want MEMORY_MB PIDS CPUS\n");
                return 125;
        }
        preset.memory_mb = mem;
        preset.pids = pids;
        struct sandbox_warm w;
        if (sandbox_warm_start(helper, net, cgroup_parent, NULL, given ? &preset : NULL, &w, &err) < 0)
                return fail("start", &err);
        helper_pid = w.pid;
        int r;
        while ((r = sandbox_warm_check(&w, &err)) == 0) {
                struct pollfd p = { .fd = w.ctl, .events = POLLIN };
                poll(&p, 1, 1000);
        }
        if (r < 0)
                return fail("warm-up", &err);
        if (sandbox_warm_handoff(&w, job, STDOUT_FILENO, STDERR_FILENO, status_fd, -1, &err) < 0)
                return fail("handoff", &err);
        if (status_fd >= 0)
                close(status_fd);
        int st;
        while (waitpid(w.pid, &st, 0) < 0)
                if (errno != EINTR)
                        return 125;
        free(job);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
