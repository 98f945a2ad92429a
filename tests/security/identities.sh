# Host identities (issue 48): as root, every sandbox runs its job as a
# host uid and gid of its own from --uid-range, mapped to the job's ids
# in a user namespace of its own, held for the sandbox's life.  Seen from
# the host: two concurrent jobs (cold and warm) are different users, none
# a host account; a per-user kernel limit one job exhausts leaves the
# other's alone; ids come back when a sandbox ends or its helper is
# killed; a range overlapping /etc/passwd is refused.  Needs no
# PostgreSQL or S3 (the vm suite runs it too).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"
SB=${SANDBOX_BIN:-$BOXCAR_SANDBOX}
[[ $SB == /* ]] || SB=$BOXCAR_ROOT/$SB
WARM=${SANDBOX_WARM_BIN:-$BOXCAR_ROOT/${BOXCAR_BUILD:-build}/sandbox-warm-run}
if [[ $(id -u) -ne 0 ]]; then
  skip "host identities are per sandbox only as root (unprivileged: the helper's own)"
  tap_done; exit 0
fi
LOCKS=/run/boxcar/ids
T=$(mktemp -d /tmp/boxcar-ids.XXXXXX)
chmod 755 "$T"
trap 'cleanup_bg; rm -rf "$T"' EXIT
# A small range of our own, away from the default (other runs may use
# that one meanwhile): 1879113728 = 0x70000000 + 65536.
FIRST=1879113728 LAST=1879113735
R=$FIRST-$LAST
in_range() { [[ $1 =~ ^[0-9]+$ ]] && (($1 >= $2 && $1 <= $3)); }
is_account() { awk -F: -v id="$1" '$3 == id || $4 == id { f = 1 } END { exit !f }' /etc/passwd /etc/group; }
# job_pid MARK: the host pid of the job running `sleep MARK`.
job_pid() {
  local p
  for _ in $(seq 100); do
    p=$(pgrep -f -x "sleep $1" | head -1)
    [[ -n $p ]] && { echo "$p"; return 0; }
    sleep 0.05
  done
  return 1
}
ids_of() { awk '/^Uid:/ { u = $2 " " $3 " " $4 " " $5 } /^Gid:/ { g = $2 " " $3 " " $4 " " $5 } END { print u "|" g }' "/proc/$1/status"; }

# ---- two concurrent cold jobs and a warm one: distinct host users ----
# A is started by a root with supplementary groups (0 and 4): none may
# follow the job.
bg setpriv --groups 0,4 -- "$SB" --uid-range "$R" -- sleep 30.11
bg "$SB" --uid-range "$R" -- sleep 30.12
[[ -x $WARM ]] && bg "$WARM" -- sleep 30.13
pa=$(job_pid 30.11) pb=$(job_pid 30.12) pw=$(job_pid 30.13)
ia=$(ids_of "$pa") ib=$(ids_of "$pb") iw=$(ids_of "$pw")
ua=${ia%% *} ub=${ib%% *} uw=${iw%% *}
ga=${ia#*|}; ga=${ga%% *}; gb=${ib#*|}; gb=${gb%% *}
diag "cold A: pid $pa ids $ia; cold B: pid $pb ids $ib; warm: pid $pw ids $iw"
one_id() { local u=${1%%|*} g=${1#*|}; [[ $u == "$2 $2 $2 $2" && $g == "$2 $2 $2 $2" ]]; }
check "each job's real, effective, saved and fs uid and gid are one host id (A $ua, B $ub)" \
  eval 'one_id "$ia" "$ua" && one_id "$ib" "$ub"'
check "two concurrent jobs have distinct host uids and gids" \
  eval '[[ $ua != "$ub" && $ga != "$gb" ]]'
check "both inside --uid-range $R" eval 'in_range "$ua" $FIRST $LAST && in_range "$ub" $FIRST $LAST'
check "neither is nobody (65534) nor any uid or gid of /etc/passwd or /etc/group" \
  eval '[[ $ua != 65534 && $ub != 65534 ]] && ! is_account "$ua" && ! is_account "$ub"'
check "a job's only supplementary group is its own host gid, not its starter's (0, 4)" \
  eval '[[ $(awk "/^Groups:/ { print \$2, NF }" /proc/$pa/status) == "$ga 2" ]]'
na=$(readlink "/proc/$pa/ns/user") nb=$(readlink "/proc/$pb/ns/user") nh=$(readlink /proc/self/ns/user)
check "each job is in a user namespace of its own ($na, $nb; the host's $nh)" \
  eval '[[ -n $na && $na != "$nb" && $na != "$nh" && $nb != "$nh" ]]'
check "inside, the job is still uid/gid 65534, mapped to its host id alone" \
  eval '[[ $(cat /proc/$pa/uid_map | tr -s " ") == " 65534 $ua 1" && $(cat /proc/$pa/gid_map | tr -s " ") == " 65534 $ga 1" ]]'
if [[ -x $WARM ]]; then
  check "a warm sandbox's job too: its own id of the default range ($uw), not A's or B's, no account" \
    eval 'one_id "$iw" "$uw" && in_range "$uw" 1879048192 1879113727 && [[ $uw != "$ua" && $uw != "$ub" ]] && ! is_account "$uw"'
else
  not_ok "sandbox-warm-run missing ($WARM)"
fi
check "the ids are held: their lock files are locked ($LOCKS/$ua, $LOCKS/$ub)" \
  eval '! flock -n "$LOCKS/$ua" true && ! flock -n "$LOCKS/$ub" true'
kill "$pa" "$pb" "$pw" 2>/dev/null
cleanup_bg
wait
check "ids come back when the sandboxes end (nothing holds $ua or $ub)" \
  eval '{ [[ ! -e $LOCKS/$ua ]] || flock -n "$LOCKS/$ua" true; } && { [[ ! -e $LOCKS/$ub ]] || flock -n "$LOCKS/$ub" true; }'

# ---- a per-user kernel limit: inotify instances ----
# fs.inotify.max_user_instances counts per user across the host.  Job A
# takes all it may and holds them; job B, at the same time, still gets its
# own.  With one shared id for every job (65534 before), B got none.
cat >"$T/inotify.py" <<'EOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
want = int(sys.argv[1])
n = 0
while n < want and libc.inotify_init() >= 0:
    n += 1
err = ctypes.get_errno() if n < want else 0
print("GOT", n, os.strerror(err) if err else "", flush=True)
if len(sys.argv) > 2:
    time.sleep(float(sys.argv[2]))
EOF
max=$(cat /proc/sys/fs/inotify/max_user_instances)
bg "$SB" --uid-range "$R" --ro-bind "$T" /opt/t -- \
  python3 /opt/t/inotify.py $((max + 10)) 6 >"$T/a.out" 2>&1
for _ in $(seq 100); do grep -q GOT "$T/a.out" 2>/dev/null && break; sleep 0.05; done
b=$("$SB" --uid-range "$R" --ro-bind "$T" /opt/t -- python3 /opt/t/inotify.py 10 2>&1)
a=$(cat "$T/a.out")
diag "A: $a / B: $b (max_user_instances $max)"
check "job A exhausts its inotify instances (max_user_instances $max)" \
  grep -q "^GOT $max Too many open files" "$T/a.out"
is "a concurrent job B still gets its own (10 of 10)" "$(grep -o '^GOT [0-9]*' <<<"$b")" "GOT 10"
cleanup_bg
wait

# ---- a killed helper's id is free again ----
ONE=$((LAST + 100))
bg "$SB" --uid-range "$ONE-$ONE" -- sleep 30.14
pk=$(job_pid 30.14)
uk=$(ids_of "$pk"); uk=${uk%% *}
init=$(ps -o ppid= -p "$pk" | tr -d ' ')
helper=$(ps -o ppid= -p "$init" | tr -d ' ')
out=$("$SB" --uid-range "$ONE-$ONE" -- true 2>&1); rc=$?
check "while it runs, its one-id range has nothing left: a clear refusal (rc $rc)" \
  eval '[[ $rc -ne 0 ]] && grep -q "every host id of the range $ONE-$ONE is in use" <<<"$out"'
kill -9 "$helper"
for _ in $(seq 100); do kill -0 "$pk" 2>/dev/null || break; sleep 0.05; done
out=$("$SB" --uid-range "$ONE-$ONE" -- sh -c 'cat /proc/self/uid_map' 2>&1); rc=$?
check "after SIGKILL of its helper (pid $helper), id $uk is taken again at once" \
  eval '[[ $uk == "$ONE" && $rc -eq 0 && $(tr -s " " <<<"$out") == " 65534 $ONE 1" ]]'
cleanup_bg

# ---- ranges that would share ids with the host are refused ----
acct=$(awk -F: '$3 > 0 && $3 != 65534 { print $1 ":" $3; exit }' /etc/passwd)
uid=${acct#*:}
out=$("$SB" --uid-range "$uid-$((uid + 5))" -- true 2>&1); rc=$?
check "a range overlapping /etc/passwd's ${acct%%:*} ($uid) is refused, naming it (rc $rc)" \
  eval '[[ $rc -eq 120 ]] && grep -q "overlaps /etc/passwd.s entry .${acct%%:*}." <<<"$out"'
out=$(BOXCAR_UID_RANGE="$uid-$((uid + 5))" "$SB" -- true 2>&1); rc=$?
check "the same from BOXCAR_UID_RANGE (rc $rc)" eval '[[ $rc -eq 120 ]] && grep -q "overlaps /etc/passwd" <<<"$out"'
out=$("$SB" --uid-range 60000-70000 -- true 2>&1); rc=$?
check "a range holding nobody (65534) is refused (rc $rc)" eval '[[ $rc -eq 120 ]] && grep -q "65534" <<<"$out"'
tap_done
