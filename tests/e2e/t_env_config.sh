# A worker configured by its environment alone, no flag and no file, as in
# a container or on Kubernetes (README, Configuration): it serves
# /metrics on BOXCAR_METRICS_ADDR, logs JSON from BOXCAR_LOG_FORMAT, runs
# BOXCAR_CONCURRENCY slots on BOXCAR_QUEUES under BOXCAR_WORKER_ID, and
# its log shows neither the database password nor the webhook secret it
# was given.  A flag still wins over its variable, and a bad variable stops
# the worker with an error naming it.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_env_config
W=$(mktemp -d "${TMPDIR:-/tmp}/boxcar-envcfg.XXXXXX")
trap 'cleanup_bg; rm -rf "$W"' EXIT
port=$(free_port)
secret="whsec_$(head -c 32 /dev/urandom | base64)"

# env_worker LOG [FLAGS...]: the worker with only variables (and FLAGS).
env_worker() {
  local log=$1; shift
  bg env BOXCAR_CONFIG=/dev/null BOXCAR_METRICS_ADDR="127.0.0.1:$port" BOXCAR_LOG_FORMAT=json \
    BOXCAR_LOG_LEVEL=debug BOXCAR_WORKER_ID=env-only BOXCAR_QUEUES=envq,other \
    BOXCAR_CONCURRENCY=3 BOXCAR_POLL_INTERVAL=500ms BOXCAR_LEASE=10s \
    BOXCAR_WORK_DIR="$W/work" BOXCAR_SANDBOX="$E2E_SANDBOX" BOXCAR_WEBHOOK_SECRET="$secret" \
    "$BOXCAR" worker "$@" >"$W/$log" 2>&1
}

env_worker w.log
check "/healthz is served on BOXCAR_METRICS_ADDR" \
  wait_for "healthz" 30 curl -fs -o /dev/null "http://127.0.0.1:$port/healthz"
is "BOXCAR_CONCURRENCY: boxcar_slots" "$(metric_at "$port" boxcar_slots)" 3
registered() { [[ $(sql "select count(*) from boxcar.workers where id = 'env-only'") == 1 ]]; }
check "BOXCAR_WORKER_ID: the worker registered as env-only" wait_for "registered" 10 registered
job=$("$BOXCAR" enqueue --queue envq -- echo from-env)
"$BOXCAR" status --wait --timeout 30s "$job" >/dev/null 2>&1
is "BOXCAR_QUEUES: a job on envq runs" "$(job_field "$job" "status || ' ' || (result->>'stdout')")" "succeeded from-env"
json_lines() {
  python3 - "$W/w.log" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
for l in lines:
    json.loads(l)  # raises on a line that is not JSON
events = {json.loads(l).get("event") for l in lines}
sys.exit(0 if len(lines) >= 3 and "worker.started" in events else 1)
PY
}
check "BOXCAR_LOG_FORMAT=json: every log line is JSON, worker.started among them" json_lines
check "BOXCAR_LOG_LEVEL=debug: debug lines are logged" grep -q '"level": *"debug"' "$W/w.log"
check "the log does not show the database password" bash -c "! grep -qF 'boxcar:boxcar@' '$W/w.log'"
check "nor the webhook secret" bash -c "! grep -qF '$secret' '$W/w.log'"
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null

# A flag wins over its variable.
port=$(free_port)
env_worker w2.log --concurrency 2 --log-format text
check "with --concurrency 2 over BOXCAR_CONCURRENCY=3, /healthz comes up" \
  wait_for "healthz" 30 curl -fs -o /dev/null "http://127.0.0.1:$port/healthz"
is "and boxcar_slots is the flag's" "$(metric_at "$port" boxcar_slots)" 2
check "and --log-format text wins over BOXCAR_LOG_FORMAT=json" \
  bash -c "! head -1 '$W/w2.log' | grep -q '^{'"
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null

# A bad variable: exit 2 before connecting, naming the variable.
BOXCAR_CONCURRENCY=x timeout 10 "$BOXCAR" worker --config /dev/null >"$W/bad.log" 2>&1
is "BOXCAR_CONCURRENCY=x: the worker exits 2" "$?" 2
check "naming the variable and the value" \
  grep -q "BOXCAR_CONCURRENCY: invalid value 'x' (a number from 1 to 1024)" "$W/bad.log"

# --print-config: each setting under its source, secrets named but never
# printed, in the file's grammar: read back as the file, the same settings.
BOXCAR_CONCURRENCY=3 BOXCAR_LOG_FORMAT=json BOXCAR_CONFIG=/dev/null \
  "$BOXCAR" worker --lease 20s --print-config >"$W/p1" 2>&1
is "--print-config exits 0" "$?" 0
under() { sed -n "/^# $1/,/^\$/p" "$W/p1" | grep -qx -- "$2"; }
check "the flag's value under flags" under "From flags" "lease = 20s"
check "the variables' under variables" under "From variables" "concurrency = 3"
check "the defaults under defaults" under "Built-in defaults" "poll-interval = 5s"
check "DATABASE_URL is named" under "From variables" "# database-url: set, not shown (it may hold a password)"
check "but its password never printed" bash -c "! grep -qF 'boxcar:boxcar@' '$W/p1'"
"$BOXCAR" worker --config "$W/p1" --print-config >"$W/p2" 2>&1
is "read back as the file, it gives the same settings" \
  "$(grep -v '^#' "$W/p2" | grep . | sort)" "$(grep -v '^#' "$W/p1" | grep . | sort)"

# boxcar ui: its flags' variables are BOXCAR_UI_ and the flag's name.
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$(free_port)
bg env BOXCAR_UI_LISTEN="127.0.0.1:$port" BOXCAR_UI_TOKEN="$token" BOXCAR_UI_USER=ops \
  "$BOXCAR" ui >"$W/ui.log" 2>&1
served() { [[ $(curl -s -o /dev/null -w '%{http_code}' -u "ops:$token" "http://127.0.0.1:$port/") == 200 ]]; }
check "boxcar ui listens on BOXCAR_UI_LISTEN and takes BOXCAR_UI_USER's name" \
  wait_for "ui" 20 served
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null
BOXCAR_UI_ACTIONS=maybe BOXCAR_UI_TOKEN="$token" timeout 10 "$BOXCAR" ui >"$W/ui-bad.log" 2>&1
is "BOXCAR_UI_ACTIONS=maybe: boxcar ui exits 2" "$?" 2
check "naming the variable" grep -q "BOXCAR_UI_ACTIONS: invalid value 'maybe' (true or false)" "$W/ui-bad.log"
BOXCAR_UI_USER=a:b BOXCAR_UI_TOKEN="$token" timeout 10 "$BOXCAR" ui --user ok >"$W/ui-flag.log" 2>&1 &
ui_pid=$!
_bg_pids+=("$ui_pid")
BOXCAR_UI_USER=a:b BOXCAR_UI_TOKEN="$token" timeout 10 "$BOXCAR" ui >"$W/ui-user.log" 2>&1
is "BOXCAR_UI_USER=a:b: boxcar ui exits 2" "$?" 2
check "naming the variable" grep -q "BOXCAR_UI_USER: 1 to 64 characters, no ':'" "$W/ui-user.log"
sleep 1
check "while --user ok wins over that variable (the dashboard starts)" kill -0 "$ui_pid"
tap_done
