#!/usr/bin/env bash
# Webhook delivery under job load: N no-op jobs (default 20,000) enqueued at
# once, run by workers that also deliver their webhooks to the test receiver
# (tests/webhooks/receiver.py, which verifies every signature).  Samples the
# outbox once a second and reports deliveries/s while jobs run, deliveries/s
# after, and the age of the oldest pending delivery (the largest seen, and
# when the last job finished).  A pending delivery that is old means events
# wait behind job traffic: a receiver outage then has less of the retry
# schedule left to be survived.
#
# BENCH_WH_LOAD_JOBS (20000), BENCH_WH_LOAD_WORKERS (4),
# BENCH_WH_LOAD_CONCURRENCY (8), BENCH_WH_LOAD_ARGS (more worker options),
# BENCH_WH_LOAD_SAMPLES (file: keep the
# per-second samples there).
set -euo pipefail
source "$(dirname "$0")/../tests/lib.sh"
cd "$BOXCAR_ROOT"
N=${BENCH_WH_LOAD_JOBS:-20000}
WORKERS=${BENCH_WH_LOAD_WORKERS:-4}
CONC=${BENCH_WH_LOAD_CONCURRENCY:-8}
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
scripts/pg.sh start >/dev/null
fresh_db bench_webhooks_load
secret="whsec_$(head -c 32 /dev/urandom | base64)"
python3 tests/webhooks/receiver.py --port 0 --port-file "$tmp/port" \
    --secret "$(BOXCAR_WEBHOOK_SECRET=$secret webhook_secrets_of default)" \
    >/dev/null 2>"$BOXCAR_DEV/bench-receiver-load.err" &
_bg_pids+=($!)
wait_for "receiver" 10 test -s "$tmp/port"
hook="http://127.0.0.1:$(cat "$tmp/port")/hook"

# The jobs first, then the workers: every job is in the queue when the run
# starts, as in a burst.
sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}', webhook_url => '$hook')) from generate_series(1, $N)" >/dev/null
export BOXCAR_WEBHOOK_SECRET=$secret
t0=$(date +%s.%N)
pids=()
for w in $(seq "$WORKERS"); do
  start_worker "bench-whl-$w" --concurrency "$CONC" --sandbox none --poll-interval 500ms \
      --webhook-retry-schedule 1s,1s,1s ${BENCH_WH_LOAD_ARGS:-}
  pids+=("$WORKER_PID")
done

# One sample a second: unix time | jobs finished | delivered | pending |
# age of the oldest pending delivery in seconds (0 when none).
sample() {
  psql -XqtA "$DATABASE_URL" -c "
    select extract(epoch from clock_timestamp()),
           (select count(*) from boxcar.jobs where status in ('succeeded', 'failed')),
           (select count(*) from boxcar.webhook_deliveries where status = 'delivered'),
           (select count(*) from boxcar.webhook_deliveries where status = 'pending'),
           coalesce((select extract(epoch from clock_timestamp() - min(created_at))
                       from boxcar.webhook_deliveries where status = 'pending'), 0)"
}
deadline=$(( $(date +%s) + ${BENCH_WH_LOAD_TIMEOUT:-1800} ))
while :; do
  s=$(sample) || { sleep 1; continue; }
  echo "$s" >> "$tmp/samples"
  IFS='|' read -r _ fin del _ _ <<<"$s"
  [[ $fin -ge $N && $del -ge $N ]] && break
  (( $(date +%s) < deadline )) || { echo "bench webhooks-load: timed out" >&2; break; }
  sleep 1
done
kill -TERM "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
[[ -n ${BENCH_WH_LOAD_SAMPLES:-} ]] && cp "$tmp/samples" "$BENCH_WH_LOAD_SAMPLES"
failed=$(sql "select count(*) from boxcar.webhook_deliveries where status = 'failed'")
python3 - "$tmp/samples" "$N" "$t0" "$WORKERS" "$CONC" "$failed" <<'PY'
import sys
path, n, t0, workers, conc, failed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), \
    sys.argv[4], sys.argv[5], int(sys.argv[6])
rows = [tuple(float(x) for x in l.split("|")) for l in open(path) if l.strip()]
# The job phase ends at the first sample where every job has finished.
end = next((r for r in rows if r[1] >= n), rows[-1])
first = rows[0]
during = (end[2] - first[2]) / max(end[0] - first[0], 1e-9)
last = rows[-1]
after = f"{(last[2] - end[2]) / (last[0] - end[0]):.0f}/s" if last[0] > end[0] else "-"
max_age = max(r[4] for r in rows)
print(f"webhooks under load: {n} no-op jobs, {workers} worker(s) x --concurrency {conc}, "
      "--sandbox none, Python receiver checking every signature")
print(f"webhooks under load: jobs done in {end[0] - t0:.1f} s ({n / (end[0] - t0):.0f} jobs/s); "
      f"deliveries while jobs ran {during:.0f}/s, after {after} "
      f"({last[2] - end[2]:.0f} left when the jobs were done)")
print(f"webhooks under load: oldest pending delivery: max {max_age:.1f} s, "
      f"{end[4]:.1f} s when the last job finished; all delivered {last[0] - t0:.1f} s "
      f"after the start; failed: {failed}")
PY
