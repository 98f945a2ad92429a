# Shared helpers for the shell test suites: TAP output, fresh databases,
# and the built binaries.  Source it from a suite's scripts.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
# The S3 a test starts: s3rver (scripts/s3.sh), or Ceph's RADOS Gateway
# (scripts/rgw.sh), which checks signatures, with BOXCAR_TEST_S3=rgw.
S3SH="$BOXCAR_ROOT/scripts/s3.sh"
[[ ${BOXCAR_TEST_S3:-s3rver} == rgw ]] && S3SH="$BOXCAR_ROOT/scripts/rgw.sh"
# A caller may put a wrapper in front of the CLI (the VM suite does).
BOXCAR=${BOXCAR_WRAPPER:-$BOXCAR_ROOT/${BOXCAR_BUILD:-build}/boxcar}
BOXCAR_SANDBOX="$BOXCAR_ROOT/${BOXCAR_BUILD:-build}/boxcar-sandbox"
# Not exported: to a worker, BOXCAR_SANDBOX is its --sandbox backend.
export BOXCAR
export -n BOXCAR_SANDBOX
# The tests' webhook receivers and volume servers listen on 127.0.0.1, which
# a worker refuses to reach for a job spec's URL by default (SSRF guard):
# every worker the tests start opts in.  tests/e2e/t_url_guard.sh unsets it
# to check the default.
export BOXCAR_ALLOW_PRIVATE_URLS=1

_tap_n=0
_tap_failed=0
ok()      { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
not_ok()  { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
skip()    { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $* # SKIP"; }
diag()    { echo "# $*"; }
# check DESC CMD...: ok when CMD succeeds.
check()   { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
# is DESC GOT WANT
is() {
  if [[ "$2" == "$3" ]]; then ok "$1"; else not_ok "$1"; diag "  got: '$2'"; diag "  want: '$3'"; fi
}
tap_done() { echo "1..$_tap_n"; [[ $_tap_failed -eq 0 ]]; }

# fresh_db NAME: drops and recreates database NAME, migrates it, and sets
# DATABASE_URL to it.
fresh_db() {
  "$BOXCAR_ROOT/scripts/pg.sh" dropdb "$1"
  "$BOXCAR_ROOT/scripts/pg.sh" createdb "$1"
  DATABASE_URL=$(db_url "$1")
  export DATABASE_URL
  "$BOXCAR" migrate >/dev/null
}

# sql QUERY [ARGS]: runs QUERY against DATABASE_URL, unaligned, no headers.
sql() { psql -X -qtA -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "$@"; }

# wait_for DESC SECONDS CMD...: polls CMD every 0.1 s until it succeeds.
wait_for() {
  local secs=$2; shift 2
  local deadline=$(( $(date +%s%N) / 1000000 + secs * 1000 ))
  while (( $(date +%s%N) / 1000000 < deadline )); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# Background processes started by a test are killed when it exits.
_bg_pids=()
bg() { "$@" & _bg_pids+=($!); }
cleanup_bg() {
  local p
  # `|| true`: some are gone already, and callers may run under set -e.
  for p in "${_bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.2
  for p in "${_bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  { wait; } 2>/dev/null || true
}
trap cleanup_bg EXIT

# remote_host PREFIX: a "remote host" for network tests (needs root): the
# network namespace $ns behind a veth pair, $va on this side ($net.1/24),
# $vb inside ($remote = $net.2), its loopback up.  remote_host_down
# removes it and whatever runs in it.
remote_host() {
  ns=$1$$ va=$1$$a vb=$1$$b
  net="10.$((200 + RANDOM % 50)).$((RANDOM % 250))"
  remote=$net.2
  ip netns add "$ns"
  ip link add "$va" type veth peer name "$vb"
  ip link set "$vb" netns "$ns"
  ip addr add "$net.1/24" dev "$va"
  ip link set "$va" up
  ip -n "$ns" addr add "$remote/24" dev "$vb"
  ip -n "$ns" link set "$vb" up
  ip -n "$ns" link set lo up
}
remote_host_down() {
  [[ -n ${ns:-} ]] || return 0
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  ip link del "$va" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  return 0
}

# start_worker NAME [ARGS...]: a worker in the background on DATABASE_URL,
# logging to $BOXCAR_DEV/test-logs/NAME.log; its pid in WORKER_PID.
start_worker() {
  local name=$1; shift
  mkdir -p "$BOXCAR_DEV/test-logs" "$BOXCAR_DEV/work"
  "$BOXCAR" worker --worker-id "$name" --work-dir "$BOXCAR_DEV/work/$name" "$@" \
      >"$BOXCAR_DEV/test-logs/$name.log" 2>&1 &
  WORKER_PID=$!
  _bg_pids+=("$WORKER_PID")
}

# metric_at PORT NAME{LABELS}: that sample's value on a worker's /metrics
# at 127.0.0.1:PORT, 0 when absent (or the worker is not up).
metric_at() {
  curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }'
}

# stack_of VERSION: the name a worker's caches give that version's tree:
# its layer stack (storage_stack_id), the layer itself for one layer,
# else the SHA-256 of "boxcar-stack 1\n" and each layer's hex on a line.
stack_of() {
  local l; l=$(sql "select array_to_string(layers, ' ') from boxcar.storage_versions where sha256 = '$1' limit 1")
  set -- $l
  if [[ $# -eq 1 ]]; then echo "$1"; else { printf 'boxcar-stack 1\n'; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1; fi
}

# sql_true QUERY: succeeds when the query's one value is true.
sql_true() { [[ $(sql "$1") == t ]]; }

# job_field ID EXPR: a SQL expression over the job row j.
job_field() { sql "select $2 from boxcar.jobs j where id = '$1'"; }

# The e2e suite runs on the isolating backend unless told otherwise.
: "${E2E_SANDBOX:=namespace}"
export E2E_SANDBOX

# netns_hosts DB COUNT: for tests of workers as separate hosts
# (scripts/replicas-net.sh): skips the test unless root with ip netns;
# else a fresh DB, COUNT network namespaces on a bridge, torn down at exit,
# and NETNS_URL, the DB's URL as seen from them.
netns_hosts() {
  source "$BOXCAR_ROOT/scripts/replicas-net.sh"
  if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
    skip "workers in network namespaces need root and ip netns"; tap_done; exit
  fi
  fresh_db "$1"
  trap 'cleanup_bg; rn_down >/dev/null 2>&1' EXIT
  rn_up "$2" >/dev/null
  NETNS_URL=$(rn_url "$1")
}

# artifact_base: what `boxcar sandbox detect` says of artifact bases:
# "overlay ...", or "extracted ..." and why.
artifact_base() { "$BOXCAR" sandbox detect | sed -n 's/^artifact base: *//p'; }
# extracted_for_own_ids BASE: BASE says bases are extracted because each
# sandbox's job has host ids of its own (as root; docs/tenants.md).
extracted_for_own_ids() {
  [[ $1 == "extracted into each job's workspace: each sandbox's job has host ids of its own"* ]]
}

# webhook_secrets_of SCOPE...: the secrets that sign those scopes' webhook
# deliveries now, space-separated (a receiver's --secret), as the operator
# hands them to tenants: `boxcar webhooks secret`, which needs the master
# key in BOXCAR_WEBHOOK_SECRET and a migrated DATABASE_URL.
webhook_secrets_of() {
  local s
  for s in "$@"; do "$BOXCAR" webhooks secret --scope "$s" | awk '/^whsec_/ { print $1 }'; done | paste -sd' '
}
