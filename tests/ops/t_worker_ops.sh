# Sourced by tests/ops/run.sh: a running worker as an operator sees it.
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="ops-$$"
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
fresh_db ops_worker
mport=$(free_port)
M="http://127.0.0.1:$mport"
status_of() { curl -s -o /dev/null -w '%{http_code}' "$1"; }
metric() { curl -sf "$M/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
start_worker ops-a --concurrency 2 --lease 3s --poll-interval 500ms --metrics-addr "127.0.0.1:$mport" \
    --log-format json --drain-timeout 20s --sandbox "$E2E_SANDBOX"
opsa=$WORKER_PID
check "/healthz answers 200" wait_for "healthz" 10 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$M/healthz') == 200 ]]"
check "/readyz answers 200 once connected" wait_for "readyz" 10 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$M/readyz') == 200 ]]"

# Counters against the jobs actually run.
hook_port=$(free_port)
ids=()
for i in 1 2 3 4 5; do ids+=("$("$BOXCAR" enqueue -- true)"); done
for i in 1 2; do ids+=("$("$BOXCAR" enqueue -- sh -c 'exit 2')"); done
ids+=("$(echo '{"script": "echo data > out.txt", "artifact": {"storage": "ops-art"}, "webhook": {"url": "http://127.0.0.1:'"$hook_port"'/h"}}' | "$BOXCAR" enqueue --spec -)")
for id in "${ids[@]}"; do "$BOXCAR" status --wait "$id" >/dev/null; done
is "jobs claimed" "$(metric 'boxcar_jobs_claimed_total{queue="default"}')" "8"
is "jobs succeeded" "$(metric 'boxcar_jobs_finished_total{queue="default",outcome="succeeded"}')" "6"
is "jobs failed" "$(metric 'boxcar_jobs_finished_total{queue="default",outcome="failed"}')" "2"
is "errors by code" "$(metric 'boxcar_job_errors_total{queue="default",code="NONZERO_EXIT"}')" "2"
is "job duration histogram counts every run" "$(metric 'boxcar_job_duration_seconds_count{queue="default"}')" "8"
is "pickup latency histogram counts every claim" "$(metric 'boxcar_job_pickup_latency_seconds_count{queue="default"}')" "8"
check "bytes uploaded are counted" bash -c "[[ \$(curl -sf '$M/metrics' | awk '\$1 == \"boxcar_transfer_bytes_total{direction=\\\"upload\\\",kind=\\\"artifact\\\"}\" { print \$2 }') -gt 0 ]]"
is "running jobs gauge" "$(metric boxcar_jobs_running)" "0"
is "free slots gauge" "$(metric boxcar_slots_free)" "2"
if [[ $E2E_SANDBOX == namespace ]]; then
  is "sandbox overhead is observed per run" "$(metric boxcar_sandbox_overhead_seconds_count)" "8"
fi
check "webhook attempts are counted by outcome" wait_for "webhook metric" 10 bash -c "curl -sf '$M/metrics' | grep -q '^boxcar_webhook_deliveries_total{outcome=\"retry\"} [1-9]'"
sql "select boxcar.enqueue('ops-depth', '{\"command\":[\"true\"]}') from generate_series(1, 3)" >/dev/null
check "queue depth of a queue with jobs queued" wait_for "depth" 5 bash -c "curl -sf '$M/metrics' | grep -q '^boxcar_queue_depth{queue=\"ops-depth\",state=\"queued\"} 3'"
check "a served queue with nothing queued or running shows as empty" bash -c "curl -sf '$M/metrics' | grep -q '^boxcar_queue_depth{queue=\"default\",state=\"queued\"} 0\$'"
is "this lone worker leads housekeeping" "$(metric boxcar_is_leader)" "1"

# A volume this worker has not cached: its download is counted under kind="volume".
voldir=$(mktemp -d); echo "hello $$ $(date +%s%N)" > "$voldir/greeting.txt"   # new content: never in a cache left by an earlier run
"$BOXCAR" storage push --kind volume ops-vol "$voldir" >/dev/null; rm -rf "$voldir"
vid=$(echo '{"command": ["cat", "/mnt/v/greeting.txt"], "volumes": [{"name": "v", "mount": "/mnt/v", "storage": "ops-vol"}]}' | "$BOXCAR" enqueue --spec -)
is "a job with a volume succeeds" "$("$BOXCAR" status --wait "$vid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" "succeeded"
check "volume downloads are counted" bash -c "[[ \$(curl -sf '$M/metrics' | awk '\$1 == \"boxcar_transfer_bytes_total{direction=\\\"download\\\",kind=\\\"volume\\\"}\" { print \$2 }') -gt 0 ]]"

# Readiness follows the database.
"$BOXCAR_ROOT/scripts/pg.sh" stop
check "/readyz is 503 while the database is down" wait_for "not ready" 10 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$M/readyz') == 503 ]]"
is "with the reason" "$(curl -s "$M/readyz")" "database unreachable"
is "/healthz stays 200" "$(status_of "$M/healthz")" "200"
"$BOXCAR_ROOT/scripts/pg.sh" start
check "/readyz is 200 again once it is back" wait_for "ready" 15 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' '$M/readyz') == 200 ]]"

# Logs: JSON lines with ids, and no secret anywhere.
log="$BOXCAR_DEV/test-logs/ops-a.log"
check "every log line is a JSON object with ts, level and event" python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert {"ts", "level", "event"} <= o.keys(), line
' "$log"
check "job events carry job id, queue and worker id" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
fin = [r for r in rows if r["event"] == "job.finished"]
assert fin and all(r.get("job_id") and r.get("queue") and r.get("worker_id") == "ops-a" for r in fin)
' "$log"
check "numbers are JSON numbers, booleans booleans, and absent fields absent (never \"\")" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(v != "" for r in rows for v in r.values()), [r for r in rows if "" in r.values()]
def typed(event, key, t):
    got = [r for r in rows if r["event"] == event]
    assert got, event
    assert all(type(r[key]) is t for r in got if key in r), (event, key)
    return got
typed("worker.started", "concurrency", int)
fin = typed("job.finished", "attempt", int)
assert all("error_code" not in r for r in fin if r["status"] == "succeeded")
assert any("error_code" in r for r in fin if r["status"] == "failed")
typed("db.lost", "retry_ms", int)
retry = typed("webhook.retry", "attempt", int)
assert all("http_status" not in r for r in retry), "no response, no http_status"
' "$log"
check "the log holds no password, S3 key, signature or webhook secret" bash -c "! grep -E 'boxcar:boxcar|S3RVER|X-Amz-Signature|Signature=|${BOXCAR_WEBHOOK_SECRET#whsec_}|whsec_' '$log'"

# Leader election among three replicas, and failover.
start_worker ops-b --concurrency 1 --lease 3s --poll-interval 500ms --sandbox "$E2E_SANDBOX"; opsb=$WORKER_PID
start_worker ops-c --concurrency 1 --lease 3s --poll-interval 500ms --sandbox "$E2E_SANDBOX"; opsc=$WORKER_PID
sleep 2
is "exactly one replica leads" "$(sql "select count(*) from boxcar.worker_status where is_leader")" "1"
is "the first one keeps it" "$(sql "select worker_id from boxcar.leaders")" "ops-a"
kill -9 "$opsa"; { wait "$opsa"; } 2>/dev/null
check "another replica takes over after the lease" wait_for "failover" 15 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select worker_id from boxcar.leaders where expires_at > now()\") =~ ^ops-(b|c)$ ]]"
is "still exactly one" "$(sql "select count(*) from boxcar.worker_status where is_leader")" "1"
check "the dead replica is reported gone once it misses its heartbeats" wait_for "gone" 10 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select state from boxcar.worker_status where id = 'ops-a'\") == gone ]]"
is "while the live ones are running" "$(sql "select string_agg(state, ',' order by id) from boxcar.worker_status where id in ('ops-b', 'ops-c')")" "running,running"

# Drain on demand from another host: via the database.
long=$("$BOXCAR" enqueue --queue ops-long -- sleep 1)
kill -TERM "$opsc"; wait "$opsc"
"$BOXCAR" worker drain ops-b >/dev/null
wait "$opsb"
is "boxcar worker drain makes that replica exit 0" "$?" "0"
is "its state is stopped" "$(sql "select state from boxcar.worker_status where id = 'ops-b'")" "stopped"
check "draining an unknown worker is an error" bash -c "! '$BOXCAR' worker drain no-such-worker 2>/dev/null"
