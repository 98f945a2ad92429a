# Three worker processes share 3,000 jobs: every job runs exactly once.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_scale
pids=()
for w in a b c; do
  start_worker "scale-$w" --concurrency 4 --lease 10s --poll-interval 1s --sandbox "$E2E_SANDBOX"
  pids+=("$WORKER_PID")
done
start=$(date +%s%N)
sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}')) from generate_series(1, 3000)" >/dev/null
done_all() { [[ $(sql "select count(*) from boxcar.jobs where status in ('succeeded','failed','cancelled')") == 3000 ]]; }
# A deadline for liveness, not a speed target (make bench measures speed):
# sanitizer builds run several times slower.
deadline=180; [[ ${SAN:-0} == 1 ]] && deadline=600
check "3,000 jobs finish within $deadline s" wait_for "all done" "$deadline" done_all
diag "3 workers x 4 slots ran 3,000 jobs in $(( ($(date +%s%N) - start) / 1000000 )) ms"
is "every job succeeded" "$(sql "select count(*) from boxcar.jobs where status = 'succeeded'")" "3000"
is "every job was claimed exactly once" "$(sql "select count(*) from (select job_id from boxcar.job_events where kind = 'claimed' group by job_id having count(*) <> 1) x")" "0"
is "one claimed event per job" "$(sql "select count(*) from boxcar.job_events where kind = 'claimed'")" "3000"
is "every job ran on its first attempt" "$(sql "select count(*) from boxcar.jobs where attempts <> 1")" "0"
is "all three workers took jobs" "$(sql "select count(distinct worker_id) from boxcar.jobs")" "3"
for p in "${pids[@]}"; do kill -TERM "$p"; done
rcs=""
for p in "${pids[@]}"; do wait "$p"; rcs+="$? "; done
is "the three workers drain and exit 0" "$rcs" "0 0 0 "
tap_done
