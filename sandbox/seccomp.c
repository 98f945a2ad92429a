/* Installing the job's seccomp filters (the policy: seccomp-policy.c;
 * the filters the helper uses: seccomp-builtin.c). */
#include "sandbox/seccomp-internal.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"

void sbx_seccomp_prog_done(struct sbx_seccomp_prog *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < ELEMENTSOF(p->filters); i++) {
                if (p->owned)
                        free(p->filters[i].filter);
                p->filters[i].filter = NULL;
                p->filters[i].len = 0;
        }
}

int sbx_seccomp_apply(const struct sbx_seccomp_prog *p, struct bc_error *err)
{
        for (size_t i = 0; i < ELEMENTSOF(p->filters); i++) {
                if (!p->filters[i].filter || p->filters[i].len == 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL, "seccomp: no filter");
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p->filters[i]) < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "seccomp: %s",
                                            strerror(errno));
        }
        return 0;
}
