#!/bin/sh
# boxcar-entrypoint: the image's ENTRYPOINT.  Runs its arguments (boxcar
# migrate, boxcar worker, ...); for `boxcar worker` it first makes the
# container's own cgroup writable, which the sandbox needs for per-job
# memory/pids/cpu limits.
#
# Docker mounts /sys/fs/cgroup read-only in a container that is not
# privileged.  In a private cgroup namespace (Docker's default on cgroup v2
# hosts; compose v2: `cgroup: private`), that mount shows only the
# container's own subtree, so remounting it read-write (CAP_SYS_ADMIN, which
# the worker has) hands the worker nothing but its own cgroup: the kernel
# refuses writes to the namespace root's own limits from inside.  In the
# host's cgroup namespace it would expose the whole host tree, so it is
# left alone there and the worker runs jobs without cgroup limits' parent
# (it logs sandbox.cgroup).
set -e
if [ "$1" = boxcar ] && [ "$2" = worker ] && [ "$(id -u)" = 0 ] &&
   [ "$(cat /proc/self/cgroup 2>/dev/null)" = "0::/" ] &&
   grep -qE '^[^ ]+ /sys/fs/cgroup cgroup2 ro[, ]' /proc/mounts; then
	if ! mount -o remount,rw /sys/fs/cgroup 2>/dev/null; then
		echo "boxcar-entrypoint: cannot remount /sys/fs/cgroup read-write" \
		     "(needs cap_add SYS_ADMIN, the seccomp profile and apparmor=unconfined)" >&2
	fi
fi
exec "$@"
