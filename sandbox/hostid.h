/* Host identities for sandboxes (hostid.c): as root, every sandbox runs
 * its job as a host uid and gid of its own, taken from a configured
 * range, so that no two sandboxes, and no sandbox and host account,
 * share the kernel's per-user counters (RLIMIT_NPROC, inotify instances,
 * message queue bytes, pipe buffers, pending signals) or can signal or
 * ptrace each other.
 *
 * An id is held by an exclusive flock() on one file per id under a
 * runtime directory, taken by the sandbox's supervisor (boxcar-sandbox)
 * for the sandbox's whole life: every worker and helper on the host
 * shares the directory, and the kernel drops the lock however the holder
 * dies, kill -9 included, so an id is never leaked.  Nothing here logs. */
#ifndef BC_SANDBOX_HOSTID_H
#define BC_SANDBOX_HOSTID_H

#include <stdint.h>

#include "common/error.h"

/* The default: 65536 ids from 0x70000000, above what systemd (its
 * dynamic users and nspawn containers end below 0x70000000) and
 * useradd/podman's subordinate ids (from 100000) hand out. */
#define SANDBOX_ID_RANGE_DEFAULT "1879048192-1879113727"
#define SANDBOX_ID_LOCK_DIR "/run/boxcar/ids"

struct sandbox_id_range {
        uint32_t first;
        uint32_t count;
};

/* "FIRST-LAST" (inclusive, decimal).  Refused: 0 (root), the ids that
 * mean "none" ((uid_t)-1, 65535 for 16-bit interfaces), a range that
 * includes them, or LAST < FIRST.  BC_USAGE errors naming the problem. */
int sandbox_id_range_parse(const char *s, struct sandbox_id_range *ret, struct bc_error *err);

/* 0 when no account or group of etc_dir's passwd and group files, and no
 * subordinate range of its subuid and subgid files (missing files count
 * as empty), lies in r; else BC_USAGE naming the first entry found. */
int sandbox_id_range_check_host(const struct sandbox_id_range *r, const char *etc_dir,
                                struct bc_error *err);

/* Takes a free id of r: creates lock_dir (0700) if missing, then tries
 * ids from a random one onwards, each with a non-blocking flock() on
 * lock_dir/ID.  *ret_fd holds the lock (O_CLOEXEC): keep it open as long
 * as the id is in use.  -EAGAIN (BC_SANDBOX_SETUP) when all are held. */
int sandbox_id_acquire(const char *lock_dir, const struct sandbox_id_range *r, uint32_t *ret_id,
                       int *ret_fd, struct bc_error *err);
/* Gives the id back: closes fd (fd < 0: nothing).  Its file stays, for
 * the next holder: never remove one while sandboxes run. */
void sandbox_id_release(int fd);

/* sandbox_id_range_check_host, skipped when a previous check of r passed
 * (a stamp in lock_dir) and no file of etc_dir changed since: a few
 * stat() calls per sandbox instead of reading the account files. */
int sandbox_id_range_check_host_cached(const struct sandbox_id_range *r, const char *etc_dir,
                                       const char *lock_dir, struct bc_error *err);

/* For the worker: the range its helpers are to use (parsed and checked
 * against /etc as above; NULL or "" keeps the default), passed to every
 * boxcar-sandbox it starts as --uid-range.  Call once at startup. */
int sandbox_id_range_set(const char *spec, struct bc_error *err);
/* The range set (or the default), as its "FIRST-LAST" text. */
const char *sandbox_id_range_get(void);

#endif
