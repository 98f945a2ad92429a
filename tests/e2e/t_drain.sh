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
tap_done
