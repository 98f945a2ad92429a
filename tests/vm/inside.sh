#!/bin/bash
# Runs inside the cgroup v2 VM that tests/vm/run.sh boots (Debian's stock
# kernel, cgroup2 alone, the host's root read-only over 9p): the kernel
# checks, the sandbox security suite (cold, with the warm sandboxes'
# preset limits and each sandbox's host ids; VM_SECURITY names the parts), and workers as root and as an unprivileged user in delegated
# cgroups.  TAP goes to OUT/tap.log, which the host prints; then the VM
# powers off.
repo=$1 out=$2
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
export BOXCAR_DEV=/tmp/vmdev TIME_SCALE=3
# shellcheck disable=SC1091
[[ -f $out/env ]] && source "$out/env"
cd "$repo" || exit 1
start=$(date +%s)
# A part that stops without a "not ok" of its own (a script error, an
# early exit) still fails the suite: the host looks only for "not ok".
part() {
  local name=$1 rc; shift
  "$@"; rc=$?
  (( rc == 0 )) || echo "not ok - vm part '$name' exited $rc"
}
{
  # The clocksource too (hpet under emulation here, where tsc ran the
  # suite no faster), so that two runs' timings are read knowing it.
  echo "# kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB," \
    "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  for p in ${VM_PARTS:-checks security worker}; do
    case $p in
      checks) echo "=== vm: kernel and detection"; part checks bash tests/vm/checks.sh ;;
      # The sandbox's parts: the sessions part drives a worker against
      # PostgreSQL and S3, which the VM does not run (the host's suite does).
      # The warm path's own cgroup work (limits preset at creation, the
      # handoff, no cgroup left) is in "preset" and worker.sh's workers;
      # its other checks are the cold ones again, about five minutes
      # under emulation, so they are left to VM_SECURITY="cold warm ...".
      # The network sections (namespaces, the allow-list proxy and its
      # resolver: half the suite's time) do not depend on the cgroup
      # version; VM_SECURITY_SECTIONS=all runs them here too.
      security) echo "=== vm: sandbox security suite"
                sections=${VM_SECURITY_SECTIONS:-filesystem privileges processes limits syscalls status workspace unprivileged}
                [[ $sections == all ]] && sections=
                part security env BOXCAR_T="${VM_SECURITY:-cold preset identities}" SECURITY_SECTIONS="$sections" \
                  bash tests/security/run.sh ;;
      worker) echo "=== vm: workers in delegated cgroups"; part worker bash tests/vm/worker.sh ;;
      *) echo "not ok - unknown VM_PARTS entry: $p" ;;
    esac
  done
  echo "# inside the VM: $(( $(date +%s) - start )) s"
} > "$out/tap.log" 2>&1
echo done > "$out/finished"
sync
echo o > /proc/sysrq-trigger
sleep 60
