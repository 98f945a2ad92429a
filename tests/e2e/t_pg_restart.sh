# PostgreSQL restarts while jobs run: workers reconnect with backoff,
# re-LISTEN, keep their jobs running and record every result.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_pgrestart
for w in a b; do
  start_worker "pgr-$w" --concurrency 4 --lease 15s --poll-interval 1s --sandbox "$E2E_SANDBOX"
done
sql "select count(boxcar.enqueue('default', '{\"command\":[\"sh\",\"-c\",\"sleep 0.2; echo ok\"]}')) from generate_series(1, 150)" >/dev/null
sleep 1.5
"$BOXCAR_ROOT/scripts/pg.sh" stop
sleep 2
"$BOXCAR_ROOT/scripts/pg.sh" start
done_all() { [[ $(sql "select count(*) from boxcar.jobs where status = 'succeeded'") == 150 ]] 2>/dev/null; }
check "all 150 jobs succeed after the restart" wait_for "all done" 90 done_all
is "every result is recorded" "$(sql "select count(*) from boxcar.jobs where result->>'stdout' = e'ok\n'")" "150"
# The last output goes with the result: a job that ended while the
# database was away keeps it too (its result is kept and sent again).
is "every job's live log holds its output" "$(sql "select count(*) from boxcar.jobs j
     where (select string_agg(convert_from(l.data, 'UTF8'), '' order by l.seq) from boxcar.job_logs l
             where l.job_id = j.id and l.attempt = j.attempts) = e'ok\n'")" "150"
check "the workers saw the database go" grep -q "db.lost\|report_failed\|connect_failed" "$BOXCAR_DEV/test-logs/pgr-a.log" "$BOXCAR_DEV/test-logs/pgr-b.log"
# A NOTIFY after the restart still wakes them (LISTEN was re-issued).
t0=$(date +%s%N)
id=$("$BOXCAR" enqueue -- echo after)
"$BOXCAR" status --wait "$id" >/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "a job after the restart is picked up by NOTIFY, not the 1 s poll (${ms} ms)" test "$ms" -lt 900
tap_done
