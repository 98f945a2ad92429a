/* boxcar-session-agent SOCKET_PATH [WORKSPACE]: the process that stays in
 * a session's sandbox between its jobs and runs each of them there, at
 * the worker's word over the unix socket SOCKET_PATH (README.md: what it
 * owns, what it must not do, whom it trusts).  WORKSPACE (default
 * /workspace) is where relative paths of file operations start.  Exits 0
 * when the worker hangs up, after killing every process group it started. */
#include <errno.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/code.h"
#include "agent/files.h"
#include "agent/run.h"
#include "agent/spawn.h"

#define AGENT_DEFAULT_WORKSPACE "/workspace"

/* SIGCHLD comes through a signalfd, read by the loop (spawn.c unblocks it
 * in children); SIGPIPE is an EPIPE to handle, not a death.  No signal
 * gets a handler: a child between vfork and exec shares the agent's
 * memory, and a handler run there would run on it (spawn.c). */
static int setup_signals(void)
{
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        /* Whoever started us may have left SIGCHLD ignored: then children
         * are reaped by the kernel and wait4 never sees their status. */
        signal(SIGCHLD, SIG_DFL);
        signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0)
                return -errno;
        int fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

/* The worker hung up: every group the agent started goes (what a command
 * left in its own session with setsid lives on until the sandbox ends). */
static void wind_up(struct agent *a)
{
        run_kill_all(a);
        code_kill_all(a);
        groups_kill_ended(&a->groups);
        files_free_all(a);
        code_done(a);
        leftovers_done(&a->leftovers);
        conn_close(&a->conn);
        close(a->sigfd);
}

int main(int argc, char **argv)
{
        /* First: the session's jobs run as our uid; not dumpable, they
         * cannot ptrace the agent or read its memory through /proc. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                perror("boxcar-session-agent: PR_SET_DUMPABLE");
                return 1;
        }
        /* Whatever fds we were started with are not for the session's
         * jobs: none of them crosses an exec (ours are all O_CLOEXEC). */
        close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
        if (argc < 2 || argc > 3 || argv[1][0] == '\0') {
                fprintf(stderr, "usage: boxcar-session-agent SOCKET_PATH [WORKSPACE]\n");
                return 2;
        }
        /* Files the agent writes, and what its commands create, get
         * 0644/0755 whatever umask it was started with. */
        umask(022);
        struct agent a = { .workspace = argc == 3 ? argv[2] : AGENT_DEFAULT_WORKSPACE };
        a.sigfd = setup_signals();
        if (a.sigfd < 0) {
                fprintf(stderr, "boxcar-session-agent: signals: %s\n", strerror(-a.sigfd));
                return 1;
        }
        spawn_init();
        leftovers_init(&a.leftovers);
        groups_init(&a.groups);
        code_init(&a);
        int r = conn_open(&a.conn, argv[1]);
        if (r < 0) {
                fprintf(stderr, "boxcar-session-agent: connect %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        conn_send_hello(&a.conn);
        agent_loop(&a);
        wind_up(&a);
        return 0;
}
