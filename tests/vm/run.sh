#!/usr/bin/env bash
# The cgroup v2 suite (`make test-vm`, and part of `make test`): boots
# Debian's stock kernel (tests/vm/image.sh) in qemu-system-x86_64 with
# cgroup2 alone mounted and this host's root shared read-only over 9p, runs
# tests/vm/inside.sh there, and prints the TAP it wrote.  Software
# emulation (TCG) unless KVM is usable (below).  The console goes to
# $BOXCAR_DEV/vm/console.log.
# BOXCAR_T (`make test-vm T=worker`) picks parts as VM_PARTS does:
# checks, security, worker (tests/select.sh).  VM_SECURITY names the
# security suite's parts run there (default "cold preset identities"),
# VM_SECURITY_SECTIONS the sections of its checks (default all but the
# network ones; "all" for every one).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
cd "$BOXCAR_ROOT"
[[ ${1:-} == --list ]] && { printf '%s\n' checks security worker; exit 0; }
if [[ -n ${BOXCAR_T:-} ]]; then
  VM_PARTS=$(t_pick checks security worker) || exit 1
  VM_PARTS=$(echo $VM_PARTS)
fi
for t in qemu-system-x86_64 cpio; do
  command -v $t >/dev/null || { not_ok "$t is missing (scripts/deps.sh vm installs it)"; tap_done; exit 1; }
done
[[ -x /bin/busybox ]] && file -L /bin/busybox | grep -q static ||
  { not_ok "a static /bin/busybox is needed (busybox-static; scripts/deps.sh vm)"; tap_done; exit 1; }
kdir=$(tests/vm/image.sh) || { not_ok "building the VM kernel and initramfs"; tap_done; exit 1; }
out="$BOXCAR_DEV/vm/out"
console="$BOXCAR_DEV/vm/console.log"
# KVM only with hardware virtualisation: a /dev/kvm without vmx or svm in
# the CPU flags (kvm_pvm, which runs only guests built for it) took the
# stock kernel nowhere past "Booting from ROM".  VM_ACCEL=kvm|tcg decides.
accel=${VM_ACCEL:-tcg}
[[ -z ${VM_ACCEL:-} && -r /dev/kvm && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo && accel=kvm

# boot: one run of the VM, from an empty output share, its console in
# $console; sets took and qrc.
boot() {
  rm -rf "$out" && mkdir -p "$out"
  # VM_PARTS (checks security worker, the default being all) picks parts.
  { echo "export BOXCAR_BUILD=${BOXCAR_BUILD:-build}"; echo "export CI=${CI:-}"
    [[ -n ${VM_PARTS:-} ]] && echo "export VM_PARTS='$VM_PARTS'"
    [[ -n ${VM_SECURITY:-} ]] && echo "export VM_SECURITY='$VM_SECURITY'"
    [[ -n ${VM_SECURITY_SECTIONS:-} ]] && echo "export VM_SECURITY_SECTIONS='$VM_SECURITY_SECTIONS'"; } > "$out/env"
  # The host's load too: the guest's 2 CPUs are 2 threads of qemu here.
  echo "# booting ${kdir##*/} under $accel (2 CPUs, 4 GiB; timeout ${VM_TIMEOUT:-2700} s;" \
    "host load $(cut -d' ' -f1-3 /proc/loadavg))"
  # What else takes the host's CPUs while the guest runs, sampled each
  # minute (a guest starved of them is slow, and its kernel may say so).
  # It stops with this script too: a script interrupted before the kill
  # below must not leave it sampling forever.
  ( while sleep 60 && kill -0 $$ 2>/dev/null; do
      top -b -n 2 -d 2 -w 160 | awk '/^top -/ {n++} n == 2 && $1 ~ /^[0-9]+$/ && $9 >= 20 && $12 !~ /^qemu/'
    done ) > "$BOXCAR_DEV/vm/host-top.log" 2>/dev/null &
  local sampler=$! start
  start=$(date +%s)
  timeout "${VM_TIMEOUT:-2700}" qemu-system-x86_64 -machine q35,accel=$accel -cpu max -smp 2 -m 4096 \
    -nographic -no-reboot -kernel "$kdir/vmlinuz" -initrd "$kdir/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 softlockup_panic=1 softlockup_all_cpu_backtrace=1 boxcar.repo=$BOXCAR_ROOT boxcar.out=$out" \
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
    -fsdev local,id=out,path="$out",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=out,mount_tag=out \
    -device virtio-rng-pci </dev/null > "$console" 2>&1
  qrc=$?
  took=$(( $(date +%s) - start ))
  pkill -P $sampler; kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  if [[ -s $BOXCAR_DEV/vm/host-top.log ]]; then
    echo "# other processes using 20% of a CPU or more during the VM's run (sampled each minute):"
    awk '{n[$1 " " $12]++} END {for (k in n) print n[k], k}' "$BOXCAR_DEV/vm/host-top.log" |
      sort -rn | head -8 | awk '{printf "#   pid %s (%s) in %d samples\n", $2, $3, $1}'
  fi
}

# A guest kernel that locked up panics (softlockup_panic above) and the
# VM powers off at once instead of hanging to the timeout.  Its report,
# with every CPU's stack, is what to read, not the console's last lines;
# then the same in brief, last, which a log cut to its head and tail
# (CI's) keeps where the report's first lines are lost.
report_kernel() {
  sed -n "${1},$(($1 + 150))p" "$console" | sed 's/^/# /'
  echo "# the guest kernel's report in brief (each CPU's task, RIP and first frames):"
  tail -n +"$1" "$console" | awk -f tests/vm/report-brief.awk | head -40 | sed 's/^/#   /'
}

# The guest's own kernel dying under emulation is reported, then the VM
# is booted once more from the start; a second death, or any check that
# fails, is the suite's failure.  Twice on CI the guest kernel locked up
# in a cold sandbox's fork at the memory-bomb check, which hundreds of
# runs of that check in this VM never did (README, the cgroup v2 suite).
for attempt in 1 2; do
  boot
  [[ -f $out/finished ]] && break
  first=$(grep -nE 'BUG: |Kernel panic|rcu: INFO' "$console" | head -1 | cut -d: -f1)
  if [[ -n $first && $attempt == 1 ]]; then
    echo "# the guest kernel died after ${took} s (qemu exit $qrc), during the check after this one:"
    grep -E '^(ok|not ok)' "$out/tap.log" 2>/dev/null | tail -1 | sed 's/^/#   /'
    report_kernel "$first"
    cp "$console" "$BOXCAR_DEV/vm/console-died.log"
    echo "# booting the VM once more (the first boot's console: $BOXCAR_DEV/vm/console-died.log)"
    continue
  fi
  cat "$out/tap.log" 2>/dev/null
  echo "not ok - the VM did not finish its run (qemu exit $qrc after ${took} s; console:)"
  if [[ -n $first ]]; then report_kernel "$first"
  else tail -30 "$console" | sed 's/^/# /'; fi
  exit 1
done
cat "$out/tap.log"
echo "# VM (${kdir##*/}, $accel): boot, tests and power-off in ${took} s"
# What the guest kernel said of its own health, even on a passing run.
grep -E 'soft lockup|rcu: INFO|clocksource.*unstable|blocked for more than' "$console" |
  head -5 | sed 's/^/# guest kernel: /'
! grep -qE '^[[:space:]]*not ok' "$out/tap.log"
