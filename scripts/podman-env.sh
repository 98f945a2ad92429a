# Sourced by scripts/image.sh and tests/ops/t_compose.sh (and by hand, to
# run deploy/podman/compose.yml):
# points podman at a containers.conf of the project's own ($CONTAINERS_CONF,
# under $BOXCAR_DEV/podman), made for this host, leaving /etc/containers
# alone.  Two things in it are needed on hosts like the test machines:
#  - runc, not crun: these hosts mount cgroup v1 with a cgroup2 beside it
#    (/sys/fs/cgroup/unified) that holds a controller (hugetlb), and crun
#    1.8 refuses such a "hybrid" host outright ("cgroups in hybrid mode not
#    supported"); runc runs there.  On a pure cgroup v1 or v2 host crun
#    would do.
#  - rlimits no higher than this shell's: podman as root asks for 1048576
#    open files by default, which a root without CAP_SYS_RESOURCE (as here)
#    cannot grant ("setrlimit RLIMIT_NOFILE: Operation not permitted").
# The worker's own cgroup namespace is not here: podman 4.3 ignores
# containers.conf's cgroupns on a cgroup v1 host, so it is given on the
# worker's command line (deploy/podman/compose.yml says how).
[[ -n ${BOXCAR_DEV:-} ]] || source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
podman_conf() {
  local dir="$BOXCAR_DEV/podman" nofile nproc
  mkdir -p "$dir"
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [[ $nofile == unlimited ]] && nofile=1048576
  # podman caps its own RLIMIT_NPROC at 32768 before starting conmon.
  [[ $nproc == unlimited || $nproc -gt 32768 ]] && nproc=32768
  cat >"$dir/containers.conf" <<CONF
# Made by scripts/podman-env.sh for this host; see there why.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
  export CONTAINERS_CONF="$dir/containers.conf"
}
podman_conf
