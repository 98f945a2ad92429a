/* The job's seccomp filters (see seccomp.c for the policy). */
#ifndef BC_SANDBOX_SECCOMP_INTERNAL_H
#define BC_SANDBOX_SECCOMP_INTERNAL_H

#include "common/error.h"

/* Installs the filters on the calling thread.  Call last before execve:
 * setup syscalls (mount, setns...) are denied afterwards.  Requires
 * no_new_privs or CAP_SYS_ADMIN. */
int sbx_seccomp_install(struct bc_error *err);

#endif
