#!/usr/bin/env bash
# Security suite: real programs run inside build/boxcar-sandbox try to get
# out; every attempt must fail.  Each check looks for a positive sign that
# the attempt ran ("RAN ...", "BLOCKED ...") so a probe that never ran, or
# a sandbox that is not there, fails the test instead of passing it.
# Where the outcome depends on the host (IA32 emulation, user namespaces,
# cgroup controllers, legacy TIOCSTI), a control runs outside the sandbox
# first and the check asserts what the sandbox adds on this host, saying
# which case it is in its description.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"

# SANDBOX_BIN=build-san/boxcar-sandbox runs the suite against another build.
SB=${SANDBOX_BIN:-$BOXCAR_SANDBOX}
# Timing bounds are multiplied by TIME_SCALE where everything is slower
# (the cgroup v2 VM suite runs under software emulation and sets 3).
TS=${TIME_SCALE:-1}
[[ $SB == /* ]] || SB=$BOXCAR_ROOT/$SB
if [[ ! -x $SB ]]; then
  echo "not ok 1 - build/boxcar-sandbox missing (make build/boxcar-sandbox)"
  echo "1..1"; exit 1
fi
T=$(mktemp -d /tmp/boxcar-sec.XXXXXX)
chmod 755 "$T"
# mkws NAME MB [INODES]: a bounded workspace filesystem like the worker's
# (sparse ext4 image, loop, nosuid,nodev) at $T/NAME with ws/ and scratch/.
_ws_mounts=()
mkws() {
  truncate -s "${2}M" "$T/$1.img" && mke2fs -t ext4 -q -F -m 0 -N "${3:-4096}" -O ^has_journal "$T/$1.img" \
    && mkdir -p "$T/$1" && mount -o loop,nosuid,nodev "$T/$1.img" "$T/$1" && mkdir -p "$T/$1/ws" "$T/$1/scratch" \
    && _ws_mounts+=("$T/$1")
}
_own_addrs=()
cleanup_all() {
  cleanup_bg; mountpoint -q "$T/vol/sub" && umount "$T/vol/sub"
  for a in "${_own_addrs[@]}"; do ip addr del "$a/32" dev lo 2>/dev/null; done
  for m in "${_ws_mounts[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup_all EXIT

mkdir -p "$T/bin"
cc -O1 -w -o "$T/bin/probe" tests/security/probe.c || { not_ok "probe compiles"; tap_done; exit 1; }
PROBE=/opt/t/probe
IS_ROOT=0; [[ $(id -u) -eq 0 ]] && IS_ROOT=1

# sb [helper options...] -- cmd...: runs the sandbox with the probes bound
# at /opt/t; stdout+stderr in $OUT, status object in $ST, exit code in $RC.
sb() {
  "$SB" --status-fd 3 --ro-bind "$T/bin" /opt/t "$@" >"$T/out" 2>&1 3>"$T/status"
  RC=$?
  OUT=$(cat "$T/out")
  ST=$(cat "$T/status")
}
jget() { printf '%s' "$ST" | jq -r "$1"; }
has() { grep -qF -- "$2" <<<"$1"; }
# blocked OUT WHAT: the attempt ran and failed
blocked() { has "$1" "BLOCKED $2" && ! has "$1" "ESCAPED $2"; }
blocked_eperm() { has "$1" "BLOCKED $2 EPERM"; }
marker() { echo "boxcar-sec-$RANDOM$RANDOM"; }
# no_survivor MARKER: no process on the host has MARKER in its command line
no_survivor() { ! pgrep -f "$1" >/dev/null; }
# control NAME ARGS...: runs the probe outside the sandbox (no core file,
# no "Segmentation fault" from the shell); output in $CTL, status in $CTL_RC.
control() {
  { (ulimit -c 0; exec "$T/bin/probe" "$@") >"$T/ctl" 2>&1; } 2>/dev/null
  CTL_RC=$?
  CTL=$(cat "$T/ctl")
}

# Host-dependent checks first run a control outside the sandbox, then
# assert what the sandbox adds on this host.  The limits depend on the
# cgroup controllers the host has, read here from /sys/fs/cgroup (not
# through the helper's own detection, which is under test).
CG_VERSION=none CG_ROOT=
case $(stat -fc %T /sys/fs/cgroup 2>/dev/null) in
  cgroup2fs) CG_VERSION=v2 CG_ROOT=/sys/fs/cgroup ;;
  tmpfs)
    CG_VERSION=v1
    if [[ $(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null) == cgroup2fs && -s /sys/fs/cgroup/unified/cgroup.controllers ]]; then
      CG_VERSION=v2 CG_ROOT=/sys/fs/cgroup/unified
    fi ;;
esac
host_has_controller() {
  case $CG_VERSION in
    v2) grep -qw -- "$1" "$CG_ROOT/cgroup.controllers" ;;
    v1) [[ $(stat -fc %T "/sys/fs/cgroup/$1" 2>/dev/null) == cgroupfs ]] ;;
    *) return 1 ;;
  esac
}
# limit_refused CONTROLLER WHAT: on a host without CONTROLLER, the helper
# must refuse the limit (121, setup step cgroup), never run without it.
limit_refused() {
  if [[ $RC -eq 121 && $(jget .setup_error.step) == cgroup ]]; then
    ok "$2: this host has no $1 controller (cgroup $CG_VERSION): the limit is refused (121, step cgroup), the job does not run without it"
  else not_ok "$2: without a $1 controller the limit must be refused"; diag "rc=$RC $ST"; diag "$OUT"; fi
}
diag "host: cgroup $CG_VERSION; controllers: $(for c in memory pids cpu; do host_has_controller $c && printf '%s ' $c; done)"

# /dev: exactly the harmless nodes, each the host's device and usable
# (made with mknod as root, bound from the host in a user namespace): the
# file system section and the unprivileged one check it.
DEV_CHECK='cd /dev && echo $(ls -A); for n in null zero full random urandom tty; do stat -c "%n %F %t:%T %a" $n; done
head -c 3 /dev/zero | od -An -tx1; [ -z "$(head -c 1 /dev/null)" ] && echo null-empty
echo x 2>/dev/null > /dev/full || echo full-refused; head -c 16 /dev/urandom | wc -c'
DEV_WANT="fd full null ptmx pts random shm stderr stdin stdout tty urandom zero
null character special file 1:3 666
zero character special file 1:5 666
full character special file 1:7 666
random character special file 1:8 666
urandom character special file 1:9 666
tty character special file 5:0 666
 00 00 00
null-empty
full-refused
16"

# SECURITY_SECTIONS names the sections to run (the words below, after
# "section"; default all of them): the cgroup v2 VM runs the ones that
# depend on the kernel's cgroups and mounts.  Each prints its time.
section_t0=$SECONDS section_name=
section_selected() { [[ -z ${SECURITY_SECTIONS:-} || " $SECURITY_SECTIONS " == *" $1 "* ]]; }
section_end() {  # prints the time of the section that ran last
  if [[ -n $section_name ]]; then diag "section $section_name: $((SECONDS - section_t0)) s"; fi
  section_name=
}
section() {  # section NAME: whether NAME runs; ends the previous one
  section_end
  section_t0=$SECONDS section_name=$1
  section_selected "$1"
}

# --- file system -----------------------------------------------------------
if section filesystem; then
sb -- $PROBE write /etc/x /usr/x /x /opt/t/x /dev/x /usr/lib/x /workspace/ok /tmp/ok
check "write to /etc, /usr, /, /dev fails (read-only)" \
  bash -c '[[ $(grep -c "BLOCKED .* EROFS" <<<"$1") -ge 6 ]]' _ "$OUT"
check "read-only volume cannot be written" blocked "$OUT" "/opt/t/x"
check "control: /workspace and /tmp are writable" bash -c 'has() { grep -qF -- "$2" <<<"$1"; }; has "$1" "ESCAPED /workspace/ok" && has "$1" "ESCAPED /tmp/ok"' _ "$OUT"

# /dev: exactly the harmless nodes (DEV_CHECK and DEV_WANT, above).
sb -- sh -c "$DEV_CHECK"
is "/dev has only null, zero, full, random, urandom, tty (the host's devices, 0666, working), pts, shm and links" "$OUT" "$DEV_WANT"

if [[ $IS_ROOT -eq 1 ]]; then
  # A volume with a submount of its own: read-only must reach it too.
  mkdir -p "$T/vol/sub" && mount -t tmpfs tmpfs "$T/vol/sub"
  sb --ro-bind "$T/vol" /mnt/vol -- $PROBE write /mnt/vol/x /mnt/vol/sub/x
  check "nested submount of a volume is read-only too" \
    bash -c 'grep -q "BLOCKED /mnt/vol/sub/x EROFS" <<<"$1" && grep -q "BLOCKED /mnt/vol/x EROFS" <<<"$1"' _ "$OUT"
  umount "$T/vol/sub"
else
  skip "nested submount (needs root to make the host submount)"
fi

sb -- $PROBE remount /usr /opt/t /
check "remount rw, bind over, umount of read-only mounts fail" \
  bash -c '[[ $(grep -c "^BLOCKED .* EPERM" <<<"$1") -eq 9 ]]' _ "$OUT"

sb -- sh -c 'echo b > /proc/sysrq-trigger; echo "rc=$?"; echo 1 > /proc/sys/kernel/sysrq; echo "rc=$?"; echo x > /proc/sys/kernel/hostname; echo "rc=$?"; echo 1 > /sys/kernel/profiling; echo "rc=$?"; ls /proc/sys/kernel/hostname >/dev/null && echo SEEN'
check "writes to /proc/sysrq-trigger, /proc/sys, /sys fail" \
  bash -c '[[ $(grep -c "^rc=[1-9]" <<<"$1") -eq 4 ]] && grep -q SEEN <<<"$1"' _ "$OUT"
fi

# --- privileges ------------------------------------------------------------
if section privileges; then
sb -- $PROBE mknod
check "mknod of devices in /workspace and /tmp fails" \
  bash -c 'grep -q "BLOCKED mknod-char" <<<"$1" && grep -q "BLOCKED mknod-block" <<<"$1"' _ "$OUT"

if [[ $IS_ROOT -eq 1 ]]; then
  mkdir -p "$T/suid"
  cp "$T/bin/probe" "$T/suid/probe" && chown root:root "$T/suid/probe" && chmod 4755 "$T/suid/probe"
  ctl=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$T/suid/probe" euid)
  sb --ro-bind "$T/suid" /opt/suid -- /opt/suid/probe euid
  if [[ $ctl == *"EUID 0"* ]] && has "$OUT" "EUID 65534"; then ok "setuid-root binary does not raise privileges"
  else not_ok "setuid-root binary does not raise privileges"; diag "control: $ctl"; diag "$OUT"; fi
  # A setuid binary planted in the workspace: not setuid inside, and what
  # the job chmods u+s does not come back out setuid (it would be root's).
  # What the job chmods u+s stays so on the host (nothing is copied), but
  # the workspace is only ever a nosuid mount: it gives no privileges.
  mkws suidws 16
  cp "$T/suid/probe" "$T/suidws/ws/planted" && chmod 4755 "$T/suidws/ws/planted"
  sb --workspace "$T/suidws/ws" -- sh -c 'stat -c "%a %U" planted; ./planted euid; cp planted mine; chmod 4755 mine; stat -c "%a" mine'
  host=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$T/suidws/ws/mine" euid 2>&1)
  if has "$OUT" "EUID 65534" && has "$OUT" "4755" && [[ $host == *"EUID 65534"* ]]; then
    ok "setuid binary in the workspace: no privileges inside, nor on the host (nosuid mount)"
  else not_ok "setuid binary in the workspace"; diag "$OUT"; diag "host: $host"; fi
else
  skip "setuid binaries (need root to create them)"; skip "setuid in workspace (needs root)"
fi

sb -- sh -c 'grep -E "^(NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb|Seccomp):" /proc/self/status'
check "NoNewPrivs 1, no capabilities in any set, seccomp filtering" \
  bash -c 'grep -q "NoNewPrivs:	1" <<<"$1" && [[ $(grep -c "Cap...:	0000000000000000" <<<"$1") -eq 5 ]] && grep -q "Seccomp:	2" <<<"$1"' _ "$OUT"

sb -- $PROBE tiocsti
ctl=$("$T/bin/probe" tiocsti 2>&1)
# A kernel with dev.tty.legacy_tiocsti=0 refuses TIOCSTI to a user without
# CAP_SYS_ADMIN with EIO: EPERM inside still can only be the filter's.
tiocsti_denied() { blocked_eperm "$OUT" "TIOCSTI" && blocked_eperm "$OUT" "TIOCSTI-highbit" && has "$OUT" "ESCAPED control TIOCGWINSZ"; }
if [[ $ctl == *"ESCAPED TIOCSTI"* ]] && tiocsti_denied; then
  ok "TIOCSTI and its high-bit variant are denied (control: works outside)"
elif [[ $ctl == *"BLOCKED TIOCSTI EIO"* ]] && tiocsti_denied; then
  ok "TIOCSTI and its high-bit variant are denied with EPERM (control: this kernel refuses it outside with EIO, legacy_tiocsti=0)"
else not_ok "TIOCSTI denied"; diag "$OUT"; diag "control: $ctl"; fi

exec 5<"$T/bin/probe" 7>"$T/leak"
sb -- $PROBE fds
exec 5<&- 7>&-
check "no inherited fds: only 0-2 open" bash -c 'grep -q FDS-DONE <<<"$1" && ! grep -q OPENFD <<<"$1"' _ "$OUT"

SECRET_TOKEN=hunter2 sb --env A=1 --env "B=two words" -- /usr/bin/env
is "environment is exactly the given variables" "$OUT" $'A=1\nB=two words'
fi

# --- processes ---------------------------------------------------------------
if section processes; then
m=$(marker)
setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "exec -a $m sleep 300" &
hostpid=$!; _bg_pids+=($hostpid)
sleep 0.2
sb -- $PROBE kill "$hostpid"
alive=0; kill -0 "$hostpid" 2>/dev/null && pgrep -f "$m" >/dev/null && alive=1
if has "$OUT" "DID kill -1" && blocked "$OUT" "kill $hostpid" && [[ $alive -eq 1 ]]; then ok "kill -1 and kill of a host pid (same uid) do not reach the host"
else not_ok "kill -1 / kill host pid"; diag "$OUT"; fi
sb -- ps -eo pid,args
if has "$OUT" "ps -eo" && ! has "$OUT" "$m" && [[ $(grep -c . <<<"$OUT") -le 4 ]]; then ok "ps sees only the sandbox's processes"
else not_ok "ps sees only the sandbox"; diag "$OUT"; fi
sb -- $PROBE ptrace
check "ptrace (init, own child) and process_vm_* denied" \
  bash -c '[[ $(grep -c "^BLOCKED .* EPERM" <<<"$1") -eq 4 ]]' _ "$OUT"
fi

# --- limits ------------------------------------------------------------------
if section limits; then
sb --pids 30 --timeout 20 -- $PROBE forkbomb
n=$(sed -n 's/^FORKS //p' <<<"$OUT")
if ! host_has_controller pids; then limit_refused pids "fork bomb"
elif blocked "$OUT" fork-bomb && [[ -n $n && $n -lt 30 ]] && [[ $(jget .timed_out) == false ]]; then ok "fork bomb stopped by the pids limit ($n forks, cgroup $CG_VERSION)"
else not_ok "fork bomb stopped"; diag "$OUT"; diag "$ST"; fi

sb --memory-mb 64 --timeout 30 -- python3 -c 'a=[]
while True: a.append(bytearray(1 << 20))'
if ! host_has_controller memory; then limit_refused memory "memory bomb"
elif [[ $(jget .oom_killed) == true && $(jget .signal) == 9 && $RC -eq 137 ]]; then ok "memory bomb is OOM-killed and reported (oom_killed true, 137, cgroup $CG_VERSION)"
else not_ok "memory bomb reported as OOM"; diag "rc=$RC $ST"; fi

sb --disk-mb 16 -- sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1; echo "dd=$?"; dd if=/dev/zero of=/tmp/more bs=1M count=8 2>&1; echo "dd2=$?"'
if has "$OUT" "No space left on device" && has "$OUT" "dd=1" && has "$OUT" "dd2=1"; then
  ok "no --workspace: disk fill stopped with ENOSPC at --disk-mb (the tmpfs /workspace + /tmp share it)"
else not_ok "disk fill stopped (tmpfs)"; diag "$OUT"; fi

if [[ $IS_ROOT -eq 1 ]]; then
  mkws disk 16
  sb --workspace "$T/disk/ws" --scratch "$T/disk/scratch" --disk-mb 16 -- sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1; echo "dd=$?"; dd if=/dev/zero of=/tmp/more bs=1M count=8 2>&1; echo "dd2=$?"'
  size=$(stat -c %s "$T/disk/ws/big" 2>/dev/null || echo 0); img=$(du -k "$T/disk.img" | cut -f1)
  if has "$OUT" "No space left on device" && has "$OUT" "dd=1" && has "$OUT" "dd2=1" && (( size <= 16 * 1048576 && size > 0 && img <= 16384 )); then
    ok "bounded workspace: disk fill stopped with ENOSPC (workspace + /tmp on one 16 MiB filesystem; image ${img} KiB on the host)"
  else not_ok "disk fill stopped (bounded workspace)"; diag "$OUT"; diag "size=$size img=$img"; fi

  # Issue 12, item 1: a sparse file cannot beat the limit: its holes cost
  # nothing, on the job's filesystem as on the host.
  mkws sparse 16
  sb --workspace "$T/sparse/ws" --disk-mb 16 --timeout 2 -- sh -c 'truncate -s 3G /workspace/sparse && echo made'
  img=$(du -k "$T/sparse.img" | cut -f1); apparent=$(stat -c %s "$T/sparse/ws/sparse" 2>/dev/null)
  if [[ $RC -eq 0 ]] && has "$OUT" made && [[ $apparent == 3221225472 ]] && (( img <= 16384 )); then
    ok "sparse 3 GiB file under --disk-mb 16: allowed as a hole, the host holds ${img} KiB (<= 16 MiB)"
  else not_ok "sparse file bounded"; diag "rc=$RC $OUT img=$img apparent=$apparent"; fi

  # Item 3: 64 hard links to an 8 MiB file cost 8 MiB, not 520.
  mkws links 16
  sb --workspace "$T/links/ws" --disk-mb 16 -- sh -c 'head -c 8388608 /dev/urandom > f && for i in $(seq 64); do ln f l$i || exit 1; done; echo linked'
  img=$(du -k "$T/links.img" | cut -f1); nl=$(stat -c %h "$T/links/ws/f" 2>/dev/null)
  if [[ $RC -eq 0 && $nl == 65 ]] && has "$OUT" linked && (( img <= 16384 )); then
    ok "64 hard links to an 8 MiB file: one inode with 65 names, image ${img} KiB"
  else not_ok "hard links bounded"; diag "rc=$RC $OUT img=$img nlink=$nl"; fi

  # Item 4: the file count is bounded by the kernel (inodes), quickly.
  mkws many 16 1024
  ifree_host=$(df --output=iavail "$T" | tail -1)
  start=$(date +%s%N)
  sb --workspace "$T/many/ws" --disk-mb 16 --timeout 30 -- python3 -c '
import os
n = 0
try:
    for i in range(100000):
        open("/workspace/f%d" % i, "w").close(); n += 1
except OSError as e:
    print("STOPPED", n, e.strerror)'
  el=$(( ($(date +%s%N) - start) / 1000000 ))
  n=$(sed -n 's/^STOPPED \([0-9]*\) .*/\1/p' <<<"$OUT"); ifree_after=$(df --output=iavail "$T" | tail -1)
  if has "$OUT" "No space left on device" && [[ -n $n ]] && (( n < 1100 && el < 10000 * TS && ifree_host - ifree_after < 100 )); then
    ok "100,000 files against a 1024-inode workspace: ENOSPC after $n, ${el} ms, no host inodes used"
  else not_ok "file count bounded"; diag "$OUT el=$el n=$n ifree $ifree_host -> $ifree_after"; fi

  # Item 2: the timeout covers the whole run: nothing is copied after it.
  # At most 150,000 files, then it spins: a fast host makes 200,000 (the
  # inodes there are) in under 2 s, and the job would end before its timeout.
  mkws slow 64 200000
  start=$(date +%s%N)
  sb --workspace "$T/slow/ws" --disk-mb 64 --timeout 2 -- sh -c 'mkdir d; cd d; i=0; while :; do [ $i -ge 150000 ] || : > f$i; i=$((i+1)); done'
  el=$(( ($(date +%s%N) - start) / 1000000 ))
  if [[ $(jget .timed_out) == true && $RC -eq 137 ]] && (( el < 3000 * TS )); then
    ok "--timeout 2 with a workspace full of files: timed out, whole run ${el} ms"
  else not_ok "timeout covers the whole run"; diag "rc=$RC el=$el $ST"; fi

  # Item 7: workspace files are on disk, not in the job's memory cgroup.
  mkws mem 1100 4096
  sb --workspace "$T/mem/ws" --disk-mb 1100 --memory-mb 512 --timeout 120 -- sh -c 'dd if=/dev/zero of=/workspace/g bs=1M count=1024 2>&1 | tail -1; echo "dd=$?"'
  size=$(stat -c %s "$T/mem/ws/g" 2>/dev/null || echo 0)
  if [[ $RC -eq 0 && $(jget .oom_killed) == false && $size -eq 1073741824 ]]; then
    ok "a 1 GiB workspace under --memory-mb 512 is not OOM-killed"
  else not_ok "1 GiB workspace, 512 MiB memory"; diag "rc=$RC $OUT $ST size=$size"; fi
  umount "$T/mem" && rm -f "$T/mem.img"

  # Fail closed: a plain directory cannot be bounded, nor bound in place
  # without nosuid.
  mkdir -p "$T/plain"
  sb --workspace "$T/plain" --disk-mb 16 -- true
  if [[ $RC -eq 124 && $(jget .setup_error.step) == workspace ]] && grep -q "nosuid\|cannot be enforced" <<<"$(jget .setup_error.message)"; then
    ok "--workspace on a plain directory with --disk-mb fails closed (124: $(jget .setup_error.message | cut -c1-60)...)"
  else not_ok "plain directory fails closed"; diag "rc=$RC $ST"; fi
  mount --bind "$T/plain" "$T/plain" && mount -o remount,bind,nosuid,nodev "$T/plain" && _ws_mounts+=("$T/plain")
  sb --workspace "$T/plain" --disk-mb 16 -- true
  if [[ $RC -eq 124 ]] && grep -q "cannot be enforced" <<<"$(jget .setup_error.message)"; then
    ok "a nosuid directory on a large filesystem with --disk-mb 16 fails closed, saying why"
  else not_ok "large filesystem fails closed"; diag "rc=$RC $ST"; fi

  # A workspace that is an overlay, as the worker makes over a cached
  # artifact base: the lower (shared with other jobs) never changes, every
  # write lands in the upper on the bounded filesystem, copy-ups included.
  if grep -qw overlay /proc/filesystems; then
    mkws ovl 16
    rm -rf "$T/ovl-lower" "$T/ovl-merged"; mkdir -p "$T/ovl-lower/d" "$T/ovl/up" "$T/ovl/wk" "$T/ovl-merged"
    echo original > "$T/ovl-lower/victim"; echo keep > "$T/ovl-lower/d/keep"
    head -c 12582912 /dev/zero > "$T/ovl-lower/big12m"
    chown -R 65534:65534 "$T/ovl-lower" "$T/ovl/up"
    lower_state() { (cd "$T/ovl-lower" && find . -printf '%y %m %u %s %p\n' | sort && cat victim d/keep); }
    before=$(lower_state)
    mount -t overlay -o "lowerdir=$T/ovl-lower,upperdir=$T/ovl/up,workdir=$T/ovl/wk,nosuid,nodev" overlay "$T/ovl-merged"
    sb --workspace "$T/ovl-merged" --scratch "$T/ovl/scratch" --disk-mb 16 -- sh -c '[ -O . ] && [ -O victim ] && echo OWNED; echo PWNED > victim; rm -rf d; chmod 4777 big12m && echo COPIED-UP; dd if=/dev/zero of=fill bs=1M count=64 2>/dev/null; echo "dd=$?"; ls'
    upper=$(cat "$T/ovl/up/victim" 2>/dev/null); after=$(lower_state)
    umount "$T/ovl-merged"
    img=$(du -k "$T/ovl.img" | cut -f1)
    # As root each sandbox's job has host ids of its own (identities.sh),
    # and the kernel will not idmap an overlay to them: the helper fails
    # closed before anything runs (the worker extracts bases instead).
    if [[ $RC -eq 124 ]] && grep -q "idmapped mount" <<<"$(jget .setup_error.message)" && ! has "$OUT" OWNED && [[ -z $upper && $after == "$before" ]]; then
      ok "overlay workspace of another owner: it cannot be idmapped to the job's own host ids, so it is refused before anything runs, the lower unchanged"
    else not_ok "overlay workspace leaves its lower alone"; diag "rc=$RC $OUT"; diag "upper=$upper img=$img"; diag "$(diff <(echo "$before") <(echo "$after"))"; fi
  else
    skip "overlay workspace (no overlayfs)"
  fi
else
  for i in 1 2 3 4 5 6 7 8 9; do skip "bounded workspace checks (need root for loop mounts)"; done
fi

sb --cpus 0.2 --timeout 20 -- $PROBE spin 2
cpu=$(jget .cpu_ms); wall=$(jget .wall_ms)
# A spinning process gets ~20% of one CPU: well under half, well over 5%.
if ! host_has_controller cpu; then limit_refused cpu "cpu limit"
elif [[ $RC -eq 0 ]] && (( wall >= 1000 && cpu * 100 / wall >= 5 && cpu * 100 / wall <= 40 )); then
  ok "cpu limit: 0.2 CPUs gives ${cpu} ms of CPU in ${wall} ms (cgroup $CG_VERSION)"
else not_ok "cpu limit"; diag "rc=$RC $ST"; fi

m=$(marker)
start=$(date +%s%N)
# The job lists its tree once all three are there (a fixed sleep was too
# short for an emulated VM on a loaded host: the tree was not up yet).
sb --timeout "$TS" -- bash -c "(exec -a $m-a sleep 300 &) ; setsid bash -c 'exec -a $m-b sleep 300' & bash -c 'kill -STOP \$\$; exec -a $m-c sleep 300' & until ps -eo stat,args | grep -q '^T.*$m-c' && ps -eo args | grep -q '^$m-a 300' && ps -eo args | grep -q '^$m-b 300'; do sleep 0.05; done; ps -eo stat,args; exec -a $m-d sleep 300"
el=$(( ($(date +%s%N) - start) / 1000000 ))
sleep 0.1
# The job lists its tree first: the double-forked, setsid'd and stopped
# (state T) processes must have existed for the check to mean anything.
if has "$OUT" "$m-a" && has "$OUT" "$m-b" && grep -q "^T.*$m-c" <<<"$OUT" \
   && [[ $(jget .timed_out) == true && $RC -eq 137 ]] && (( el >= 1000 * TS && el < 4000 * TS )) && no_survivor "$m"; then
  ok "timeout kills double-forked, setsid'd and stopped children (${el} ms, none left on the host)"
else not_ok "timeout kills the whole tree"; diag "rc=$RC el=$el $ST"; diag "$(grep -e "$m" -e '^T' <<<"$OUT")"
  pgrep -af "$m" | sed 's/^/# /'; fi

# sigkill_check DESC START: START MARKER runs a sandbox whose job is a
# sleep named MARKER; once it runs, the process START made gets SIGKILL,
# and the sandbox must be gone with it.
sigkill_check() {
  local desc=$1 start=$2 m p started=0
  m=$(marker)
  "$start" "$m" & p=$!
  wait_for "sandbox started" 5 pgrep -f "^$m" >/dev/null && started=1
  kill -9 "$p"; wait "$p" 2>/dev/null
  if [[ $started -eq 1 ]] && wait_for "sandbox gone" 3 no_survivor "$m"; then ok "$desc"
  else not_ok "$desc"; fi
}
# exec: the background job's pid is the helper, or its parent sh, itself.
helper_alone() { exec "$SB" -- bash -c "exec -a $1 sleep 300"; }
helper_under_parent() { exec sh -c "\"$SB\" -- bash -c 'exec -a $1 sleep 300'; echo never"; }
# Killing the helper (no cleanup at all) takes the sandbox down; killing
# the worker (the helper's parent) does too: PDEATHSIG -> cancel.
sigkill_check "SIGKILL of boxcar-sandbox kills the sandbox" helper_alone
sigkill_check "SIGKILL of the spawning parent kills the sandbox" helper_under_parent

# Cancel: SIGTERM to the helper kills the sandbox and still reports.
m=$(marker)
"$SB" --status-fd 3 -- bash -c "exec -a $m sleep 300" 3>"$T/cancel" &
hp=$!
wait_for "sandbox started" 5 pgrep -f "^$m" >/dev/null || diag "cancel: sandbox did not start"
kill -TERM "$hp"; wait "$hp"; rc=$?
ST=$(cat "$T/cancel")
if [[ $rc -eq 137 && $(jget .cancelled) == true && $(jget .signal) == 9 ]] && no_survivor "$m"; then ok "SIGTERM cancels: sandbox killed, status cancelled"
else not_ok "SIGTERM cancels"; diag "rc=$rc $ST"; fi

# A root-owned workspace needs an idmap namespace, whose placeholder
# process the supervisor kills once the namespace is made: it is reaped
# when it dies, not left a zombie for as long as the job runs.
if [[ $IS_ROOT -eq 1 ]] && mkws zomb 16; then
  m=$(marker)
  "$SB" --workspace "$T/zomb/ws" --disk-mb 16 -- bash -c "exec -a $m sleep 300" &
  hp=$!
  started=0; wait_for "sandbox started" 5 pgrep -f "^$m" >/dev/null && started=1
  sleep 0.3
  # Zombies whose parent is a boxcar-sandbox: the supervisor's children.
  zombies=$(ps -eo pid=,ppid=,stat=,comm= | awk '$3 ~ /^Z/ {print $2}' | while read -r pp; do
    [[ $(cat "/proc/$pp/comm" 2>/dev/null) == boxcar-sandbox ]] && echo "$pp"; done | wc -l)
  idmapped=$(stat -c %u "$T/zomb/ws")
  kill -TERM "$hp"; wait "$hp" 2>/dev/null
  if [[ $started -eq 1 && $zombies -eq 0 && $idmapped -eq 0 ]]; then
    ok "a root-owned workspace's idmap placeholder is reaped while the job runs (no zombie)"
  else not_ok "idmap placeholder reaped"; diag "started=$started zombies=$zombies owner=$idmapped"; fi
fi

# The job's mounts are gone when the helper has exited: the worker
# unmounts the workspace's filesystem right after, and its loop device
# must be released then, not when the sandbox's mount namespace happens
# to go (a cold supervisor lets it go beside its own teardown and must
# wait for that).  Control: while a job runs, the unmounted filesystem
# still holds its loop device through the sandbox's mount.
if [[ $IS_ROOT -eq 1 ]] && mkws freed 16; then
  m=$(marker)
  "$SB" --workspace "$T/freed/ws" --disk-mb 16 -- bash -c "exec -a $m sleep 300" &
  hp=$!
  wait_for "sandbox started" 5 pgrep -f "^$m" >/dev/null
  umount "$T/freed" && held=$(losetup -j "$T/freed.img" | wc -l)
  kill -TERM "$hp"; wait "$hp" 2>/dev/null
  left=0
  for i in 1 2 3 4 5 6 7 8 9 10; do
    mount -o loop,nosuid,nodev "$T/freed.img" "$T/freed" && \
      "$SB" --workspace "$T/freed/ws" --disk-mb 16 -- sh -c 'echo x > /workspace/x' && umount "$T/freed" || left=-1
    [[ $left -ge 0 && -n $(losetup -j "$T/freed.img") ]] && left=$((left + 1))
  done
  if [[ ${held:-0} -eq 1 && $left -eq 0 ]]; then
    ok "the workspace's filesystem is released when the helper exits: 10 of 10 loop devices gone at once after umount (control: held while a job runs)"
  else not_ok "workspace filesystem released at exit"; diag "held=${held:-none} left=$left of 10"; fi
fi
fi

# --- network -----------------------------------------------------------------
if section network; then
port=$(free_port)
python3 -c "
import socket,time
u=socket.socket(socket.AF_UNIX); u.bind('\0boxcar-sec-$port'); u.listen(50)
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$port)); s.listen(50)
time.sleep(120)" &
_bg_pids+=($!)
# Ready when TCP accepts (the abstract socket is bound before it).
wait_for "listener" 10 python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.5).close()"
ctl=$("$T/bin/probe" tcp "$port"; "$T/bin/probe" abstract "boxcar-sec-$port")
sb -- sh -c "$PROBE tcp $port; $PROBE abstract boxcar-sec-$port"
if [[ $ctl == *"ESCAPED tcp-loopback"*"ESCAPED abstract-unix"* ]] && blocked "$OUT" tcp-loopback && blocked "$OUT" abstract-unix; then
  ok "network none: host loopback TCP and abstract unix sockets unreachable (control: reachable outside)"
else not_ok "network none isolates loopback and abstract sockets"; diag "$OUT"; diag "control: $ctl"; fi
sb --network host -- $PROBE tcp "$port"
check "control: --network host reaches the host's loopback" has "$OUT" "ESCAPED tcp-loopback"

sb -- $PROBE sockets
check "netlink, vsock, packet sockets and io_uring denied (EPERM)" \
  bash -c '[[ $(grep -c "^BLOCKED .* EPERM" <<<"$1") -eq 4 ]] && grep -q "ESCAPED control unix-socket" <<<"$1"' _ "$OUT"
fi

# --- network allow-lists -----------------------------------------------------
if section allowlists; then
# Through the egress proxy a refused connection is accepted by the sandbox's
# listener and then closed: the sign of getting out is the host server's
# banner, read back inside.
bport=$(free_port)
python3 -c "
import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$bport)); s.listen(50)
while True:
    c, _ = s.accept(); c.sendall(b'banner-$bport\n'); c.close()" &
_bg_pids+=($!)
wait_for "banner listener" 10 python3 -c "import socket; socket.create_connection(('127.0.0.1', $bport), 0.5).close()"
banner="import socket, sys
try:
    c = socket.create_connection((sys.argv[1], $bport), 3); d = c.recv(100)
    print('ESCAPED banner' if d.startswith(b'banner-') else 'BLOCKED banner closed')
except OSError as e:
    print('BLOCKED banner', e.errno)"
# A name for the worker's loopback, in an /etc/hosts only the helper sees
# (the sandbox's own /etc/hosts maps localhost to its own loopback).
printf '127.0.0.1 localhost\n127.0.0.1 loopback.boxcar.test\n' > "$T/hosts"
# GRAB_RESOLV=FILE: and that file as /etc/resolv.conf.
grab() {
  unshare -m sh -c 'mount --bind "$0" /etc/hosts && { [ -z "$GRAB_RESOLV" ] || mount --bind "$GRAB_RESOLV" /etc/resolv.conf; } && exec "$@"' "$T/hosts" \
    "$SB" --status-fd 3 --network allow "$@" -- /usr/bin/python3 -c "$banner" "$GRAB_HOST" \
    >"$T/out" 2>&1 3>"$T/status"
  OUT=$(cat "$T/out") ST=$(cat "$T/status")
}
GRAB_HOST=127.0.0.1 grab --network-allow "0.0.0.0/0:$bport"
check "allow 0.0.0.0/0: the worker's loopback is not reached through the proxy" blocked "$OUT" banner
check "and the refusal is in the status" has "$(jget '.network.refused_list[]')" "127.0.0.1:$bport (loopback"
GRAB_HOST=loopback.boxcar.test grab --network-allow "loopback.boxcar.test:$bport"
check "allow a name that resolves to loopback: refused by the SSRF guard" blocked "$OUT" banner
check "and the refusal names the address" has "$(jget '.network.refused_list[]')" \
  "loopback.boxcar.test:$bport (resolves to 127.0.0.1, loopback"
GRAB_HOST=loopback.boxcar.test grab --network-allow "loopback.boxcar.test:$bport" --network-private
check "control: with --network-private the same name reaches it" has "$OUT" "ESCAPED banner"
GRAB_HOST=loopback.boxcar.test grab --network-allow-private "loopback.boxcar.test:$bport"
check "a name marked private (--network-allow-private) still does not reach loopback" blocked "$OUT" banner
GRAB_HOST=127.0.0.1 grab --network-allow "127.0.0.1:$bport"
check "control: a rule naming the loopback address itself reaches it" has "$OUT" "ESCAPED banner"
# The worker host's own address that no special range covers (a public
# one, as on a cloud VM with a public IP), with a service on it: added to
# lo here.  A wide rule or a name resolving there must not reach it.
if [[ $IS_ROOT -eq 1 ]] && own=11.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)) \
    && ip addr add "$own/32" dev lo 2>/dev/null; then
  _own_addrs+=("$own")
  python3 -c "
import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('$own',$bport)); s.listen(50)
while True:
    c, _ = s.accept(); c.sendall(b'banner-own\n'); c.close()" &
  _bg_pids+=($!)
  wait_for "own-address listener" 10 python3 -c "import socket; socket.create_connection(('$own', $bport), 0.5).close()"
  printf '127.0.0.1 localhost\n127.0.0.1 loopback.boxcar.test\n%s own.boxcar.test\n' "$own" > "$T/hosts"
  GRAB_HOST=$own grab --network-allow "0.0.0.0/0:$bport"
  check "allow 0.0.0.0/0: the worker's own (public-looking) address is not reached through the proxy" \
    blocked "$OUT" banner
  check "and the refusal names it as the worker's" has "$(jget '.network.refused_list[]')" \
    "$own:$bport (an address of the worker host)"
  GRAB_HOST=own.boxcar.test grab --network-allow "own.boxcar.test:$bport"
  check "allow a name that resolves to the worker's own address: refused" blocked "$OUT" banner
  check "and the refusal names the address" has "$(jget '.network.refused_list[]')" \
    "own.boxcar.test:$bport (resolves to $own, an address of the worker host)"
  GRAB_HOST=$own grab --network-allow "$own:$bport"
  check "control: a rule naming that address alone reaches it" has "$OUT" "ESCAPED banner"
else
  skip "the worker's own address (needs root to add one to lo)"
fi
# The worker's resolver with a search list (ndots:5 tries it first, as in
# Kubernetes): a name under an allowed wildcard must be resolved as
# written, not as name.search.domain, a name no rule allows.  A small DNS
# server answers only x.allowed.boxcar.test.search.boxcar.test (loopback,
# so --network-private) and, 300 ms late, slow.boxcar.test (the next
# check), and cached.boxcar.test (loopback); never answers
# hang.boxcar.test; NXDOMAIN for the rest.  Each query is logged, "NAME
# TYPE" a line, in $T/dnslog.
dns=127.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
: > "$T/dnslog"
python3 -c "
import socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('$dns', 53))
while True:
    q, peer = s.recvfrom(512)
    off, labels = 12, []
    while q[off]:
        labels.append(q[off + 1:off + 1 + q[off]].decode().lower()); off += 1 + q[off]
    name, qtype, end = '.'.join(labels), struct.unpack('>H', q[off + 1:off + 3])[0], off + 5
    with open('$T/dnslog', 'a') as log:
        log.write('%s %d\\n' % (name, qtype))
    if name == 'hang.boxcar.test':
        continue
    if name == 'slow.boxcar.test':
        time.sleep(0.3)
    known = name in ('x.allowed.boxcar.test.search.boxcar.test', 'slow.boxcar.test', 'cached.boxcar.test')
    hit = known and qtype == 1
    r = q[:2] + struct.pack('>HHHHH', 0x8180 | (0 if known else 3), 1, int(hit), 0, 0) + q[12:end]
    s.sendto(r + (b'\xc0\x0c' + struct.pack('>HHIH', 1, 1, 5, 4) + bytes([127, 0, 0, 1]) if hit else b''), peer)" &
_bg_pids+=($!)
printf 'nameserver %s\nsearch search.boxcar.test\noptions ndots:5 timeout:1 attempts:2\n' "$dns" > "$T/resolv.conf"
resolve_ctl() {
  GRAB_RESOLV=$T/resolv.conf unshare -m sh -c 'mount --bind "$GRAB_RESOLV" /etc/resolv.conf && exec "$@"' \
    sh python3 -c "import socket; print(socket.gethostbyname('x.allowed.boxcar.test'))" 2>&1
}
resolves_ctl() { [[ $(resolve_ctl) == 127.0.0.1 ]]; }
wait_for "the DNS server" 10 resolves_ctl
ctl=$(resolve_ctl)
GRAB_HOST=x.allowed.boxcar.test GRAB_RESOLV=$T/resolv.conf grab --network-allow "*.allowed.boxcar.test:$bport" --network-private
if [[ $ctl == 127.0.0.1 ]] && blocked "$OUT" banner && has "$(jget '.network.refused_list[]')" "x.allowed.boxcar.test:$bport (does not resolve)"; then
  ok "an allowed name is resolved as written, not through the search list (control: outside, it resolves through it)"
else not_ok "an allowed name is resolved as written, not through the search list"; diag "control: $ctl"; diag "$OUT $ST"; fi
# The worker-side resolver of an allow-list's names: seen from the host
# while it waits on a name the DNS server never answers, it is the job's
# own host uid and gid (never root), without capabilities, no_new_privs
# and seccomp, in the job's
# cgroup (its CPU and memory are the job's).  Found as the child of the
# supervisor the job's marked sleep descends from.
# Its own resolv.conf waits long for the answer that never comes: the
# resolver must still be there when the host looks (under emulation, in the
# VM suite, one look at /proc takes seconds).
# The job's marked sleep outlasts the host's look (under emulation the
# look alone takes seconds; the job is killed once the checks are done).
mark="97.$RANDOM"
sed 's/timeout:1 attempts:2/timeout:30 attempts:5/' "$T/resolv.conf" > "$T/resolv-hang.conf"
GRAB_RESOLV=$T/resolv-hang.conf unshare -m sh -c 'mount --bind "$GRAB_RESOLV" /etc/resolv.conf && exec "$@"' sh \
  "$SB" --memory-mb 256 --pids 64 --network allow --network-allow "hang.boxcar.test:$bport" \
  -- /bin/bash -c "(exec 3<>/dev/tcp/hang.boxcar.test/$bport) 2>/dev/null & exec sleep $mark" >/dev/null 2>&1 &
rpid_bg=$!
ppid_of() { awk '/^PPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
find_resolver() {
  local jp anc pid r
  jp=$(pgrep -xf "sleep $mark" | head -1); [[ -n $jp ]] || return 1
  anc=$(pid=$jp; while [[ -n $pid && $pid -gt 1 ]]; do echo "$pid"; pid=$(ppid_of "$pid"); done)
  for r in $(pgrep -x boxcar-resolve); do
    grep -qx "$(ppid_of "$r")" <<<"$anc" && { echo "$r $jp"; return 0; }
  done
  return 1
}
wait_for "the resolver of hang.boxcar.test" $((30 * TS)) find_resolver >/dev/null ||
  diag "no resolver found under the job: $(pgrep -af 'boxcar-resolve|sleep 97\.' | tr '\n' ';')"
read -r rp jp <<<"$(find_resolver)"
rstat=$(cat "/proc/$rp/status" 2>/dev/null)
cgs() { grep -E '^[0-9]+:(memory|pids|):' "/proc/$1/cgroup" 2>/dev/null | sort; }
rcg=$(cgs "$rp") jcg=$(cgs "$jp")
diag "resolver $rp: $(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' <<<"$rstat" | tr '\n\t' '  ')"
jstat0=$(cat "/proc/$jp/status" 2>/dev/null)
ids_of() { grep -E '^(Uid|Gid):' <<<"$1"; }
check "the name resolver runs as the job's own host uid and gid ($(ids_of "$jstat0" | awk '{print $2}' | tr '\n' ' ')), not root" \
  bash -c '[[ -n $1 && $1 == "$2" ]] && ! grep -qP "^Uid:\s+0\s" <<<"$1"' _ "$(ids_of "$rstat")" "$(ids_of "$jstat0")"
check "with no capabilities (effective, permitted, bounding)" \
  bash -c 'grep -qP "^CapEff:\s+0+$" <<<"$1" && grep -qP "^CapPrm:\s+0+$" <<<"$1" && grep -qP "^CapBnd:\s+0+$" <<<"$1"' _ "$rstat"
check "with no_new_privs and a seccomp filter" \
  bash -c 'grep -qP "^NoNewPrivs:\s+1$" <<<"$1" && grep -qP "^Seccomp:\s+2$" <<<"$1"' _ "$rstat"
nfilters() { awk '/^Seccomp_filters:/ { print $2 }' <<<"$1"; }
jstat=$(cat "/proc/$jp/status" 2>/dev/null)
if [[ -n $(nfilters "$jstat") ]]; then
  check "the job's filters and one more (no exec, no signals, no serving): $(nfilters "$rstat") vs $(nfilters "$jstat")" \
    test "$(nfilters "$rstat")" -gt "$(nfilters "$jstat")"
else skip "Seccomp_filters (kernel before 5.9)"; fi
if [[ -n $rcg && $rcg == "$jcg" ]] && grep -q boxcar-sandbox <<<"$rcg"; then
  ok "and in the job's cgroup (charged to the job)"
else not_ok "the resolver is in the job's cgroup"; diag "resolver: $rcg"; diag "job: $jcg"; fi
kill "$rpid_bg" 2>/dev/null; wait "$rpid_bg" 2>/dev/null
# Repeated connections to one name: looked up once (the cache), counted at
# the DNS server.
: > "$T/dnslog"
GRAB_RESOLV=$T/resolv.conf unshare -m sh -c 'mount --bind "$GRAB_RESOLV" /etc/resolv.conf && exec "$@"' sh \
  "$SB" --status-fd 3 --network allow --network-allow "cached.boxcar.test:$bport" \
  -- /bin/bash -c "for i in 1 2 3 4 5; do (exec 3<>/dev/tcp/cached.boxcar.test/$bport; cat <&3) 2>/dev/null; done" \
  >"$T/out" 2>&1 3>"$T/status"
ST=$(cat "$T/status")
asked=$(grep -c '^cached.boxcar.test 1$' "$T/dnslog")
check "five connections to one name: one lookup at the DNS server (the cache), not $asked" test "$asked" -eq 1
check "and each of them refused on its address (cached answers are judged too)" \
  test "$(jget '.network.refused')" -eq 5
# A flood of names under a wildcard: lookups are rate-limited (a burst of
# 50, then 10 a second); the rest are refused, with the reason.  One
# process asks 40 at a time, so the flood outpaces the refill even under
# emulation (the VM suite), where 120 shells one after another took 10 s
# and the refill let them all through; the bound still counts the refill
# over the run's own time.
: > "$T/dnslog"
flood_t0=$(date +%s%N)
GRAB_RESOLV=$T/resolv.conf unshare -m sh -c 'mount --bind "$GRAB_RESOLV" /etc/resolv.conf && exec "$@"' sh \
  "$SB" --status-fd 3 --network allow --network-allow "*.flood.boxcar.test:$bport" \
  -- /bin/bash -c "python3 -c '
import socket, sys
from concurrent.futures import ThreadPoolExecutor
def hit(i):
    try:
        socket.create_connection((\"n%d.flood.boxcar.test\" % i, int(sys.argv[1])), 2).close()
    except OSError:
        pass
with ThreadPoolExecutor(40) as ex:
    list(ex.map(hit, range(1, 121)))
' $bport; sleep 0.5" \
  >"$T/out" 2>&1 3>"$T/status"
flood_s=$(( ($(date +%s%N) - flood_t0 + 999999999) / 1000000000 ))
ST=$(cat "$T/status")
flooded=$(grep -E '^n[0-9]+\.flood\.boxcar\.test 1$' "$T/dnslog" | sort -u | wc -l)
check "120 names at once: at most the burst and the refill reach the DNS server ($flooded in $flood_s s, at most $((50 + 10 * flood_s)))" \
  test "$flooded" -ge 40 -a "$flooded" -le $((50 + 10 * flood_s))
check "the others are refused, the rate limit named in the status" \
  has "$(jget '.network.refused_list[]')" "name lookups over the rate limit"
# The cloud metadata address is never reached, even by a rule whose network
# holds it with --network-private; a rule naming it alone is refused.
if [[ $IS_ROOT -eq 1 ]] && ip addr add 169.254.169.254/32 dev lo 2>/dev/null; then
  _own_addrs+=(169.254.169.254)
  python3 -c "
import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('169.254.169.254',$bport)); s.listen(50)
while True:
    c, _ = s.accept(); c.sendall(b'banner-metadata\n'); c.close()" &
  _bg_pids+=($!)
  wait_for "metadata listener" 10 python3 -c "import socket; socket.create_connection(('169.254.169.254', $bport), 0.5).close()"
  GRAB_HOST=169.254.169.254 grab --network-allow "169.254.0.0/16:$bport" --network-private
  check "the metadata address is not reached, even with --network-private and a rule holding it" blocked "$OUT" banner
  check "and the refusal names it" has "$(jget '.network.refused_list[]')" "169.254.169.254:$bport (the cloud metadata service"
  GRAB_HOST=169.254.169.254 grab --network-allow "169.254.169.254:$bport"
  check "a rule naming the metadata address is refused at parse" has "$OUT" "not 169.254.169.254"
else
  skip "the metadata address (needs root to add it to lo)"
fi
# A job that writes and exits at once (`echo > /dev/tcp/...`, a client
# that does not wait for an answer): its bytes were taken, so they go out,
# as the kernel would send a closed socket's data.  Here the name takes
# the worker's resolver 300 ms, long after the job is gone.
# The chaos suite's collector: each line a connection brings, appended.
: > "$T/collected"
python3 "$BOXCAR_ROOT/tests/chaos/marks.py" "$T/collected" "$T/collector.port" &
_bg_pids+=($!)
wait_for "collector" 10 test -s "$T/collector.port"
cport=$(cat "$T/collector.port")
unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$T/resolv.conf" \
  "$SB" --status-fd 3 --network allow --network-allow "slow.boxcar.test:$cport" --network-private \
  -- /bin/bash -c "echo sent-before-exit > /dev/tcp/slow.boxcar.test/$cport" >"$T/out" 2>&1 3>"$T/status"
wait_for "the bytes" 5 grep -q sent-before-exit "$T/collected"
check "a job's bytes sent just before it exits still reach the server (its name resolves 300 ms later)" \
  grep -qx sent-before-exit "$T/collected"
# That is bounded: a server that never reads does not hold the sandbox.
# The job fills every buffer on the way (its socket's, the supervisor's)
# and exits; the sandbox ends with it, 2 s later at most.
sport=$(free_port)
python3 -c "
import socket, time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$sport)); s.listen(50)
held = []
while True:
    c, _ = s.accept(); held.append(c)" &
_bg_pids+=($!)
wait_for "sink" 10 python3 -c "import socket; socket.create_connection(('127.0.0.1', $sport), 0.5).close()"
stuffer="import socket
c = socket.create_connection(('127.0.0.1', $sport)); c.setblocking(False); n = 0
try:
    while True: n += c.send(b'x' * 65536)
except BlockingIOError:
    print('STUFFED', n)"
t0=$(date +%s%N)
timeout 30 "$SB" --status-fd 3 --network allow --network-allow "127.0.0.1:$sport" \
  -- /usr/bin/python3 -c "$stuffer" >"$T/out" 2>&1 3>"$T/status"
took=$(( ($(date +%s%N) - t0) / 1000000 )) ST=$(cat "$T/status")
if grep -q STUFFED "$T/out" && (( took < 10000 )) && [[ $(jget .exit_code) == 0 ]]; then
  ok "a server that never reads does not hold the sandbox after its job ($took ms, $(grep -o 'STUFFED [0-9]*' "$T/out") bytes)"
else not_ok "the drain after the job is bounded"; diag "took $took ms: $(head -3 "$T/out") $(cat "$T/status")"; fi
# A job that never reads: 64 connections to a server that sends without
# end.  What the supervisor has read (bytes_in) is what it parked in the
# job's side of each connection (its buffer, the kernel's socket buffers,
# the job's own receive buffer): bounded per connection, not the megabytes
# each that autotuned socket buffers grow to (charged to the worker).
fport=$(free_port)
python3 -c "
import socket, threading
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',$fport)); s.listen(128)
def flood(c):
    try:
        while True: c.sendall(b'x' * 65536)
    except OSError: pass
while True:
    c, _ = s.accept(); threading.Thread(target=flood, args=(c,), daemon=True).start()" &
_bg_pids+=($!)
wait_for "flood listener" 10 python3 -c "import socket; socket.create_connection(('127.0.0.1', $fport), 0.5).close()"
sb --network allow --network-allow "127.0.0.1:$fport" -- /usr/bin/python3 -c "
import socket, time
s = [socket.create_connection(('127.0.0.1', $fport), 3) for i in range(64)]
print('RAN flood', len(s), flush=True); time.sleep(4)"
fin=$(jget .network.bytes_in)
check "a job that never reads 64 floods: the supervisor parks at most 1.5 MiB a connection ($fin bytes in all)" \
  bash -c '[[ $1 == *"RAN flood 64"* && $2 -gt 0 && $2 -lt $((64 * 1536 * 1024)) ]]' _ "$OUT" "$fin"
sb --network allow --network-allow "pypi.org:443" -- $PROBE sockets
check "allow-list: netlink, vsock, packet sockets and io_uring still denied (no route changes)" \
  bash -c '[[ $(grep -c "^BLOCKED .* EPERM" <<<"$1") -eq 4 ]]' _ "$OUT"
sb --network allow --network-allow "pypi.org:443" -- /usr/bin/python3 -c "
import socket
for host, port in (('1.1.1.1', 443), ('127.0.0.1', $bport), ('100.127.0.1', 443)):
    try:
        d = socket.create_connection((host, port), 2).recv(1)
        print('ESCAPED' if d else 'BLOCKED', host, 'closed')
    except OSError as e: print('BLOCKED', host, e.errno)"
check "allow-list: raw addresses outside the rules, loopback and an unassigned synthetic address get nothing" \
  bash -c '[[ $(grep -c "^BLOCKED" <<<"$1") -eq 3 ]] && ! grep -q ESCAPED <<<"$1"' _ "$OUT"
fi

# --- syscalls ----------------------------------------------------------------
if section syscalls; then
sb -- $PROBE namespaces
check "unshare (user/mount/net), clone(CLONE_NEWUSER), mount, setns, chroot fail" \
  bash -c '[[ $(grep -c "^BLOCKED .* EPERM" <<<"$1") -eq 7 ]]' _ "$OUT"
# Control: can this user make a user namespace outside the sandbox?
unshare -r true >/dev/null 2>&1; ctl_rc=$?
sb -- sh -c 'unshare -r true; echo "rc=$?"'
denied() { has "$OUT" "Operation not permitted" && has "$OUT" "rc=1"; }
if [[ $ctl_rc -eq 0 ]] && denied; then
  ok "unshare -r (nested user namespace) fails with EPERM (control: works outside)"
elif [[ $ctl_rc -ne 0 ]] && denied; then
  ok "unshare -r (nested user namespace) fails with EPERM; this host refuses it outside too (control)"
else not_ok "unshare -r (nested user namespace) fails"; diag "control rc=$ctl_rc"; diag "$OUT"; fi

sb -- $PROBE syscalls
check "keyctl, add_key, bpf, perf_event_open, userfaultfd, open_by_handle_at, setns, kexec, modules, process_vm_readv, ptrace, new mount API: EPERM" \
  bash -c '[[ $(grep -c "^BLOCKED .* EPERM" <<<"$1") -eq 14 ]]' _ "$OUT"

# x32 numbers reach seccomp on every x86-64 kernel (one without the x32 ABI
# answers ENOSYS after the filter): the control survives outside.
control x32
sb -- $PROBE x32
if [[ $CTL_RC -eq 0 ]] && has "$CTL" "SURVIVED x32" && [[ $RC -eq 159 ]] && has "$OUT" RAN-X32 && ! has "$OUT" SURVIVED; then
  ok "x32 syscall kills the process (SIGSYS; control: survives outside)"
else not_ok "x32 syscall kills the process (SIGSYS)"; diag "control rc=$CTL_RC $CTL"; diag "rc=$RC $OUT"; fi

# int 0x80 is the i386 entry.  With IA32 emulation the call is made
# outside (the control survives) and the filter must kill it (SIGSYS).
# Without it (ia32_emulation=0, or a kernel built without), the CPU
# faults on the instruction (SIGSEGV) before any syscall or filter: the
# call cannot be made outside, and inside it must not be made either.
control int80
sb -- $PROBE int80
if [[ $CTL_RC -eq 0 ]] && has "$CTL" "SURVIVED int80"; then
  if [[ $RC -eq 159 ]] && has "$OUT" RAN-INT80 && ! has "$OUT" SURVIVED; then
    ok "int 0x80 (i386) syscall kills the process (SIGSYS; control: the call works outside)"
  else not_ok "int 0x80 (i386) syscall kills the process (SIGSYS)"; diag "rc=$RC $OUT"; fi
elif [[ $CTL_RC -eq 139 ]] && has "$CTL" RAN-INT80 && ! has "$CTL" SURVIVED; then
  if [[ $RC -eq 139 || $RC -eq 159 ]] && has "$OUT" RAN-INT80 && ! has "$OUT" SURVIVED; then
    ok "int 0x80 (i386) syscall cannot be made: this host has no IA32 emulation (control: SIGSEGV outside), and inside the process dies too (signal $((RC - 128)))"
  else not_ok "int 0x80 (i386) syscall cannot be made inside the sandbox"; diag "rc=$RC $OUT"; fi
else not_ok "int 0x80 control: neither made nor faulted outside the sandbox"; diag "control rc=$CTL_RC $CTL"; fi
fi

# --- exit codes and status -----------------------------------------------------
if section status; then
for code in 0 1 255; do
  sb -- sh -c "exit $code"
  is "exit code $code passes through" "$RC/$(jget .exit_code)/$(jget .signal)" "$code/$code/0"
done
sb -- $PROBE segv
is "SIGSEGV gives 139 and signal 11" "$RC/$(jget .exit_code)/$(jget .signal)" "139/139/11"
sb -- no-such-command-xyz
is "missing command: 127 with exec_error" "$RC/$(jget .exec_error.errno)" "127/2"
sb --ro-bind /nonexistent-src /mnt/x -- true
is "setup failure: own exit code and setup_error naming step and path" \
  "$RC/$(jget .setup_error.step)/$(jget .setup_error.path)" "122/mount//nonexistent-src"
"$SB" --bogus -- true >/dev/null 2>&1
is "bad option: exit 120" "$?" "120"
fi

# --- workspace (bound in place, no copy) ---------------------------------------
if section workspace; then
if [[ $IS_ROOT -eq 1 ]]; then
mkws wsl 16; mkws wsr 16
mkdir -p "$T/wsl/ws" && echo original > "$T/hostfile" && ln -s "$T/hostfile" "$T/wsl/ws/victim"
sb --workspace "$T/wsl/ws" -- sh -c 'echo PWNED > victim 2>/dev/null; ln -s /etc/shadow shadow; ln -s /etc etcdir; mkdir d; ln -s / d/root; echo done'
W=$T/wsl/ws
if [[ -L $W/shadow && $(readlink "$W/shadow") == /etc/shadow && -L $W/etcdir && -L $W/d/root \
      && $(cat "$T/hostfile") == original ]] && has "$OUT" done; then
  ok "symlinks planted in the workspace (to /etc/shadow, /etc, /) stay symlinks; the host file they point at is untouched"
else not_ok "workspace symlinks not followed"; diag "$OUT"; ls -laR "$W" | sed 's/^/# /'; fi

W=$T/wsr/ws
echo keep > "$W/in.txt" && echo gone > "$W/delete-me"
sb --workspace "$W" -- sh -c 'rm delete-me; echo sh > sh.txt; python3 -c "open(\"/workspace/py.txt\",\"w\").write(\"py\")"; node -e "require(\"fs\").writeFileSync(\"/workspace/node.txt\",\"node\")"; mkdir -p sub/deeper; echo x > sub/deeper/f; chmod 000 sub/deeper/f'
if [[ $RC -eq 0 && $(cat "$W/sh.txt") == sh && $(cat "$W/py.txt") == py && $(cat "$W/node.txt") == node \
      && $(cat "$W/in.txt") == keep && ! -e $W/delete-me && -r $W/sub/deeper/f && $(stat -c %u "$W/sh.txt") == $(id -u) ]]; then
  ok "sh, python3 and node run and write /workspace in place (idmapped): on the host owned by the directory's owner"
else not_ok "runtimes write /workspace"; diag "rc=$RC $OUT"; ls -laR "$W" | sed 's/^/# /'; fi
else
  skip "workspace symlinks (need root for the nosuid workspace mount)"; skip "runtimes write /workspace (need root)"
fi
fi

# --- unprivileged ----------------------------------------------------------------
if section unprivileged; then
if [[ $IS_ROOT -eq 1 ]]; then
  mkws nob 16 && chown 65534:65534 "$T/nob/ws"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SB" --help 2>&1); rc=$?
  is "unprivileged: --help works" "$rc/$(grep -c 'usage: boxcar-sandbox' <<<"$out")" "0/1"
  # Control: may nobody make a user namespace on this host at all?  Where
  # it may, the helper must run; where it may not, the helper must refuse
  # (a namespace step fails) rather than run the job without isolation.
  setpriv --reuid=65534 --regid=65534 --clear-groups unshare -r true >/dev/null 2>&1; ctl_rc=$?
  out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$SB" --status-fd 3 --workspace "$T/nob/ws" -- sh -c 'echo hi > /workspace/x; id -u; grep NoNewPrivs /proc/self/status' 2>&1 3>"$T/nobody-status"); rc=$?
  step=$(jq -r '.setup_error.step // empty' "$T/nobody-status" 2>/dev/null)
  if [[ $ctl_rc -eq 0 ]]; then
    if [[ $rc -eq 0 && $(cat "$T/nob/ws/x" 2>/dev/null) == hi ]] && grep -q "NoNewPrivs:	1" <<<"$out"; then
      ok "unprivileged (user namespace): a basic run works and writes its workspace (control: nobody may unshare -r)"
    else not_ok "unprivileged basic run"; diag "rc=$rc $out"; fi
    out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$SB" -- sh -c "$DEV_CHECK" 2>&1)
    is "unprivileged: /dev has the same nodes, bound from the host (no mknod in a user namespace)" "$out" "$DEV_WANT"
  elif [[ $rc -eq 122 && ($step == clone || $step == userns) && ! -e $T/nob/ws/x ]]; then
    ok "unprivileged: this host refuses user namespaces to nobody (control: unshare -r fails outside), and the helper refuses too (122, step $step): the job never runs unisolated"
  else not_ok "unprivileged run without user namespaces must be refused"; diag "control rc=$ctl_rc; rc=$rc step=$step $out"; fi
  # An allow-list unprivileged: the routes and the listeners (port < 1024
  # included) are made as root of the sandbox's user namespace; the proxy
  # connects to the banner server on the worker's loopback (a rule that
  # names it), and nothing else.  Its banner server is the allow-list
  # section's, so it runs with that section.
  if ! section_selected allowlists; then :
  elif [[ $ctl_rc -eq 0 ]]; then
    out=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$SB" --status-fd 3 --network allow \
      --network-allow "127.0.0.1:$bport" --network-allow "pypi.org:443" -- /usr/bin/python3 -c "$banner" 127.0.0.1 \
      2>&1 3>"$T/nobody-net"); rc=$?
    if [[ $rc -eq 0 ]] && has "$out" "ESCAPED banner" && [[ $(jq -r .network.connections "$T/nobody-net") == 1 ]]; then
      ok "unprivileged: an allow-list works (routes, listeners on 127.0.0.1:53 and 443, the proxy)"
    else not_ok "unprivileged allow-list"; diag "rc=$rc $out $(cat "$T/nobody-net")"; fi
  else skip "unprivileged allow-list (no user namespaces for nobody here)"; fi
else
  skip "unprivileged checks (run as root to switch to nobody)"; skip "unprivileged basic run"
  skip "unprivileged allow-list"
fi
fi
section_end

tap_done
