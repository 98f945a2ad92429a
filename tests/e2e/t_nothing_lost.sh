# Nothing lost, nothing stuck: a worker restarted under the same id after
# kill -9, a running row without a lease, and concurrent jobs on one
# artifact storage.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-lost-$$"
fresh_db e2e_lost
tmp=$(mktemp -d); chmod 777 "$tmp"
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
finished() { [[ $(sql "select status from boxcar.jobs where id = '$1'") =~ ^(succeeded|failed|cancelled)$ ]]; }
alive() { kill -0 "$1" 2>/dev/null; }
all_dead() { local p; for p in "$@"; do ! alive "$p" || return 1; done; }

# 1. The same --worker-id after kill -9.  The job's first run leaves a
# background process and records its pids; its second run (after the
# rescue) just succeeds.
start_worker fixed-w --queues fid --sandbox none --lease 3s --poll-interval 500ms
victim=$WORKER_PID
spec=$(cat <<JSON
{"script": "if [ -e \"\$D/ran\" ]; then echo second run; exit 0; fi; touch \"\$D/ran\"; sleep 300 & echo \$! > \"\$D/bg.pid\"; echo \$\$ > \"\$D/sh.pid\"; wait",
 "env": {"D": "$tmp"}}
JSON
)
fid=$(echo "$spec" | "$BOXCAR" enqueue --queue fid --spec -)
check "the job starts and records its processes" wait_for "pids" 10 test -s "$tmp/bg.pid" -a -s "$tmp/sh.pid"
pids=("$(cat "$tmp/sh.pid")" "$(cat "$tmp/bg.pid")")
check "its processes run" alive "${pids[1]}"
inst0=$(sql "select instance from boxcar.workers where id = 'fixed-w'")
kill -9 "$victim"; { wait "$victim"; } 2>/dev/null
check "kill -9 of the worker (--sandbox none) kills the job's process group" wait_for "dead" 5 all_dead "${pids[@]}"
t0=$(date +%s%N)
start_worker fixed-w --queues fid --sandbox none --lease 3s --poll-interval 500ms
check "the job left by the dead process under the same id finishes" wait_for "finished" 30 finished "$fid"
is "it was rescued and ran again (attempt 2)" "$(job_field "$fid" "status || ' ' || attempts || ' ' || (result->>'stdout')")" "succeeded 2 second run"
is "the rescue is in its audit trail, with the reason" \
   "$(sql "select details->'error'->>'message' from boxcar.job_events where job_id = '$fid' and kind = 'rescued'")" \
   "worker fixed-w restarted: the process that ran the job is gone"
check "the restarted worker logged the rescue" grep -q 'jobs.rescued' "$BOXCAR_DEV/test-logs/fixed-w.log"
diag "rescued and finished $(( ($(date +%s%N) - t0) / 1000000 )) ms after the restart (lease 3 s, backoff about 2 s)"
inst1=$(sql "select instance from boxcar.workers where id = 'fixed-w'")
check "the workers row names the new instance" test -n "$inst0" -a -n "$inst1" -a "$inst1" != "$inst0"
kill -TERM "$WORKER_PID"; { wait "$WORKER_PID"; } 2>/dev/null

# 2. A running row with no lease (written by hand) is rescued and run.
start_worker lost-w --queues nl --sandbox none --lease 2s --poll-interval 500ms
nl=$("$BOXCAR" enqueue --queue nl --run-at "$(date -u -d '+1 hour' +%FT%TZ)" -- echo recovered)
sql "update boxcar.jobs set status = 'running', attempts = 1, worker_id = 'ghost', run_at = now() where id = '$nl'" >/dev/null
check "a running job without a lease and without a live worker is rescued and run" wait_for "finished" 20 finished "$nl"
is "it succeeded on attempt 2" "$(job_field "$nl" "status || ' ' || attempts")" "succeeded 2"
kill -TERM "$WORKER_PID"; { wait "$WORKER_PID"; } 2>/dev/null

# 3. Two workers x two slots, 12 jobs appending to one artifact: every
# line arrives, in enqueue order, along one unbroken chain of versions.
start_worker art-a --queues art --concurrency 2 --lease 10s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
start_worker art-b --queues art --concurrency 2 --lease 10s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
ids=()
for n in $(seq 1 12); do
  ids+=("$(echo "{\"command\": [\"sh\", \"-c\", \"sleep 0.2; echo \$N >> /workspace/log.txt\"], \"env\": {\"N\": \"$n\"}, \"artifact\": {\"storage\": \"s2\", \"base\": \"latest\"}}" \
           | "$BOXCAR" enqueue --queue art --spec -)")
done
all_finished() { local i; for i in "${ids[@]}"; do finished "$i" || return 1; done; }
check "all 12 artifact jobs finish" wait_for "finished" 120 all_finished
is "all succeeded" "$(sql "select count(*) from boxcar.jobs where queue = 'art' and status = 'succeeded'")" "12"
is "both workers ran some" "$(sql "select count(distinct worker_id) from boxcar.jobs where queue = 'art'")" "2"
is "no two ran at once (each started after the previous finished)" \
   "$(sql "select count(*) from (select started_at, lag(finished_at) over (order by started_at) prev from boxcar.jobs where queue = 'art') x where started_at < prev")" "0"
is "they ran in enqueue order" \
   "$(sql "select string_agg(spec->'env'->>'N', ' ' order by started_at) from boxcar.jobs where queue = 'art'")" "$(seq -s ' ' 1 12)"
"$BOXCAR" storage pull s2 "$tmp/head" 2>/dev/null
is "the head's log.txt holds every line, in order" "$(tr '\n' ' ' < "$tmp/head/log.txt")" "$(seq -s ' ' 1 12) "
is "the versions form one chain (no version has two children)" \
   "$(sql "select count(*) from (select parent_sha256 from boxcar.storage_versions where storage = 's2' and parent_sha256 is not null group by 1 having count(*) > 1) x")" "0"
is "no result reports a conflict" "$(sql "select count(*) from boxcar.jobs where queue = 'art' and (result->'artifact'->>'conflict')::boolean")" "0"
check "no job.lease_lost warning for jobs that finished normally" \
      bash -c "! grep -h 'job.lease_lost' '$BOXCAR_DEV/test-logs/art-a.log' '$BOXCAR_DEV/test-logs/art-b.log'"

# A version pushed to the storage while a job runs (outside the queue's
# order) is not overwritten: the job's version becomes a branch.
mkdir -p "$tmp/push"; echo pushed > "$tmp/push/log.txt"
slow=$(echo '{"command": ["sh", "-c", "sleep 2; echo slow >> /workspace/log.txt"], "artifact": {"storage": "s2", "base": "latest"}}' | "$BOXCAR" enqueue --queue art --spec -)
started() { [[ $(sql "select count(*) from boxcar.job_events where job_id = '$1' and kind = 'started'") -ge 1 ]]; }
wait_for "started" 20 started "$slow"
pushed=$("$BOXCAR" storage push --scope art s2 "$tmp/push" 2>/dev/null)
wait_for "finished" 30 finished "$slow"
is "the job still succeeds" "$(job_field "$slow" status)" "succeeded"
is "its result says its version is a branch (artifact.conflict)" "$(job_field "$slow" "result->'artifact'->>'conflict'")" "true"
is "the pushed version stays the head" "$(sql "select head_version from boxcar.storages where name = 's2'")" "$pushed"
is "the job's version is kept" "$(sql "select count(*) from boxcar.storage_versions where storage = 's2' and sha256 = '$(job_field "$slow" "result->'artifact'->>'sha256'")'")" "1"
tap_done
