# SIGTERM drains: no new claims, running jobs finish, or are handed back
# to the queue when --drain-timeout passes; the worker exits 0 either way.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_drain
started() { [[ $(sql "select count(*) from boxcar.job_events where job_id = '$1' and kind = 'started'") -ge 1 ]]; }

start_worker drain-a --concurrency 1 --lease 5s --poll-interval 500ms --drain-timeout 10s --sandbox "$E2E_SANDBOX"
short=$("$BOXCAR" enqueue -- sh -c 'sleep 1.5; echo done')
check "the job starts" wait_for "started" 10 started "$short"
kill -TERM "$WORKER_PID"
wait_for "draining" 10 grep -q "event=worker.draining" "$BOXCAR_DEV/test-logs/drain-a.log"
later=$("$BOXCAR" enqueue -- echo later)
wait "$WORKER_PID"
is "the worker exits 0 after draining" "$?" "0"
is "the running job finished during the drain" "$(job_field $short "status || ' ' || (result->>'stdout')")" "succeeded done"
is "a draining worker claims nothing new" "$(job_field $later "status")" "queued"

start_worker drain-b --concurrency 1 --lease 5s --poll-interval 500ms --drain-timeout 1s --sandbox "$E2E_SANDBOX"
sql "select boxcar.cancel('$later')" >/dev/null
long=$("$BOXCAR" enqueue -- sh -c 'echo run; sleep 60')
check "the long job starts" wait_for "started" 10 started "$long"
t0=$(date +%s%N)
kill -TERM "$WORKER_PID"
wait "$WORKER_PID"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "the worker exits 0 after the drain timeout" "$rc" "0"
check "it stopped soon after the 1 s drain timeout (${ms} ms)" test "$ms" -lt 4000
is "the job is handed back, its attempt not counted" "$(job_field $long "status || ' ' || attempts || ' ' || coalesce(worker_id, '-')")" "queued 0 -"
is "the release is in the audit trail" "$(sql "select count(*) from boxcar.job_events where job_id = '$long' and kind = 'released'")" "1"

# A second signal stops at once, still handing the job back.
start_worker drain-c --concurrency 1 --lease 5s --poll-interval 500ms --drain-timeout 60s --sandbox "$E2E_SANDBOX"
check "the handed-back job starts again" wait_for "started" 10 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$long' and kind = 'started'\") -ge 2 ]]"
kill -TERM "$WORKER_PID"; sleep 0.3; kill -INT "$WORKER_PID"
t0=$(date +%s%N)
wait "$WORKER_PID"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "a second signal exits 0" "$rc" "0"
check "at once (${ms} ms)" test "$ms" -lt 2000
is "and the job is queued again" "$(job_field $long "status")" "queued"
# Both runs were attempt 1 (a release does not count it): the second
# run's output goes on after the first's in the live log, none lost.
is "the live log holds both runs' output, in order" \
  "$(sql "select string_agg(seq || ':' || convert_from(data, 'UTF8'), '' order by seq)
            from boxcar.job_logs where job_id = '$long' and attempt = 1")" $'1:run\n2:run'
# --max-log-bytes caps an attempt's live output, whichever runs wrote it:
# here 100 bytes, 61 a run, three runs of attempt 1 (two handed back).
sql "select boxcar.cancel('$long')" >/dev/null
capped=$("$BOXCAR" enqueue -- sh -c 'head -c 60 /dev/zero | tr "\0" a; echo; sleep 60')
runs_started() { [[ $(sql "select count(*) from boxcar.job_events where job_id = '$capped' and kind = 'started'") -ge $1 ]]; }
for run in 1 2 3; do
  start_worker "drain-cap-$run" --concurrency 1 --lease 5s --poll-interval 500ms --drain-timeout 1s \
    --max-log-bytes 100 --sandbox "$E2E_SANDBOX"
  check "run $run of the capped job starts" wait_for "run $run" 10 runs_started "$run"
  sleep 0.5   # its output is written
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
done
is "the attempt's output stops at the cap: 61 bytes, then 39 of the second run" \
  "$(sql "select sum(length(data)) from boxcar.job_logs where job_id = '$capped' and attempt = 1
            and convert_from(data, 'UTF8') not like '%log limit reached%'")" "100"
is "one marker says so, not one per run" \
  "$(sql "select count(*) from boxcar.job_logs where job_id = '$capped' and attempt = 1
            and convert_from(data, 'UTF8') like '%log limit reached%'")" "1"
sql "select boxcar.cancel('$capped')" >/dev/null
tap_done
