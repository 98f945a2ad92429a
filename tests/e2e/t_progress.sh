# Progress reports (issue 49) through real workers and sandboxes: a job
# writes JSON objects, one a line, to $BOXCAR_PROGRESS, in a cold
# sandbox, a warm one and a session; each stored report is a job_events
# row of kind progress, a NOTIFY on boxcar_job_updates and (opted in) a
# signed job.progress webhook; at most one report per 500 ms is stored,
# the latest winning, the last always; hostile input (a 1 MB line, lines
# that are not JSON or not objects) is refused with one event per reason
# and never holds the job; the channel gives the job nothing else of the
# host.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]] || ! grep -qw overlay /proc/filesystems; then
  skip "progress in cold, warm and session sandboxes needs the namespace backend as root"; tap_done; exit 0
fi
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-progress-$$"
fresh_db e2e_progress
tmp=$(mktemp -d)
trap 'cleanup_bg; [[ -n ${KEEP_TMP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
PORT=$(free_port)
metric() { metric_at "$PORT" "$1"; }

# Every NOTIFY on boxcar_job_updates, one payload a line, from a psql
# that asks something every 100 ms (psql prints notifications after a
# command), for as long as this script runs (killing the subshell alone
# would leave the pipeline behind, holding the suite's log open).
( { echo 'listen boxcar_job_updates;'; while kill -0 $$ 2>/dev/null && sleep 0.1; do echo 'select 1;'; done; } |
    psql -X -qtA "$DATABASE_URL" 2>/dev/null |
    sed -un 's/^Asynchronous notification "boxcar_job_updates" with payload "\(.*\)" received.*/\1/p' \
      > "$tmp/notes" ) &
_bg_pids+=($!)

start_worker pr-cold --concurrency 2 --lease 5s --poll-interval 200ms --sandbox namespace \
  --warm-sandboxes 0 --queues cold,ses
start_worker pr-warm --concurrency 1 --lease 5s --poll-interval 200ms --sandbox namespace \
  --warm-sandboxes 1 --queues warm --metrics-addr "127.0.0.1:$PORT"
warm_ready() { (( $(metric 'boxcar_warm_sandboxes{state="ready"}') >= 1 )); }
wait_for "warm sandbox ready" 30 warm_ready

enq() { "$BOXCAR" enqueue --queue "$1" --spec - ; }
wait_job() { "$BOXCAR" status --wait --timeout 60s "$1" >/dev/null; }
st() { job_field "$1" "status"; }
reports() { sql "select count(*) from boxcar.job_events where job_id = '$1' and kind = 'progress'"; }
latest() { sql "select boxcar.job_json('$1') -> 'progress'"; }
events_of() { sql "select count(*) from boxcar.job_events where job_id = '$1' and kind = '$2'"; }
out_words() { job_field "$1" "result->>'stdout'" | sed '/^$/d' | paste -sd' '; }

# 10 reports, 100 ms apart: a few stored, the last (100) among them.
REPORTER='for i in 1 2 3 4 5 6 7 8 9 10; do echo "{\"pct\": $((i * 10))}" > "$BOXCAR_PROGRESS"; sleep 0.1; done; echo done'
check_path() {   # NAME ID
  local name=$1 id=$2 n
  is "$name: the job succeeded" "$(st "$id") $(job_field "$id" "result->>'stdout'")" "succeeded done"
  n=$(reports "$id")
  check "$name: some reports stored, fewer than written ($n of 10, at most one per 500 ms)" \
    test "$n" -ge 2 -a "$n" -le 6
  is "$name: the last report is stored and job_json shows it" "$(latest "$id")" '{"pct": 100}'
  is "$name: job_progress lists them in order, with the attempt" \
    "$(sql "select bool_and(attempt = 1) and count(*) = $n and array_agg(seq order by seq) = array_agg(seq) from boxcar.job_progress('$id')")" "t"
  wait_for "$name: notifications" 5 bash -c "[[ \$(grep -c '\"id\":\"$id\".*\"progress\"' '$tmp/notes') -ge $n ]]"
  is "$name: one NOTIFY per stored report, naming its seq" \
    "$(grep "\"id\":\"$id\"" "$tmp/notes" | grep -o '"progress":[0-9]*' | cut -d: -f2 | paste -sd,)" \
    "$(sql "select string_agg(seq::text, ',' order by seq) from boxcar.job_progress('$id')")"
  is "$name: the payload is compact, with the queue and status running" \
    "$(grep "\"id\":\"$id\"" "$tmp/notes" | head -1 | sed 's/"progress":[0-9]*/"progress":N/')" \
    "{\"id\":\"$id\",\"queue\":\"$3\",\"status\":\"running\",\"progress\":N}"
}

# ---- Cold ----
id=$(jq -cn --arg s "$REPORTER" '{script: $s}' | enq cold); wait_job "$id"
check_path cold "$id" cold

# ---- Warm ----
warm0=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
id=$(jq -cn --arg s "$REPORTER" '{script: $s}' | enq warm); wait_job "$id"
is "warm: the job started in a warm sandbox" "$(( $(metric 'boxcar_sandbox_starts_total{path="warm"}') - warm0 ))" 1
check_path warm "$id" warm

# ---- Session: two jobs, each its own channel ----
id=$(jq -cn --arg s "$REPORTER" '{session: {id: "p1"}, limits: {disk_mb: 128}, command: ["sh", "-c", $s]}' | enq ses)
wait_job "$id"
check_path session "$id" ses
id2=$(jq -cn '{session: {id: "p1"}, limits: {disk_mb: 128}, command: ["sh", "-c", "echo $BOXCAR_PROGRESS; ls /run/boxcar | grep -c progress; echo {\\\"second\\\": true} > $BOXCAR_PROGRESS"]}' | enq ses)
wait_job "$id2"
is "session: the next job gets its own channel (progress-<seq>), the last one's is gone" \
  "$(out_words "$id2")" "/run/boxcar/progress-2 1"
is "session: its report is its own" "$(latest "$id2") $(reports "$id2")" '{"second": true} 1'

# ---- Coalescing: 300 reports as fast as a shell writes them, ~1.5 s ----
id=$(jq -cn '{script: "for i in $(seq 1 300); do echo \"{\\\"n\\\": $i}\" > \"$BOXCAR_PROGRESS\"; sleep 0.005; done"}' | enq cold)
wait_job "$id"
n=$(reports "$id")
dur_ms=$(sql "select (extract(epoch from max(at) - min(at)) * 1000)::int from boxcar.job_events where job_id = '$id' and kind = 'progress'")
check "coalescing: 300 reports stored as $n (over ${dur_ms} ms: one per 500 ms, and the last)" \
  test "$n" -ge 2 -a "$n" -le $(( dur_ms / 500 + 2 ))
is "coalescing: the latest wins (the stored last is n=300)" "$(latest "$id")" '{"n": 300}'
is "coalescing: no two stored reports less than ~500 ms apart (but the last, kept at the exit)" \
  "$(sql "select coalesce(bool_and(d >= interval '450 ms'), true) from (select at - lag(at) over (order by id) d, id, max(id) over () last from boxcar.job_events where job_id = '$id' and kind = 'progress') x where d is not null and id <> last")" "t"

# ---- Hostile input ----
# A 1 MB line (dropped as it comes, never buffered), then a good report.
id=$(jq -cn '{script: "{ head -c 1000000 /dev/zero | tr \"\\\\0\" a; echo; echo \"{\\\"after\\\": 1}\"; } > \"$BOXCAR_PROGRESS\"; echo ok"}' | enq cold)
wait_job "$id"
is "1 MB line: the job goes on and ends" "$(st "$id") $(job_field "$id" "result->>'stdout'")" "succeeded ok"
is "1 MB line: refused with one progress_refused event (too_long)" \
  "$(sql "select string_agg(details->>'reason', ',') from boxcar.job_events where job_id = '$id' and kind = 'progress_refused'")" "too_long"
is "1 MB line: the report after it is stored" "$(latest "$id")" '{"after": 1}'
check "1 MB line: nothing of it stored" \
  test "$(sql "select coalesce(max(length(details::text)), 0) from boxcar.job_events where job_id = '$id'")" -lt 4096

# 20 lines that are not JSON, one that is not an object, bad UTF-8, then good.
id=$(jq -cn '{script: "for i in $(seq 1 20); do echo \"not json $i\"; done > \"$BOXCAR_PROGRESS\"; echo \"[1, 2]\" > \"$BOXCAR_PROGRESS\"; printf \"{\\\"a\\\": \\\"\\\\377\\\"}\\n\" > \"$BOXCAR_PROGRESS\"; echo \"{\\\"ok\\\": true}\" > \"$BOXCAR_PROGRESS\""}' | enq cold)
wait_job "$id"
is "invalid JSON: one event per reason, not one per line" \
  "$(sql "select string_agg(details->>'reason', ',' order by id) from boxcar.job_events where job_id = '$id' and kind = 'progress_refused'")" \
  "not_json,not_object"
check "invalid JSON: the event says why, naming the line" \
  sql_true "select details->>'message' like 'not one JSON value: %' and (details->>'line')::int = 1 from boxcar.job_events where job_id = '$id' and kind = 'progress_refused' and details->>'reason' = 'not_json'"
is "invalid JSON: the counts once, at the end" \
  "$(sql "select string_agg((details->'refused' = '{\"too_long\": 0, \"not_json\": 21, \"not_object\": 1}')::text, ',') from boxcar.job_events where job_id = '$id' and kind = 'progress_counts'")" "true"
is "invalid JSON: the good report is stored, alone" "$(latest "$id") $(reports "$id")" '{"ok": true} 1'

# A job that never touches the channel: no report, no event, no "progress".
id=$(echo '{"command": ["sh", "-c", "sleep 0.3; echo quiet"]}' | enq cold)
wait_job "$id"
is "silent job: succeeded, nothing about progress" \
  "$(st "$id") $(sql "select count(*) from boxcar.job_events where job_id = '$id' and kind like 'progress%'") $(sql "select boxcar.job_json('$id') ? 'progress'")" \
  "succeeded 0 f"

# A report written just before exit is stored, before the job's end.
id=$(echo '{"command": ["sh", "-c", "echo {\\\"final\\\": 7} > $BOXCAR_PROGRESS"]}' | enq cold); wait_job "$id"
is "report then exit: stored" "$(latest "$id")" '{"final": 7}'
is "report then exit: stored before the job finished" \
  "$(sql "select max(e.at) <= j.finished_at from boxcar.job_events e join boxcar.jobs j on j.id = e.job_id where e.job_id = '$id' and e.kind = 'progress' group by j.finished_at")" "t"

# A job that writes without a reader's pace (O_NONBLOCK, 20 MB): the
# pipe fills, the write fails EAGAIN rather than hanging, the job ends.
id=$(echo '{"command": ["python3", "-c", "import os,errno\nfd=os.open(os.environ[\"BOXCAR_PROGRESS\"], os.O_WRONLY|os.O_NONBLOCK)\nfull=0\nfor i in range(20000):\n  try: os.write(fd, b\"x\"*1000)\n  except BlockingIOError: full+=1\nprint(\"full\" if full else \"never\")"], "limits": {"timeout_s": 60}}' | enq cold)
wait_job "$id"
is "non-blocking writer: sees a full pipe (EAGAIN), never hangs" "$(st "$id") $(job_field "$id" "result->>'stdout'")" "succeeded full"

# ---- Isolation ----
id=$(echo '{"command": ["sh", "-c", "ls -l $BOXCAR_PROGRESS | cut -c1; touch /run/boxcar/x 2>/dev/null && echo wrote; rm -f $BOXCAR_PROGRESS 2>/dev/null && echo removed; ln -s / /run/boxcar/l 2>/dev/null && echo linked; echo end"]}' | enq cold)
wait_job "$id"
is "the channel is a FIFO in a read-only directory: nothing created, removed or linked" \
  "$(out_words "$id")" "p end"
# (A kept directory holds a new FIFO for its next job, never opened.)
is "no channel left behind on the host" \
  "$(find "$BOXCAR_DEV/work/pr-cold" "$BOXCAR_DEV/work/pr-warm" -type p \
       -not \( -path '*/jobs/free-*/meta/progress' -perm 0600 \) 2>/dev/null | wc -l)" 0
is "a stale worker's report is ignored (not the holder)" \
  "$(sql "select boxcar.report_progress('$id', 'someone-else', 1, '{\"x\": 1}') is null")" "t"

# ---- job.progress webhooks ----
recv_secret=$(webhook_secrets_of cold)
hport=$(free_port)
python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port "$hport" --secret "$recv_secret" \
  --log "$tmp/recv.log" --mode ok > "$tmp/recv.port" 2>>"$tmp/recv.err" &
_bg_pids+=($!)
wait_for "receiver up" 10 test -s "$tmp/recv.port"
hook="http://127.0.0.1:$hport/hook"
id=$(jq -cn --arg h "$hook" '{script: "for i in 1 2 3; do echo \"{\\\"step\\\": $i}\" > \"$BOXCAR_PROGRESS\"; sleep 0.6; done", webhook: {url: $h, progress: true}}' | enq cold)
plain=$(jq -cn --arg h "$hook" '{script: "echo \"{\\\"step\\\": 1}\" > \"$BOXCAR_PROGRESS\"", webhook: {url: $h}}' | enq cold)
wait_job "$id"; wait_job "$plain"
wait_for "deliveries done" 20 bash -c "[[ \$(psql -X -qtA '$DATABASE_URL' -c \"select count(*) from boxcar.webhook_deliveries where status = 'delivered'\") -ge 5 ]]"
recv() { python3 - "$tmp/recv.log" "$@" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
job = sys.argv[2]
mine = [r for r in rows if isinstance(r["body"], dict) and r["body"]["data"]["job_id"] == job]
print(" ".join(sorted(r["body"]["type"] for r in mine)), all(r["valid"] for r in mine),
      ",".join(str(r["body"]["data"]["progress"]["step"]) for r in sorted(mine, key=lambda r: r["body"]["data"].get("seq", 0)) if r["body"]["type"] == "job.progress"))
PY
}
is "webhook: each stored report is a signed job.progress delivery, then job.succeeded" \
  "$(recv "$id")" "job.progress job.progress job.progress job.succeeded True 1,2,3"
is "webhook: without webhook.progress, only the final one" "$(recv "$plain")" "job.succeeded True "
is "webhook: a spec with webhook.progress not a boolean is refused at enqueue" \
  "$(echo '{"command": ["true"], "webhook": {"progress": 1}}' | "$BOXCAR" enqueue --spec - 2>&1 >/dev/null | grep -o 'webhook.progress: must be true or false')" \
  "webhook.progress: must be true or false"
tap_done
