# Inside the cgroup v2 VM: the kernel is what the suite says it is, cgroup2
# alone is mounted, and what `boxcar sandbox detect` reports of each kernel
# feature agrees with a control made here independently (a raw syscall
# from Python, the cgroup files themselves).
source "$(dirname "$0")/../lib.sh"
cgroot=/sys/fs/cgroup
is "cgroup2 alone is mounted (no v1 hierarchy)" "$(awk '$3 ~ /^cgroup/ {print $3}' /proc/mounts | sort -u | tr '\n' ' ')" "cgroup2 "
ctrls=$(cat $cgroot/cgroup.controllers)
if [[ " $ctrls " == *" memory "* && " $ctrls " == *" pids "* && " $ctrls " == *" cpu "* ]]; then ok "memory, pids and cpu controllers ($ctrls)"
else not_ok "controllers"; diag "$ctrls"; fi

# detect from inside a non-root cgroup, as a delegated worker would be.
cg=$cgroot/vm-detect
mkdir -p $cg
det=$(bash -c "echo \$\$ > $cg/cgroup.procs; exec '$BOXCAR' sandbox detect" 2>&1)
rmdir $cg
echo "$det" | sed 's/^/# /'
field() { sed -n "s/^$1: *//p" <<<"$det" | cut -d' ' -f1; }
# syscall NR ARGS...: "yes" unless the kernel says ENOSYS.
syscall_ctl() {
  python3 - "$@" <<'PY'
import ctypes, sys, os
libc = ctypes.CDLL(None, use_errno=True)
nr, args = int(sys.argv[1]), [int(a) for a in sys.argv[2:]]
r = libc.syscall(nr, *args)
e = ctypes.get_errno()
print("no" if r < 0 and e == 38 else "yes")
PY
}
is "detect: the kernel release" "$(field kernel)" "$(uname -r)"
is "detect: cgroup v2" "$(field cgroup)" "v2"
is "detect: mount API (mount_setattr) agrees with the control" "$(field 'mount API')" "$(syscall_ctl 442 -1 0 0 0 0)"
is "detect: pidfd_open agrees with the control" "$(field pidfd_open)" "$(syscall_ctl 434 $$ 0)"
is "detect: clone3 agrees with the control" "$(field clone3)" "$(syscall_ctl 435 0 0)"
mkdir -p $cgroot/vm-ctl && ctl=no && [[ -e $cgroot/vm-ctl/cgroup.kill ]] && ctl=yes; rmdir $cgroot/vm-ctl
is "detect: cgroup.kill agrees with the control" "$(field cgroup.kill)" "$ctl"
if grep -q "cgroup v2 use: *delegated leaf" <<<"$det"; then ok "detect: a writable cgroup with controllers is used as a delegated parent"
else not_ok "detect: delegated parent"; fi
tap_done
