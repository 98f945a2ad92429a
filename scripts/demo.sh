#!/usr/bin/env bash
# `make run`: a local database, a worker, and one job end to end.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$BOXCAR_ROOT"

scripts/pg.sh start
export DATABASE_URL
DATABASE_URL=$(db_url boxcar)
echo "==> database: $(build/boxcar --help >/dev/null; db_url boxcar | sed 's#:boxcar@#:***@#')"
build/boxcar migrate

log="$BOXCAR_DEV/demo-worker.log"
echo "==> starting a worker (log: $log)"
build/boxcar worker --queues demo --concurrency 2 --sandbox none \
    --work-dir "$BOXCAR_DEV/work/demo" --worker-id demo-worker >"$log" 2>&1 &
worker=$!
trap 'kill -TERM $worker 2>/dev/null; wait $worker 2>/dev/null' EXIT

spec=$(cat <<'JSON'
{
  "script": "python3 - <<'PY'\nimport csv, io, statistics, sys\nrows = [{'city': c, 'temp': t} for c, t in [('Oslo', 4.1), ('Lima', 19.3), ('Pune', 27.8), ('Oslo', 6.0), ('Lima', 18.1)]]\nby = {}\nfor r in rows:\n    by.setdefault(r['city'], []).append(r['temp'])\nprint('city  mean_temp')\nfor city, temps in sorted(by.items()):\n    print(f'{city:5} {statistics.mean(temps):9.2f}')\nprint('computed by', sys.executable, file=sys.stderr)\nPY",
  "env": {"REPORT": "weather"},
  "limits": {"timeout_s": 30}
}
JSON
)
echo "==> enqueueing a job in queue 'demo' (one SQL call: select boxcar.enqueue(...))"
id=$(printf '%s' "$spec" | build/boxcar enqueue --queue demo --spec -)
echo "    job id: $id"
echo "==> waiting for the result (boxcar status --wait $id)"
build/boxcar status --wait "$id" > "$BOXCAR_DEV/demo-result.json"
python3 - "$BOXCAR_DEV/demo-result.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
r = job.get("result") or {}
print(f"    status: {job['status']}  attempts: {job['attempts']}  exit_code: {r.get('exit_code')}  wall: {r.get('wall_ms')} ms")
print("    stdout:")
for line in (r.get("stdout") or "").splitlines():
    print("      " + line)
print("    stderr: " + (r.get("stderr") or "").strip())
PY
echo "==> audit trail (boxcar events $id)"
build/boxcar events "$id" | sed 's/^/    /'
[[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$BOXCAR_DEV/demo-result.json") == succeeded ]]
echo "==> done; the local database keeps running (make dev-down stops it)"
