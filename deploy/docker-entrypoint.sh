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
#
# cgroup v1 hosts (podman with cgroupns = "private", deploy/podman/): the
# same, hierarchy by hierarchy, when every line of /proc/self/cgroup is the
# namespace's root "/" and each read-only v1 mount under /sys/fs/cgroup has
# that root, i.e. shows this container's own cgroup.  Unlike v2, v1 does not
# stop root in the container from writing its own cgroup's limits there:
# the worker could raise them, as it could anyway with CAP_SYS_ADMIN (it can
# remount); its jobs, with no capabilities, cannot.
set -e
cannot() {
	echo "boxcar-entrypoint: cannot remount $1 read-write" \
	     "(needs cap_add SYS_ADMIN, the seccomp profile and apparmor=unconfined)" >&2
}
if [ "$1" = boxcar ] && [ "$2" = worker ] && [ "$(id -u)" = 0 ]; then
	if [ "$(cat /proc/self/cgroup 2>/dev/null)" = "0::/" ] &&
	   grep -qE '^[^ ]+ /sys/fs/cgroup cgroup2 ro[, ]' /proc/mounts; then
		mount -o remount,rw /sys/fs/cgroup 2>/dev/null || cannot /sys/fs/cgroup
	elif [ -n "$(cat /proc/self/cgroup 2>/dev/null)" ] && ! grep -qv ':/$' /proc/self/cgroup; then
		# mountinfo: id parent dev root mountpoint options ... - fstype ...
		awk '$4 == "/" && $5 ~ "^/sys/fs/cgroup/[^/]+$" && $6 ~ /^ro(,|$)/ &&
		     $0 ~ / - cgroup / { print $5 }' /proc/self/mountinfo |
		while read -r m; do
			mount -o remount,bind,rw "$m" 2>/dev/null || cannot "$m"
		done
	fi
fi
exec "$@"
