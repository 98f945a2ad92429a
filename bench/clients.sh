#!/usr/bin/env bash
# The clients' wait: a no-op job's enqueue → result received by the client,
# p50/p99, N jobs one after another (BENCH_CLIENT_JOBS, default 300), one
# worker (--sandbox none; BENCH_CLIENT_SANDBOX=namespace for the sandbox).
# Beside it: the worker's own floor from the job's row (created → started,
# created → finished: no client can see the result sooner), and the same
# loop reading boxcar.job_json every 50 ms instead of waiting on LISTEN.
# One run; bounded in time.
set -euo pipefail
source "$(dirname "$0")/../tests/lib.sh"
cd "$BOXCAR_ROOT"
N=${BENCH_CLIENT_JOBS:-300}
SANDBOX=${BENCH_CLIENT_SANDBOX:-none}
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
scripts/pg.sh start >/dev/null
scripts/deps.sh all
make -s -j2 all >/dev/null
fresh_db bench_clients
start_worker bench-clients --concurrency 2 --sandbox "$SANDBOX" --poll-interval 1s --queues node-listen,node-poll
wait_for "worker" 15 sql_true "select exists (select from boxcar.workers)"

timeout 600 node bench/clients_node.mjs listen "$N" node-listen > "$tmp/listen.json"
timeout 600 node bench/clients_node.mjs poll "$N" node-poll > "$tmp/poll.json"
sql "select id, extract(epoch from started_at - created_at) * 1000, extract(epoch from finished_at - created_at) * 1000
       from boxcar.jobs where queue in ('node-listen', 'node-poll')" > "$tmp/rows"
python3 - "$tmp/listen.json" "$tmp/poll.json" "$tmp/rows" <<'PY'
import json, sys
rows = {}
for l in open(sys.argv[3]):
    if l.strip():
        i, s, f = l.strip().split("|")
        rows[i] = (float(s), float(f))
def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]
def fmt(v):
    return f"p50 {q(v, 0.5):6.2f} ms  p99 {q(v, 0.99):6.2f} ms"
for path in sys.argv[1:3]:
    d = json.load(open(path))
    ms = [m for _, m in d["jobs"]]
    started = [rows[i][0] for i, _ in d["jobs"] if i in rows]
    finished = [rows[i][1] for i, _ in d["jobs"] if i in rows]
    how = "waitFor (LISTEN)        " if d["mode"] == "listen" else "job_json every 50 ms    "
    print(f"clients: node {how} enqueue -> result received: {fmt(ms)}  ({len(ms)} no-op jobs, one at a time)")
    print(f"clients:   its jobs' own rows: created -> started {fmt(started)}; created -> finished {fmt(finished)} (the floor)")
PY
