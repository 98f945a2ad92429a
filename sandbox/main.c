/* boxcar-sandbox: runs one command in a fresh sandbox, like bwrap, and
 * reports how it ended as one JSON object on --status-fd.  See --help for
 * the options and exit codes, helper-internal.h for the codes' names. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/helper-internal.h"
#include "sandbox/supervise-internal.h"
#include "sandbox/supervisor-internal.h"
#include "sandbox/warm-internal.h"

static int usage_error(int argc, char **argv, const char *msg)
{
        fprintf(stderr, "boxcar-sandbox: %s\n(see boxcar-sandbox --help)\n", msg);
        /* The status fd is wanted even when the rest of the line is bad. */
        for (int i = 1; i + 1 < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "--status-fd") == 0) {
                        struct sandbox_status st = { .exit_code = SBX_EXIT_USAGE,
                                                     .setup_failed = true,
                                                     .setup_errno = EINVAL,
                                                     .setup_step = (char *)"options",
                                                     .message = (char *)msg };
                        sbx_status_write(atoi(argv[i + 1]), &st);
                }
        return SBX_EXIT_USAGE;
}

/* As root: the job's host ids, held until the helper exits (the lock
 * goes with the process however it ends).  Unprivileged: our own ids, as
 * the sandbox's user namespace maps them. */
static int take_host_ids(struct helper_config *c, int *ret_lock, struct bc_error *err)
{
        *ret_lock = -1;
        if (geteuid() != 0) {
                c->host.uid = geteuid();
                c->host.gid = getegid();
                return 0;
        }
        if (!c->id_range_text) {
                const char *env = getenv("BOXCAR_UID_RANGE");
                c->id_range_text = env && *env ? env : SANDBOX_ID_RANGE_DEFAULT;
                int r = sandbox_id_range_parse(c->id_range_text, &c->id_range, err);
                if (r < 0)
                        return bc_error_prefix(err, "%s",
                                               env && *env ? "BOXCAR_UID_RANGE" : "--uid-range");
        }
        int r = sandbox_id_range_check_host_cached(&c->id_range, "/etc", SANDBOX_ID_LOCK_DIR, err);
        uint32_t id = 0;
        if (r >= 0)
                r = sandbox_id_acquire(SANDBOX_ID_LOCK_DIR, &c->id_range, &id, ret_lock, err);
        if (r < 0)
                return r;
        c->host.uid = (uid_t)id;
        c->host.gid = (gid_t)id;
        c->host.own = true;
        return 0;
}

int main(int argc, char **argv)
{
        /* First: nothing this process or its children exec may gain
         * privileges (setuid binaries, file capabilities). */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                perror("boxcar-sandbox: PR_SET_NO_NEW_PRIVS");
                return SBX_EXIT_PRIVS;
        }
        /* The worker's spawning thread going away is a cancel: SIGTERM
         * (not SIGKILL) so the sandbox is torn down and the cgroup removed.
         * Blocked from now: one that comes before the supervisor's loop
         * waits for it (signalfd) instead of killing a helper that has made
         * its cgroup and not yet its teardown.  The sandbox's processes
         * unblock them before they run anything. */
        sbx_sup_block_signals();
        if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0) {
                perror("boxcar-sandbox: PR_SET_PDEATHSIG");
                return SBX_EXIT_INTERNAL;
        }
        signal(SIGPIPE, SIG_IGN);
        struct helper_config cfg;
        struct bc_error err = BC_ERROR_INIT;
        if (helper_config_parse(argc, argv, &cfg, &err) < 0) {
                int r = usage_error(argc, argv, bc_error_message(&err));
                bc_error_clear(&err);
                return r;
        }
        if (cfg.help) {
                fputs(helper_usage(), stdout);
                helper_config_done(&cfg);
                return 0;
        }
        /* Only checked: the sandbox's child closes every fd but its own
         * before anything runs, so the status fd never reaches the job. */
        if (cfg.status_fd >= 0 && fcntl(cfg.status_fd, F_GETFD) < 0) {
                helper_config_done(&cfg);
                return usage_error(argc, argv, "--status-fd: not an open file descriptor");
        }
        if (cfg.warm && geteuid() != 0) {
                helper_config_done(&cfg);
                /* The job's trees are cloned from the host's mount namespace
                 * (open_tree), which takes CAP_SYS_ADMIN there. */
                return usage_error(argc, argv,
                                   "--warm needs root (unprivileged, every sandbox "
                                   "is made cold)");
        }
        int id_lock = -1;
        if (take_host_ids(&cfg, &id_lock, &err) < 0) {
                helper_config_done(&cfg);
                int r = usage_error(argc, argv, bc_error_message(&err));
                bc_error_clear(&err);
                return r;
        }
        int code = cfg.warm ? sbx_supervise_warm(&cfg) : sbx_supervise(&cfg);
        /* Every process of the sandbox is gone by now: the id is free. */
        if (cfg.host.own)
                sandbox_id_release(id_lock);
        helper_config_done(&cfg);
        return code;
}
