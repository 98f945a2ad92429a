/* The job's seccomp filters (see seccomp.c for the policy). */
#ifndef BC_SANDBOX_SECCOMP_INTERNAL_H
#define BC_SANDBOX_SECCOMP_INTERNAL_H

#include "common/error.h"

#include <linux/filter.h>

/* The compiled filters.  libseccomp takes milliseconds to build them, so
 * the supervisor compiles once, before cloning, and the sandbox's init
 * and job only hand the BPF to the kernel. */
struct sbx_seccomp_prog {
        struct sock_fprog filters[2];
};

int sbx_seccomp_compile(struct sbx_seccomp_prog *ret, struct bc_error *err);
void sbx_seccomp_prog_done(struct sbx_seccomp_prog *p);

/* Installs the filters on the calling thread.  Call last before execve:
 * setup syscalls (mount, setns...) are denied afterwards.  Requires
 * no_new_privs (set by the helper's first line). */
int sbx_seccomp_apply(const struct sbx_seccomp_prog *p, struct bc_error *err);

/* Compile + apply in one step (for tests and tools). */
int sbx_seccomp_install(struct bc_error *err);

#endif
