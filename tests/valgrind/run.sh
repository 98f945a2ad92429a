#!/usr/bin/env bash
# Valgrind (memcheck) over boxcar's own code: each unit test binary, then
# the worker running a mix of jobs end to end (output and stderr, an
# artifact uploaded to S3, a signed webhook delivered, a command that
# fails, one that times out, one that does not exist, one cancelled while
# it runs) until SIGTERM stops it, and the CLI commands that read what it
# did (migrate, enqueue, status, events, logs, jobs, storage pull).  Each
# must end with no memcheck error and no memory lost (definitely or
# indirectly).
#
# What valgrind cannot run, and where it is checked instead: valgrind 3.19
# does not know seccomp(2), mount_setattr, open_tree or pidfd_open.  So
# boxcar-sandbox and test_seccomp (libseccomp probes the kernel
# through seccomp(2)) are left out, and the worker runs --sandbox none here
# (its namespace backend would find no isolation); the sandbox's code runs
# under AddressSanitizer and UBSan in `make test SAN=1` (security suite,
# e2e) instead.  Valgrind runs a vfork as a fork, so the child's report of
# a failed exec, which it writes into the memory it shares with its parent
# under vfork, never arrives: test_spawn is left out too (spawn.c
# allocates nothing; the session agent that uses it is not run under
# valgrind by any suite).  The binaries are a plain build: under SAN=1 one is made in
# build-vg/, as valgrind cannot run sanitized code.
#
# BOXCAR_T (`make test SUITES=valgrind T=test_proc`) picks unit tests by
# their unit-suite names, and the worker part by "worker" (tests/select.sh).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
source "$(dirname "$0")/../lanes.sh"
cd "$BOXCAR_ROOT"
units=$(tests/unit/run.sh --list)
[[ ${1:-} == --list ]] && { printf '%s\n' $units worker; exit 0; }
picked=$(t_pick $units worker) || exit 1
if ! command -v valgrind >/dev/null; then
  not_ok "valgrind is installed (scripts/deps.sh installs it)"; tap_done; exit 1
fi
build=${BOXCAR_BUILD:-build}
if [[ ${SAN:-0} != 0 ]]; then
  build=build-vg
  if ! make -s --no-print-directory SAN=0 BUILD="$build" "$build/boxcar" "$build/boxcar-guard" \
       unit-tests >/dev/null; then
    not_ok "a plain build for valgrind ($build/)"; tap_done; exit 1
  fi
fi
bin="$BOXCAR_ROOT/$build/boxcar"
# The worker execs boxcar-guard beside it for each --sandbox none job;
# without it, it forks a guard of its own, a copy of a valgrind'd process
# whose exit memcheck would judge (and whose status would be the job's).
if [[ ! -x $BOXCAR_ROOT/$build/boxcar-guard ]]; then
  not_ok "$build/boxcar-guard is built"; tap_done; exit 1
fi
T=$(mktemp -d /tmp/boxcar-vg.XXXXXX)
trap 'cleanup_bg; rm -rf "$T"' EXIT

# vg NAME CMD...: CMD under memcheck, its reports (one file per process)
# under $T/NAME.*; returns CMD's status (99: memcheck found something).
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --num-callers=30)
vg() { local name=$1; shift; "${VG[@]}" --log-file="$T/$name.%p" "$@"; }
# clean NAME: no memcheck report in NAME's files ("==pid==" lines; the
# "--pid--" ones are valgrind's notes on system calls it does not know).
clean() {
  local f bad=0
  for f in "$T/$1".*; do
    [[ -e $f ]] || continue
    if grep -q '^==[0-9]*==' "$f"; then
      bad=1; grep '^==[0-9]*==' "$f" | head -40 | sed 's/^/# /'
    fi
  done
  return $bad
}

# --- unit tests -------------------------------------------------------------
# memcheck runs one thread at a time, so one test binary per CPU runs at
# once (VG_LANES), each into its own files; the results are read in order.
vg_units=()
for u in $picked; do
  [[ $u == worker ]] && continue
  [[ $u == sandbox/test_seccomp ]] && continue   # seccomp(2): see above
  [[ $u == agent/test_spawn ]] && continue       # vfork: see above
  vg_units+=("$u")
done
vg_unit() {  # vg_unit UNIT: its output in $T/out-NAME, status in $T/rc-NAME, time in $T/time-NAME
  local t0=$SECONDS t=$build/tests/unit/$1 name=${1##*/}
  [[ -x $t ]] || return 0   # reported below
  # BOXCAR_TEST_STRIDE: the exhaustive damage walks (every prefix and bit
  # flip of a sealed secret, an RSA decryption each) take a sample here,
  # minutes under memcheck otherwise; the unit suite walks them whole.
  BOXCAR_TEST_STRIDE=13 CMOCKA_MESSAGE_OUTPUT=TAP vg "$name" "$t" > "$T/out-$name" 2>&1
  echo $? > "$T/rc-$name"
  echo $((SECONDS - t0)) > "$T/time-$name"
}
in_lanes "${VG_LANES:-$(nproc)}" vg_unit "${vg_units[@]}"
for u in "${vg_units[@]}"; do
  t=$build/tests/unit/$u
  name=${t##*/}
  [[ -x $t ]] || { not_ok "$name under valgrind: $t is not built"; continue; }
  out=$(cat "$T/out-$name"); rc=$(cat "$T/rc-$name")
  n=$(grep -c '^ok' <<<"$out")
  if [[ $rc -eq 0 ]] && ! grep -q '^not ok' <<<"$out" && clean "$name"; then
    ok "$name under valgrind: $n tests, no error, nothing lost ($(cat "$T/time-$name") s)"
  else not_ok "$name under valgrind (status $rc)"; grep '^not ok' <<<"$out" | sed 's/^/# /'; fi
done

# --- the worker and the CLI ---------------------------------------------------
grep -qx worker <<<"$picked" || { tap_done; exit; }
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="vg-$$"
fresh_db valgrind
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
port=$(free_port)
python3 tests/webhooks/receiver.py --port "$port" --secret "$(webhook_secrets_of vg)" \
  --log "$T/hooks.jsonl" > "$T/recv.port" 2>>"$T/recv.err" &
_bg_pids+=($!)
wait_for "receiver up" 10 test -s "$T/recv.port"
hook="http://127.0.0.1:$port/hook"
vg migrate "$bin" migrate >/dev/null 2>"$T/migrate.err"
check "boxcar migrate under valgrind: no error, nothing lost" clean migrate

mkdir -p "$BOXCAR_DEV/work" "$BOXCAR_DEV/test-logs"
# Not through vg(): $! must be valgrind's pid (the worker's), not a subshell's.
"${VG[@]}" --log-file="$T/worker.%p" "$bin" worker --worker-id vg --work-dir "$BOXCAR_DEV/work/vg" --queues vg \
  --concurrency 2 --sandbox none --poll-interval 1s >"$BOXCAR_DEV/test-logs/valgrind-worker.log" 2>&1 &
W=$!; _bg_pids+=($W)
wait_for "the worker (under valgrind)" 120 bash -c \
  "[[ \$(psql -X -qtA '$DATABASE_URL' -c \"select count(*) from boxcar.workers where id = 'vg'\") == 1 ]]"
enq() { echo "$1" | vg enqueue "$bin" enqueue --queue vg --spec - 2>>"$T/enqueue.err"; }
out_id=$(enq "{\"command\": [\"sh\", \"-c\", \"echo out-line; echo err-line >&2\"], \"webhook\": {\"url\": \"$hook\"}}")
art_id=$(enq '{"command": ["sh", "-c", "echo kept > out.txt"], "artifact": {"storage": "vg-s", "base": "latest"}}')
fail_id=$(enq '{"command": ["sh", "-c", "exit 3"]}')
slow_id=$(enq '{"command": ["sleep", "30"], "limits": {"timeout_s": 1}}')
none_id=$(enq '{"command": ["no-such-command-here"]}')
cancel_id=$(enq '{"command": ["sleep", "60"]}')
running() { [[ $(sql "select status from boxcar.jobs where id = '$1'") == running ]]; }
wait_for "the job to cancel runs" 120 running "$cancel_id"
vg cancel "$bin" cancel "$cancel_id" >/dev/null 2>&1
finished() { [[ $(sql "select count(*) from boxcar.jobs where status not in ('succeeded', 'failed', 'cancelled')") == 0 ]]; }
wait_for "the jobs" 240 finished
is "the jobs end as they should (worker under valgrind)" \
   "$(sql "select string_agg(status || ':' || coalesce(error->>'code', ''), ' ' order by created_at) from boxcar.jobs")" \
   "succeeded: succeeded: failed:NONZERO_EXIT failed:TIMEOUT failed:NONZERO_EXIT cancelled:CANCELLED"
delivered() { [[ $(sql "select count(*) from boxcar.webhook_deliveries where status = 'delivered'") -ge 1 ]]; }
wait_for "the webhook" 120 delivered
check "its webhook was delivered, signed" grep -q '"valid": true' "$T/hooks.jsonl"
vg status "$bin" status "$out_id" >/dev/null 2>&1
vg events "$bin" events "$out_id" >/dev/null 2>&1
vg logs "$bin" logs "$out_id" >"$T/logs.out" 2>&1
check "boxcar logs shows the job's output" grep -q out-line "$T/logs.out"
vg jobs "$bin" jobs ls --queue vg >/dev/null 2>&1
vg pull "$bin" storage pull vg-s "$T/pulled" >/dev/null 2>&1
is "boxcar storage pull gets the artifact" "$(cat "$T/pulled/out.txt" 2>/dev/null)" "kept"
kill -TERM "$W"; wait "$W"; rc=$?
is "the worker stops on SIGTERM with status 0 under valgrind (99: a memcheck report)" "$rc" 0
check "the worker: no memcheck error, nothing lost" clean worker
for c in enqueue cancel status events logs jobs pull; do
  check "boxcar $c under valgrind: no error, nothing lost" clean "$c"
done
tap_done
