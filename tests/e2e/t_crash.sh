# kill -9 of a worker: its jobs are rescued by another worker once the
# lease expires, or failed with WORKER_LOST when out of attempts.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_crash
started() { [[ $(sql "select count(*) from boxcar.job_events where job_id = '$1' and kind = 'started'") -ge 1 ]]; }
finished() { [[ $(sql "select status from boxcar.jobs where id = '$1'") =~ ^(succeeded|failed|cancelled)$ ]]; }

start_worker crash-a --concurrency 2 --lease 2s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
victim=$WORKER_PID
long=$("$BOXCAR" enqueue -- sh -c 'sleep 3; echo finished')
once=$("$BOXCAR" enqueue --max-attempts 1 -- sh -c 'sleep 3; echo finished')
check "both jobs start on worker a" wait_for "started" 10 bash -c "$(declare -f started sql); started $long && started $once"
kill -9 "$victim"; { wait "$victim"; } 2>/dev/null
start_worker crash-b --concurrency 2 --lease 2s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
check "the rescued job finishes" wait_for "finished" 30 finished "$long"
is "it succeeded on worker b" "$(job_field $long "status || ' ' || worker_id || ' ' || attempts")" "succeeded crash-b 2"
is "its output is the second run's" "$(job_field $long "result->>'stdout'")" "finished"
is "the rescue is in its audit trail" "$(sql "select count(*) from boxcar.job_events where job_id = '$long' and kind = 'rescued'")" "1"
check "the job with max_attempts 1 ends" wait_for "finished" 30 finished "$once"
is "it failed with WORKER_LOST" "$(job_field $once "status || ' ' || (error->>'code') || ' ' || attempts")" "failed WORKER_LOST 1"
tap_done
