# Operator caps and scope quotas with a real worker (sql/39_caps_quotas.sql):
# a job over a queue's memory cap is refused by `boxcar enqueue`; a scope
# with max_running 1 runs its jobs one at a time while another scope's run
# side by side; a scope whose jobs used its CPU-seconds for today gets no
# new job started while another scope's runs, and runs again the next day.
source "$(dirname "$0")/../lib.sh"
sql_is() { [[ $(sql "$1") == "$2" ]]; }
fresh_db e2e_caps_quotas

# Caps, refused at enqueue.
"$BOXCAR" queue caps acme/q --max-memory-mb 4096 --max-cpus 2 --images none --sessions off >/dev/null
out=$(echo '{"command": ["true"], "limits": {"memory_mb": 1048576}}' |
      "$BOXCAR" enqueue --queue acme/q --spec - 2>&1)
st=$?
check "a job over the memory cap is refused (exit $st)" test "$st" -ne 0
check "naming the cap and the queue: $out" \
  grep -qF 'limits.memory_mb: 1048576 exceeds the queue "acme/q" cap of 4096' <<<"$out"
is "no job was made" "$(sql "select count(*) from boxcar.jobs")" 0
id=$("$BOXCAR" enqueue --queue acme/q -- true)
is "a job that leaves memory out gets the smaller of the cap and the default" \
  "$(job_field "$id" "spec #>> '{limits,memory_mb}'")" 1024
check "queue show prints the caps" grep -q '"memory_mb":4096' <<<"$("$BOXCAR" queue show acme/q)"
bad=$("$BOXCAR" queue caps acme/q --max-memory-mb 8 2>&1)
check "a cap outside the spec's range is refused: $bad" grep -q 'caps.memory_mb: must be between 16' <<<"$bad"
sql "delete from boxcar.jobs" >/dev/null

# max_running 1 for scope "one": its 4 jobs one at a time; scope "two"'s
# 4 jobs beside them, several at once.
"$BOXCAR" quota set one --max-running 1 >/dev/null
for i in 1 2 3 4; do
  "$BOXCAR" enqueue --queue one/a -- sleep 0.6 >/dev/null
  "$BOXCAR" enqueue --queue two/a -- sleep 0.6 >/dev/null
done
start_worker "caps-w" --concurrency 4 --lease 10s --poll-interval 1s --sandbox "$E2E_SANDBOX" \
    --queues one/a,two/a,cpu/a,other/a,small/q
check "all 8 jobs ran" wait_for "jobs" 30 sql_is "select count(*) from boxcar.jobs where status = 'succeeded'" 8
overlap() {
  sql "select coalesce(max(c), 0) from (select (select count(*) from boxcar.jobs b
         where b.queue = '$1' and b.started_at <= a.started_at and b.finished_at > a.started_at) c
         from boxcar.jobs a where a.queue = '$1') x"
}
is "scope one never ran two at once" "$(overlap one/a)" 1
check "scope two ran several at once (max $(overlap two/a))" test "$(overlap two/a)" -ge 2

# A cap the spec leaves out is the job's limit on the worker: 64 MiB, and
# a job allocating 200 MiB without asking for memory is killed (OOM).
"$BOXCAR" queue caps small/q --max-memory-mb 64 >/dev/null
big=$(echo '{"command": ["python3", "-c", "x = bytearray(200 * 1024 * 1024); print(len(x))"]}' |
      "$BOXCAR" enqueue --queue small/q --spec -)
check "the filled-in cap holds on the worker" wait_for "oom" 30 sql_is "select error ->> 'code' from boxcar.jobs where id = '$big'" OOM

# CPU-seconds per day: scope "cpu" may use 1; its first job burns 1.5 s of
# CPU, charged by the report; its next job waits while "other"'s runs.
"$BOXCAR" quota set cpu --cpu-seconds-per-day 1 >/dev/null
burn='{"command": ["python3", "-c", "import time\nwhile time.process_time() < 1.5: pass"]}'
first=$(echo "$burn" | "$BOXCAR" enqueue --queue cpu/a --spec -)
check "the first CPU-bound job ran" wait_for "burn" 30 sql_is "select status from boxcar.jobs where id = '$first'" succeeded
used=$(sql "select cpu_ms from boxcar.scope_cpu_usage where scope = 'cpu' and day = (now() at time zone 'UTC')::date")
check "its CPU time was charged to the scope (${used:-none} ms)" test "${used:-0}" -ge 1400
second=$("$BOXCAR" enqueue --queue cpu/a -- true)
other=$("$BOXCAR" enqueue --queue other/a -- true)
check "another scope's job runs" wait_for "other" 20 sql_is "select status from boxcar.jobs where id = '$other'" succeeded
sleep 2.5
is "the scope's next job waits (past a poll interval)" "$(job_field "$second" status)" queued
check "queue show says why" grep -q 'waiting: scope "cpu" used its 1 CPU-seconds for' <<<"$("$BOXCAR" queue show cpu/a)"
check "boxcar status says why" grep -q '"waiting":[[:space:]]*"waiting: scope \\"cpu\\" used its 1 CPU-seconds' <<<"$("$BOXCAR" status "$second")"
check "quota show says why" grep -q 'waiting: scope "cpu"' <<<"$("$BOXCAR" quota show cpu)"
# The next UTC day: today's counter becomes yesterday's.
sql "update boxcar.scope_cpu_usage set day = day - 1 where scope = 'cpu'" >/dev/null
check "the next day the waiting job runs" wait_for "next day" 20 sql_is "select status from boxcar.jobs where id = '$second'" succeeded
kill -TERM "$WORKER_PID"
wait "$WORKER_PID"
tap_done
