# One worker: results, exit codes, clean environment, output caps, timeout
# of a whole process group, cancel, bad specs inserted around enqueue(), and
# one NOTIFY per statement.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_basics
export SECRET_OF_THE_WORKER=hunter2
# Under AddressSanitizer freed memory sits in a quarantine (256 MiB by
# default) before reuse, so the worker's peak RSS below would measure how
# much it allocated over the 1 GB job (the live log's 10 MiB in 64 KiB
# batches), not what it holds; a small quarantine keeps the check about
# holding, with every other ASan check in force.
[[ ${SAN:-0} == 1 ]] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
start_worker basics --concurrency 4 --lease 5s --poll-interval 1s --sandbox "$E2E_SANDBOX"

ok_id=$("$BOXCAR" enqueue -- sh -c 'echo out; echo err >&2')
fail_id=$("$BOXCAR" enqueue -- sh -c 'exit 3')
sig_id=$("$BOXCAR" enqueue -- sh -c 'kill -SEGV $$')
env_id=$(echo '{"command": ["env"], "env": {"MODE": "prod"}}' | "$BOXCAR" enqueue --spec -)
big_id=$(echo '{"command": ["sh", "-c", "head -c 3000000 /dev/zero | tr \"\\\\0\" x; echo END"], "limits": {"output_bytes": 1000}}' | "$BOXCAR" enqueue --spec -)
script_id=$(echo '{"script": "cd /; x=$(echo \"a b\"); echo \"[$x] $0\"; exit 4"}' | "$BOXCAR" enqueue --spec -)
missing_id=$("$BOXCAR" enqueue -- no-such-command-anywhere)
timeout_id=$(echo '{"command": ["sh", "-c", "(setsid sleep 313 & sleep 313) & sleep 313"], "limits": {"timeout_s": 1}}' | "$BOXCAR" enqueue --spec -)

for id in $ok_id $fail_id $sig_id $env_id $big_id $script_id $missing_id $timeout_id; do
  "$BOXCAR" status --wait "$id" >/dev/null
done

is "a succeeding command succeeds" "$(job_field $ok_id "status || ' ' || (result->>'exit_code')")" "succeeded 0"
is "stdout is captured" "$(job_field $ok_id "result->>'stdout'")" "out"
is "stderr is captured" "$(job_field $ok_id "result->>'stderr'")" "err"
is "a non-zero exit fails with NONZERO_EXIT" "$(job_field $fail_id "status || ' ' || (error->>'code') || ' ' || (result->>'exit_code')")" "failed NONZERO_EXIT 3"
is "a job's own failure is not retried" "$(job_field $fail_id "attempts")" "1"
is "a signal gives 128+signal" "$(job_field $sig_id "(result->>'exit_code') || ' ' || (result->>'signal')")" "139 11"
env_out=$(job_field $env_id "result->>'stdout'")
is "the environment is exactly PATH, HOME, LANG, BOXCAR_PROGRESS and the spec's" "$(echo "$env_out" | cut -d= -f1 | sort | tr '\n' ' ')" "BOXCAR_PROGRESS HOME LANG MODE PATH "
check "the worker's own environment does not leak" bash -c "! grep -q hunter2 <<<'$env_out'"
is "output is capped to limits.output_bytes" "$(job_field $big_id "length(result->>'stdout')")" "1000"
is "the kept part is the tail" "$(job_field $big_id "right(result->>'stdout', 4) || ' ' || (result->>'stdout_truncated') || ' ' || (result->>'stdout_bytes')")" "END
 true 3000004"
is "script mode runs the text with /bin/sh from a file" "$(job_field $script_id "(result->>'exit_code') || ' ' || (result->>'stdout' like '[a b] %script.sh%')")" "4 true"
is "a missing command exits 127 and says so on stderr" "$(job_field $missing_id "(result->>'exit_code') || ' ' || (result->>'stderr' ~ 'no-such-command-anywhere.*(not found|No such file)')")" "127 true"
is "a timeout fails with TIMEOUT" "$(job_field $timeout_id "status || ' ' || (error->>'code') || ' ' || (result->>'timed_out')")" "failed TIMEOUT true"
# Alive means any state but a zombie waiting for init to reap it.
none_left() { ! ps -eo stat=,args= | grep -v '^Z' | grep -q '[s]leep 313'; }
check "the timeout killed every process the job started" wait_for "children die" 2 none_left

# A job writing a gigabyte neither blocks nor bloats the worker.
hwm_before=$(awk '/VmHWM/ {print $2}' /proc/$WORKER_PID/status)
gb=$(echo '{"command": ["sh", "-c", "head -c 1000000000 /dev/zero; echo done"], "limits": {"output_bytes": 4096}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$gb" >/dev/null
is "a 1 GB output is drained, its tail kept" "$(job_field $gb "status || ' ' || (result->>'stdout_bytes') || ' ' || length(result->>'stdout')")" "succeeded 1000000005 4096"
hwm_after=$(awk '/VmHWM/ {print $2}' /proc/$WORKER_PID/status)
# The peak, not the level: it would show any buffering of the gigabyte.
check "the worker's peak RSS grew by $((hwm_after - hwm_before)) kB, not with the output" \
      test $((hwm_after - hwm_before)) -lt 65536

if [[ $E2E_SANDBOX == namespace ]]; then
  oom=$(echo '{"command": ["python3", "-c", "x = bytearray(400 * 1024 * 1024); print(len(x))"], "limits": {"memory_mb": 64}}' | "$BOXCAR" enqueue --spec -)
  "$BOXCAR" status --wait "$oom" >/dev/null
  is "a job over its memory limit fails with OOM" "$(job_field $oom "status || ' ' || (error->>'code') || ' ' || (result->>'oom_killed')")" "failed OOM true"
fi

# Cancel a running job: killed promptly (its worker hears of it by NOTIFY,
# typically in well under a second; the bound leaves room for a loaded
# machine), ends cancelled.
cancel_id=$("$BOXCAR" enqueue -- sleep 60)
wait_for "cancel target starts" 10 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$cancel_id' and kind = 'started'\") == 1 ]]"
start=$(date +%s%N)
"$BOXCAR" cancel "$cancel_id" >/dev/null
"$BOXCAR" status --wait "$cancel_id" >/dev/null
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
is "a running job is cancelled" "$(job_field $cancel_id "status || ' ' || (error->>'code')")" "cancelled CANCELLED"
check "cancel took effect promptly (${elapsed_ms} ms, bound 2500)" test "$elapsed_ms" -lt 2500
is "cancelling a queued job" "$("$BOXCAR" cancel "$("$BOXCAR" enqueue --run-at "$(date -u -d '+1 day' +%FT%TZ)" -- true)")" "cancelled"

# Specs inserted around enqueue() are caught at claim, as BAD_SPEC, not retried.
n=0; bad_ids=()
while IFS=$'\t' read -r msg spec; do
  [[ -z $msg || $msg == \#* ]] && continue
  id=$(sql "insert into boxcar.jobs (queue, spec) values ('default', \$spec\$$spec\$spec\$::jsonb) returning id")
  bad_ids+=("$id|$msg"); n=$((n + 1))
done < "$BOXCAR_ROOT/tests/data/bad_specs.tsv"
wait_for "bad specs processed" 30 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.jobs where status = 'queued'\") == 1 ]]"
mismatch=0
for pair in "${bad_ids[@]}"; do
  id=${pair%%|*}; want=${pair#*|}
  got=$(job_field "$id" "status || '|' || (error->>'code') || '|' || (error->>'message') || '|' || attempts")
  if [[ "$got" != "failed|BAD_SPEC|$want|1" ]]; then mismatch=$((mismatch + 1)); diag "$id: got '$got' want '$want'"; fi
done
is "all $n malformed specs inserted raw fail at claim with BAD_SPEC naming the field, once" "$mismatch" "0"

# One NOTIFY per statement per queue, not per row.
notes=$(mktemp)
(psql -X "$DATABASE_URL" -c "listen boxcar_jobs" -c "select pg_sleep(2)" -c "select 1" > "$notes" 2>&1) &
listener=$!
sleep 0.5
sql "select boxcar.enqueue(q, '{\"command\":[\"true\"]}') from (select case when g % 2 = 0 then 'nq-a' else 'nq-b' end q from generate_series(1, 500) g) s" >/dev/null
wait $listener
is "500 jobs in two queues in one statement send 2 notifications" "$(grep -c 'Asynchronous notification "boxcar_jobs"' "$notes")" "2"
rm -f "$notes"

# After an update, only what a worker waits for wakes it: a job queued
# again, or a place freed in a queue with max_running; not a claim, a
# heartbeat, or a job finishing in a queue without one.
# notified SQL...: the boxcar_jobs payloads (queues) the statements send,
# each in its own transaction.
notified() {
  local out; out=$(mktemp)
  (psql -X "$DATABASE_URL" -c "listen boxcar_jobs" -c "select pg_sleep(1.5)" -c "select 1" > "$out" 2>&1) &
  local l=$!
  sleep 0.5
  local st
  for st in "$@"; do sql "$st" >/dev/null; done
  wait $l
  sed -n 's/.*Asynchronous notification "boxcar_jobs" with payload "\([^"]*\)".*/\1/p' "$out" | sort | paste -sd' '
  rm -f "$out"
}
sql "insert into boxcar.queue_config (queue, max_running) values ('nl-lim', 5)" >/dev/null
free=$(sql "select boxcar.enqueue('nl-free', '{\"command\":[\"true\"]}')")
lim=$(sql "select boxcar.enqueue('nl-lim', '{\"command\":[\"true\"]}')")
is "a claim wakes no worker" "$(notified "select count(*) from boxcar.claim('nl-w', array['nl-free'], 1)" \
                                          "select count(*) from boxcar.claim('nl-w', array['nl-lim'], 1)")" ""
is "nor does a heartbeat" "$(notified "select count(*) from boxcar.heartbeat('nl-w')")" ""
is "a job finished in a queue with max_running wakes its workers, one without does not" \
   "$(notified "select boxcar.complete('$free', 'nl-w', 'succeeded', '{}'::jsonb)" \
               "select boxcar.complete('$lim', 'nl-w', 'failed', '{}'::jsonb)")" "nl-lim"
is "a job queued again wakes its workers" \
   "$(notified "select boxcar.retry('$lim', requested_by => 'test')")" "nl-lim"
is "so does a job moved to a due time, once per queue and transaction" \
   "$(notified "select boxcar.enqueue('nl-later', '{\"command\":[\"true\"]}', run_at => now() + interval '1 hour')
                from generate_series(1, 2)" \
               "update boxcar.jobs set run_at = now() where queue = 'nl-later'")" "nl-later"

kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
is "the worker exits 0 after SIGTERM" "$?" "0"
is "the worker is recorded as stopped" "$(sql "select state from boxcar.worker_status where id = 'basics'")" "stopped"
tap_done
