#!/usr/bin/env bash
# `make run`: local PostgreSQL and S3, a worker, a webhook receiver, and an
# agent-style job end to end: a Python script in a read-only volume reads a
# CSV and writes a report and a PNG chart into its artifact.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$BOXCAR_ROOT"
B=build/boxcar
demo="$BOXCAR_DEV/demo"
rm -rf "$demo"; mkdir -p "$demo/inputs"
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT

say() { printf '\n==> %s\n' "$*"; }
say "local PostgreSQL and S3 (s3rver)"
scripts/pg.sh start
eval "$(scripts/s3.sh start)"
export DATABASE_URL; DATABASE_URL=$(db_url boxcar)
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
$B migrate

sandbox=namespace
if ! $B sandbox detect | grep -q '^backend: *namespace'; then
  sandbox=none
  echo "this host cannot isolate jobs (see boxcar sandbox detect): running --sandbox none"
fi

say "a webhook receiver that checks signatures on its own"
python3 tests/webhooks/receiver.py --port 0 --port-file "$demo/hook.port" --log "$demo/hooks.log" \
    --secret "$BOXCAR_WEBHOOK_SECRET" >/dev/null 2>"$demo/receiver.err" &
pids+=($!)
for _ in $(seq 50); do [[ -s $demo/hook.port ]] && break; sleep 0.1; done
hook="http://127.0.0.1:$(cat "$demo/hook.port")/hooks/boxcar"

say "the job's inputs as a versioned volume: boxcar storage push --kind volume demo-inputs"
cp scripts/demo/analyze.py scripts/demo/sales.csv "$demo/inputs/"
$B storage push --kind volume demo-inputs "$demo/inputs"

say "a worker (--sandbox $sandbox)"
$B worker --queues demo --concurrency 2 --sandbox "$sandbox" --work-dir "$BOXCAR_DEV/work/demo" \
    --worker-id demo-worker > "$demo/worker.log" 2>&1 &
pids+=($!)

spec=$(cat <<JSON
{
  "command": ["python3", "/mnt/inputs/analyze.py"],
  "volumes": [{"name": "inputs", "mount": "/mnt/inputs", "storage": "demo-inputs"}],
  "artifact": {"storage": "demo-session", "base": "latest"},
  "env": {"REPORT": "q3"},
  "limits": {"timeout_s": 60, "memory_mb": 256},
  "webhook": {"url": "$hook"}
}
JSON
)
say "enqueue (one SQL call: select boxcar.enqueue(...)):"
echo "$spec" | sed 's/^/    /'
id=$(echo "$spec" | $B enqueue --queue demo --spec -)
echo "    job id: $id"
$B status --wait "$id" > "$demo/result.json"

say "result"
python3 - "$demo/result.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
r = job.get("result") or {}
a = r.get("artifact") or {}
print(f"    status {job['status']}, exit code {r.get('exit_code')}, {r.get('wall_ms')} ms in sandbox '{r.get('sandbox')}'")
print(f"    stdout: {r.get('stdout', '').strip()}")
if job.get("error"):
    print(f"    error: {job['error']}")
print(f"    artifact {a.get('storage')} version {a.get('sha256')}: {a.get('file_count')} files, {a.get('size')} bytes")
print(f"    presigned URL: {a.get('url')}")
PY

say "the artifact's contents: boxcar storage pull demo-session $demo/out"
$B storage pull demo-session "$demo/out"
ls -l "$demo/out" | sed 's/^/    /'
sed 's/^/    /' "$demo/out/report.md"
file_type=$(head -c 8 "$demo/out/chart.png" | od -An -c | tr -d ' ')
echo "    chart.png starts with: $file_type"

say "the webhook it received"
for _ in $(seq 100); do [[ -s $demo/hooks.log ]] && break; sleep 0.1; done
python3 - "$demo/hooks.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    h = json.loads(line)
    b = h["body"]
    print(f"    {b['type']}  webhook-id {h['webhook_id']}  signature valid: {h['valid']}")
    print(f"    data.status {b['data']['status']}, artifact {b['data']['result']['artifact']['sha256'][:16]}...")
PY
say "audit trail: boxcar events $id"
$B events "$id" | python3 -c 'import json,sys; [print("    %-19s %s" % (e["kind"], e["at"])) for e in map(json.loads, sys.stdin)]'
[[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$demo/result.json") == succeeded ]]
say "done. The local PostgreSQL and S3 keep running (make dev-down stops them)."
