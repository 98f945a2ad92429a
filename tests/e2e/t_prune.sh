# Retention: the housekeeping leader deletes the jobs finished before
# --retention, in batches (boxcar.prune's max_rows) with its claims in
# between, until none is left; recent and unfinished jobs stay, and a job
# whose webhook is still pending stays until it is delivered.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_prune
OLD=1234   # more than two of the worker's batches (500)
sql "insert into boxcar.jobs (queue, spec, status, finished_at)
     select 'pr-old', '{\"command\":[\"true\"]}', 'succeeded', now() - interval '2 hours'
       from generate_series(1, $OLD)" >/dev/null
sql "insert into boxcar.job_events (job_id, kind) select id, 'finished' from boxcar.jobs" >/dev/null
recent=$(sql "insert into boxcar.jobs (queue, spec, status, finished_at)
              values ('pr-old', '{\"command\":[\"true\"]}', 'failed', now() - interval '10 minutes')
              returning id")
pending=$(sql "insert into boxcar.jobs (queue, spec, status, finished_at)
               values ('pr-old', '{\"command\":[\"true\"]}', 'succeeded', now() - interval '2 hours')
               returning id")
sql "insert into boxcar.webhook_deliveries (id, job_id, event_type, url, body)
     values ('msg_prune_pending', '$pending', 'job.succeeded', 'http://127.0.0.1:9/', '{}')" >/dev/null
queued=$(sql "select boxcar.enqueue('pr-other', '{\"command\":[\"true\"]}')")

none_old_left() {
  [[ $(sql "select count(*) from boxcar.jobs where finished_at < now() - interval '1 hour' and id <> '$pending'") == 0 ]]
}
start_worker pr-a --queues pr-work --retention 1h --poll-interval 1s --sandbox none --log-level debug
check "every job finished before the retention is deleted" wait_for "pruned" 30 none_old_left
is "with its events" "$(sql "select count(*) from boxcar.job_events e where not exists (select from boxcar.jobs j where j.id = e.job_id)")" "0"
is "a job finished within the retention stays" "$(job_field "$recent" status)" "failed"
is "so does an old one whose webhook is pending" "$(job_field "$pending" status)" "succeeded"
is "and a queued one" "$(job_field "$queued" status)" "queued"
log="$BOXCAR_DEV/test-logs/pr-a.log"
check "the batches are reported once, with their total" wait_for "pruned log" 10 \
  grep -q "event=jobs.pruned .*count=$OLD\b" "$log"
is "one report for the round" "$(grep -c 'event=jobs.pruned ' "$log")" "1"
is "made of batches of at most 500" "$(grep -o 'event=jobs.prune_batch .*count=[0-9]*' "$log" | sed 's/.*count=//' | paste -sd' ')" \
   "500 500 234"
# The leader runs jobs as before.
id=$(sql "select boxcar.enqueue('pr-work', '{\"command\":[\"true\"]}')")
succeeded() { [[ $(job_field "$id" status) == succeeded ]]; }
check "the leader still runs jobs" wait_for "job" 30 succeeded
tap_done
