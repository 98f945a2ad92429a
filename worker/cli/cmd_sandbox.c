/* `boxcar sandbox detect`, and the check `boxcar worker` makes before it
 * takes jobs it could not isolate. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/sandbox.h"
#include "worker/cli/cli.h"
#include "worker/config/config.h"

const char sandbox_usage[] =
        "usage: boxcar sandbox detect\n"
        "\n"
        "Prints what isolation this host supports (user namespaces, seccomp, cgroup v1/v2\n"
        "controllers, KVM) and which backend `boxcar worker` will use.\n";

int sandbox_check_usable(const struct worker_config *cfg, struct bc_error *err)
{
        if (cfg->sandbox != BACKEND_NAMESPACE)
                return 0;
        if (access(cfg->sandbox_helper, X_OK) < 0)
                return bc_error_set(err, BC_CONFIG, errno,
                                    "--sandbox namespace: the helper %s cannot be run: %m "
                                    "(build it with make, or pass --sandbox-helper PATH)",
                                    cfg->sandbox_helper);
        struct sandbox_caps caps;
        int r = sandbox_detect(&caps, err);
        if (r < 0)
                return r;
        if (strcmp(caps.backend, "namespace") != 0)
                return bc_error_set(err, BC_CONFIG, ENOTSUP,
                                    "--sandbox namespace: this host cannot isolate jobs (%s); "
                                    "see boxcar sandbox detect, or run without isolation with "
                                    "--sandbox none",
                                    caps.backend_reason ? caps.backend_reason : "unknown");
        return 0;
}

int cmd_sandbox(int argc, char **argv)
{
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        fputs(sandbox_usage, stdout);
                        return 0;
                }
        if (argc != 2 || strcmp(argv[1], "detect") != 0) {
                fputs(sandbox_usage, stderr);
                return 2;
        }
        struct sandbox_caps caps;
        struct bc_error err = BC_ERROR_INIT;
        if (sandbox_detect(&caps, &err) < 0) {
                int st = cli_fail("sandbox detect", &err);
                bc_error_clear(&err);
                return st;
        }
        /* Only here: the probe formats and mounts an image, which a worker
         * checking its sandbox at every start has no use for. */
        caps.project_quota = sandbox_workspace_project_quota(caps.project_quota_why,
                                                             sizeof(caps.project_quota_why));
        _cleanup_free_ char *text = sandbox_caps_format(&caps);
        if (!text)
                return 1;
        fputs(text, stdout);
        return 0;
}
