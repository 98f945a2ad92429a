#!/usr/bin/env bash
# `make run`: local PostgreSQL and S3, a worker, a webhook receiver, and an
# agent-style job end to end: a Python script in a read-only volume reads a
# CSV and writes a report and a PNG chart into its artifact.
#
# It never hangs: when the worker dies it stops with the worker's last log
# lines, and it gives up when the job has not finished BOXCAR_DEMO_TIMEOUT
# seconds (default 180) after the demo started.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$BOXCAR_ROOT"
# BOXCAR_BUILD: the build a test suite runs (build-san ...), as tests/lib.sh.
B=${BOXCAR_BUILD:-build}/boxcar
demo="$BOXCAR_DEV/demo"
deadline=$(( $(date +%s) + ${BOXCAR_DEMO_TIMEOUT:-180} ))
rm -rf "$demo"; mkdir -p "$demo/inputs"
pids=()
# The worker and the receiver: TERM, then KILL what is left after 10 s (a
# worker waits for a running job on TERM).
any_alive() { local p; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
stop_children() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do any_alive || break; sleep 0.1; done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_children EXIT
trap 'exit 130' INT TERM

say() { printf '\n==> %s\n' "$*"; }
# give_up WHY: says why, shows the worker's last log lines, exits 1.
give_up() {
  printf '\ndemo failed: %s\n' "$1" >&2
  if [[ -s $demo/worker.log ]]; then
    echo "the worker's last log lines ($demo/worker.log):" >&2
    tail -n 20 "$demo/worker.log" | sed 's/^/    /' >&2
  fi
  exit 1
}
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

say "a webhook receiver that checks signatures on its own, with its scope's secret"
# BOXCAR_WEBHOOK_SECRET is the master key: each scope (tenant) gets its own.
$B webhooks secret --scope demo
python3 tests/webhooks/receiver.py --port 0 --port-file "$demo/hook.port" --log "$demo/hooks.log" \
    --secret "$($B webhooks secret --scope demo | awk '/^whsec_/ { print $1 }')" >/dev/null 2>"$demo/receiver.err" &
pids+=($!)
for _ in $(seq 50); do [[ -s $demo/hook.port ]] && break; sleep 0.1; done
[[ -s $demo/hook.port ]] || give_up "the webhook receiver did not start: $(tail -n 5 "$demo/receiver.err")"
hook="http://127.0.0.1:$(cat "$demo/hook.port")/hooks/boxcar"

say "the job's inputs as a versioned volume of scope demo (the queue's): boxcar storage push --kind volume --scope demo demo-inputs"
cp scripts/demo/analyze.py scripts/demo/sales.csv "$demo/inputs/"
if ! $B storage push --kind volume --scope demo demo-inputs "$demo/inputs" 2>"$demo/push.err"; then
  # A database from before storages had scopes gave demo-inputs to scope
  # "default" (docs/tenants.md): keep it there and share it with demo.
  grep -q 'another scope\|owned by\|scope' "$demo/push.err" || give_up "storage push: $(cat "$demo/push.err")"
  say "demo-inputs belongs to scope default (made before scopes): pushed there and shared with demo"
  $B storage push --kind volume demo-inputs "$demo/inputs"
  $B storage share demo-inputs demo
fi

say "a worker (--sandbox $sandbox, --allow-private-urls)"
# --allow-private-urls: the demo's webhook receiver listens on 127.0.0.1,
# an address a worker refuses to post to unless told otherwise (see README,
# "Requests the worker makes").  Never on a worker that runs others' specs.
echo "the demo's webhook receiver is on 127.0.0.1: the worker runs with --allow-private-urls"
$B worker --queues demo --concurrency 2 --sandbox "$sandbox" --work-dir "$BOXCAR_DEV/work/demo" \
    --worker-id demo-worker --allow-private-urls > "$demo/worker.log" 2>&1 &
worker=$!
pids+=("$worker")

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
# Short waits, so that a worker that died is noticed at once.
while :; do
  rc=0
  $B status --wait --timeout 2s "$id" > "$demo/result.json" 2>"$demo/status.err" || rc=$?
  [[ $rc -eq 0 ]] && break
  [[ $rc -eq 124 ]] || give_up "boxcar status: $(cat "$demo/status.err")"
  if ! kill -0 "$worker" 2>/dev/null; then
    wait "$worker" && rc=0 || rc=$?
    give_up "the worker exited (status $rc) before the job finished"
  fi
  (( $(date +%s) < deadline )) ||
    give_up "the job had not finished ${BOXCAR_DEMO_TIMEOUT:-180} s after the demo started ($(cat "$demo/status.err"))"
done

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
print(f"    artifact {a.get('storage')} version {a.get('sha256')}: {a.get('file_count')} files, "
      f"{a.get('layers')} layer(s), {a.get('size')} bytes stored for it")
if a.get("url"):
    print(f"    presigned URL of the whole tree: {a['url']}")
else:
    print(f"    whole tree as one tarball: boxcar storage url {a.get('storage')}@{a.get('sha256')}")
PY

status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$demo/result.json")
[[ $status == succeeded ]] || give_up "the job ended $status"

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
say "done. The local PostgreSQL and S3 keep running (make dev-down stops them)."
