# boxcar jobs ls (filters, keyset pages, --json), boxcar jobs retry (a
# failed job runs again with a fresh budget, an event names who asked,
# anything else is refused) and boxcar queues, against a real worker.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_jobs_cli
start_worker jobs_cli --concurrency 2 --poll-interval 1s --sandbox "$E2E_SANDBOX" --queues default,cli

flaky=$("$BOXCAR" enqueue --queue cli -- sh -c 'echo run; exit 7')
"$BOXCAR" status --wait --timeout 60s "$flaky" >/dev/null
is "setup: the job failed" "$(job_field $flaky "status || ' ' || (error->>'code')")" "failed NONZERO_EXIT"
out=$("$BOXCAR" jobs retry --by tester "$flaky")
is "jobs retry says it is queued again" "$out" "$flaky: queued again with a fresh attempt budget (requested by tester)"
"$BOXCAR" status --wait --timeout 60s "$flaky" >/dev/null
is "the retried job ran again, with a fresh budget (attempt 1 of its new run)" \
   "$(job_field $flaky "status || ' ' || attempts || ' ' || manual_retries || ' ' || (result->>'stdout')")" "failed 1 1 run"
is "a worker claimed it twice" "$(sql "select count(*) from boxcar.job_events where job_id = '$flaky' and kind = 'claimed'")" "2"
is "its audit trail names who asked" \
   "$(sql "select details->>'requested_by' || ' ' || (details->>'previous_status') from boxcar.job_events where job_id = '$flaky' and kind = 'retry_requested'")" \
   "tester failed"
kinds=$("$BOXCAR" events "$flaky" | python3 -c 'import json,sys; print(" ".join(json.loads(l)["kind"] for l in sys.stdin))')
check "the events show both runs around the retry ($kinds)" bash -c "[[ '$kinds' == *finished*retry_requested*claimed*finished* ]]"
ok_id=$("$BOXCAR" enqueue --queue cli -- true)
"$BOXCAR" status --wait --timeout 60s "$ok_id" >/dev/null
"$BOXCAR" jobs retry "$ok_id" 2>/tmp/retry.err.$$
is "retrying a succeeded job is refused (exit 1)" "$?" "1"
check "with a clear message" grep -q "is succeeded: only a failed or cancelled job can be retried" /tmp/retry.err.$$
"$BOXCAR" jobs retry not-a-uuid 2>/dev/null
is "a malformed id is an error" "$?" "1"
"$BOXCAR" jobs retry 2>/dev/null
is "a missing id is a usage error" "$?" "2"
rm -f /tmp/retry.err.$$

# --json for retry: the job document.
held=$("$BOXCAR" enqueue --queue held -- true)
"$BOXCAR" cancel "$held" >/dev/null
st=$("$BOXCAR" jobs retry --json "$held" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["id"], j["status"], j["attempts"], j["manual_retries"])')
is "jobs retry --json prints the job" "$st" "$held queued 0 1"
default_by=$(sql "select details->>'requested_by' from boxcar.job_events where job_id = '$held' and kind = 'retry_requested'")
is "by default the requester is USER@HOST" "$default_by" "$(id -un)@$(hostname)"

# Listing: 23 more jobs in a queue nobody serves, then walk the pages.
for i in $(seq 1 23); do "$BOXCAR" enqueue --queue pages -- true >/dev/null; done
want=$(sql "select string_agg(id::text, ' ' order by created_at desc, id desc) from boxcar.jobs where queue = 'pages'")
got="" after="" pages=0
while :; do
  doc=$("$BOXCAR" jobs ls --queue pages --limit 5 ${after:+--after "$after"} --json) || break
  got+=$(python3 -c 'import json,sys; print(" ".join(j["id"] for j in json.load(sys.stdin)["jobs"]), end=" ")' <<<"$doc")
  after=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["next_cursor"] or "")' <<<"$doc")
  pages=$((pages + 1))
  [[ -z $after || $pages -gt 10 ]] && break
done
is "pages of 5 visit every job of the queue once, newest first" "${got% }" "$want"
is "in 5 pages" "$pages" "5"
table=$("$BOXCAR" jobs ls --queue pages --limit 5)
is "the table has a header and 5 rows and a next-page line" "$(wc -l <<<"$table")" "7"
check "the next-page line gives --after" grep -q '^more: boxcar jobs ls ... --after ' <<<"$table"
is "--status filters" "$("$BOXCAR" jobs ls --status failed --json | python3 -c 'import json,sys; print(" ".join(j["status"] + ":" + j["id"] for j in json.load(sys.stdin)["jobs"]))')" "failed:$flaky"
is "--since filters" "$("$BOXCAR" jobs ls --since '2100-01-01 00:00:00+00' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["jobs"]), d["next_cursor"])')" "0 None"
"$BOXCAR" jobs ls --limit 0 2>/dev/null
is "--limit 0 is a usage error" "$?" "2"
"$BOXCAR" jobs ls --after garbage 2>/dev/null
is "a bad cursor is an error" "$?" "1"

# queues: the overview, as a table and as JSON, against queue_stats.
q=$("$BOXCAR" queues --json)
is "queues --json matches queue_stats" \
   "$(python3 -c 'import json,sys; print(" ".join(":".join(str(x[k]) for k in ("queue", "queued", "running", "succeeded_last_hour")) for x in json.load(sys.stdin)))' <<<"$q")" \
   "$(sql "select string_agg(queue || ':' || queued || ':' || running || ':' || succeeded_last_hour, ' ' order by queue) from boxcar.queue_stats")"
check "queues --json has the latencies of the queue that ran jobs" \
  python3 -c 'import json,sys; q={x["queue"]: x for x in json.load(sys.stdin)}; sys.exit(0 if q["cli"]["wait_avg_s"] is not None and q["cli"]["run_avg_s"] is not None else 1)' <<<"$q"
line=$("$BOXCAR" queues | awk '$1 == "pages" {print $2, $3, $4}')
is "the queues table shows the pages queue: 23 queued, 0 scheduled, 0 running" "$line" "23 0 0"
tap_done
