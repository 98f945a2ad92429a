#!/usr/bin/env bash
# Webhook delivery benchmark: deliveries per second from the outbox to a
# local receiver (tests/webhooks/receiver.py, which verifies every
# signature), and the delay from a job's completion to the receiver getting
# its webhook, p50/p99.  One run; bounded in time.
set -euo pipefail
source "$(dirname "$0")/../tests/lib.sh"
cd "$BOXCAR_ROOT"
N=${BENCH_WEBHOOKS:-2000}
RATE=${BENCH_RATE:-20}
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
scripts/pg.sh start >/dev/null
fresh_db bench_webhooks
secret="whsec_$(head -c 32 /dev/urandom | base64)"
python3 tests/webhooks/receiver.py --port 0 --port-file "$tmp/port" --log "$tmp/recv.log" \
    --secret "$(BOXCAR_WEBHOOK_SECRET=$secret webhook_secrets_of default lat)" \
    >/dev/null 2>"$BOXCAR_DEV/bench-receiver.err" &
_bg_pids+=($!)
wait_for "receiver" 10 test -s "$tmp/port"
hook="http://127.0.0.1:$(cat "$tmp/port")/hook"

# Phase 1: N finished jobs, their deliveries pending (a worker without a
# secret runs the jobs but delivers nothing), then one worker drains them.
start_worker bench-wh-jobs --concurrency 8 --sandbox none --poll-interval 500ms
sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}', webhook_url => '$hook')) from generate_series(1, $N)" >/dev/null
wait_for "jobs" 300 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.jobs where status = 'succeeded'\") == $N ]]"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" || true
export BOXCAR_WEBHOOK_SECRET=$secret
t0=$(date +%s.%N)
start_worker bench-wh-deliver --concurrency 1 --sandbox none --webhook-concurrency 8 --webhook-retry-schedule 1s,1s,1s
wait_for "delivered" 300 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.webhook_deliveries where status = 'delivered'\") == $N ]]"
t1=$(date +%s.%N)
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" || true

# Phase 2: latency, jobs enqueued one at a time at a steady rate.
: > "$tmp/recv.log"
start_worker bench-wh-lat --queues lat --concurrency 4 --sandbox none --webhook-concurrency 4 --webhook-retry-schedule 1s,1s,1s
M=$((RATE * 10))
for i in $(seq "$M"); do
  "$BOXCAR" enqueue --queue lat --webhook-url "$hook" -- true >/dev/null &
  sleep "$(python3 -c "print(1/$RATE)")"
done
wait_for "latency deliveries" 120 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.webhook_deliveries d join boxcar.jobs j on j.id = d.job_id where j.queue = 'lat' and d.status = 'delivered'\") == $M ]]"
sql "select j.id, extract(epoch from j.finished_at) from boxcar.jobs j where j.queue = 'lat'" > "$tmp/finished"
python3 - "$tmp/recv.log" "$tmp/finished" "$N" "$t0" "$t1" <<'PY'
import json, sys
log, fin, n, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
finished = dict(l.strip().split("|") for l in open(fin) if l.strip())
delays, invalid = [], 0
for line in open(log):
    r = json.loads(line)
    invalid += not r["valid"]
    job = r["body"]["data"]["job_id"]
    if job in finished:
        delays.append((r["received_at"] - float(finished[job])) * 1000)
delays.sort()
q = lambda p: delays[min(len(delays) - 1, int(p * len(delays)))]
print(f"webhooks: {n} deliveries drained in {t1 - t0:.2f} s = {n / (t1 - t0):.0f} deliveries/s "
      "(one worker, --webhook-concurrency 8, Python receiver checking every signature)")
print(f"webhooks: job completion -> receipt over {len(delays)} jobs: "
      f"p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {delays[-1]:.1f} ms; invalid signatures: {invalid}")
PY
