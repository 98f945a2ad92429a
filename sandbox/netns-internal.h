/* A sandbox's empty network namespace (see netns.c). */
#ifndef BC_SANDBOX_NETNS_INTERNAL_H
#define BC_SANDBOX_NETNS_INTERNAL_H

#include "sandbox/helper-internal.h"

/* Brings up "lo" in the caller's network namespace: 0 or -errno. */
int sbx_loopback_up(void);
/* Makes a new network namespace with its loopback up, without staying in
 * it: *ret_fd refers to it.  0 or -errno; the caller must be
 * single-threaded (the namespace is per thread while it is made). */
int sbx_netns_make(int *ret_fd);

#endif
