# Queue limits across replicas: max_running and rate_per_s hold with three
# workers claiming at once; a paused queue is skipped; a scope flooding
# its queue does not starve another scope.
source "$(dirname "$0")/../lib.sh"
# sql_is QUERY VALUE: the query answers VALUE (for wait_for: evaluated at each try).
sql_is() { [[ $(sql "$1") == "$2" ]]; }
fresh_db e2e_queue_limits
"$BOXCAR" queue config lim --max-running 2 >/dev/null
"$BOXCAR" queue config rated --rate 5 >/dev/null
"$BOXCAR" queue pause paused >/dev/null
is "queue ls --json shows the three" "$("$BOXCAR" queue ls --json | wc -l)" 3
pids=()
for w in a b c; do
  start_worker "lim-$w" --concurrency 4 --lease 10s --poll-interval 5s --sandbox none \
      --queues lim,rated,paused
  pids+=("$WORKER_PID")
done
wait_for "workers" 20 sql_is "select count(*) from boxcar.workers where state = 'running'" 3

# max_running 2: twelve slots free, thirty 0.3 s jobs; the running count,
# sampled every 20 ms, never passes 2.
sql "select count(boxcar.enqueue('lim', '{\"command\":[\"sleep\",\"0.3\"]}')) from generate_series(1, 30)" >/dev/null
max=0
for _ in $(seq 1 1500); do
  n=$(sql "select count(*) from boxcar.jobs where queue = 'lim' and status = 'running'")
  (( n > max )) && max=$n
  [[ $(sql "select count(*) from boxcar.jobs where queue = 'lim' and status = 'succeeded'") == 30 ]] && break
  sleep 0.02
done
is "all 30 limited jobs succeeded" "$(sql "select count(*) from boxcar.jobs where queue = 'lim' and status = 'succeeded'")" 30
is "sampled running count reached 2 and never more" "$max" 2
# The same from the jobs' own times: at no job's start were more than 2 running.
overlap=$(sql "select coalesce(max(c), 0) from (select (select count(*) from boxcar.jobs b
                 where b.queue = 'lim' and b.started_at <= a.started_at and b.finished_at > a.started_at) c
                 from boxcar.jobs a where a.queue = 'lim') x")
check "at most 2 overlapping (got $overlap)" test "$overlap" -le 2
is "the jobs spread over the workers" "$(sql "select count(distinct worker_id) > 1 from boxcar.jobs where queue = 'lim'")" t

# rate 5/s (bursts of 1): 25 jobs; in any 1 s window at most 5 + 1 start.
t0=$(date +%s%N)
sql "select count(boxcar.enqueue('rated', '{\"command\":[\"true\"]}')) from generate_series(1, 25)" >/dev/null
wait_for "rated jobs" 40 sql_is "select count(*) from boxcar.jobs where queue = 'rated' and status = 'succeeded'" 25 \
  && ok "25 rate-limited jobs ran" || not_ok "25 rate-limited jobs ran"
elapsed=$(( ($(date +%s%N) - t0) / 1000000 ))
worst=$(sql "select max((select count(*) from boxcar.jobs b where b.queue = 'rated'
               and b.started_at >= a.started_at and b.started_at < a.started_at + interval '1 second'))
             from boxcar.jobs a where a.queue = 'rated'")
check "at most 6 starts in any second (got $worst)" test "$worst" -le 6
span=$(sql "select extract(epoch from max(started_at) - min(started_at))::numeric(6,2) from boxcar.jobs where queue = 'rated'")
check "25 starts at 5/s span at least 4.6 s (got $span)" awk "BEGIN { exit !($span >= 4.6) }"
# Not throttled to the poll interval (5 s): the worker claims at the next token.
check "and at most 9 s (got $span; the poll interval is 5 s)" awk "BEGIN { exit !($span <= 9) }"
diag "rated: 25 jobs in $elapsed ms"

# Pause.
sql "select boxcar.enqueue('paused', '{\"command\":[\"true\"]}') from generate_series(1, 3)" >/dev/null
sleep 2
is "nothing claimed from a paused queue" "$(sql "select count(*) from boxcar.jobs where queue = 'paused' and status <> 'queued'")" 0
"$BOXCAR" queue resume paused >/dev/null
check "resumed: its jobs run" wait_for "resumed" 10 sql_is "select count(*) from boxcar.jobs where queue = 'paused' and status = 'succeeded'" 3
for p in "${pids[@]}"; do kill -TERM "$p"; done
wait "${pids[@]}"

# Fair share: scope "flood" has 20,000 jobs queued, older than anything
# of scope "quiet"; one worker with two slots serves both.  Each quiet job
# starts while the flood is still queued.
sql "select count(boxcar.enqueue('flood/x', '{\"command\":[\"true\"]}', run_at => now() - interval '1 hour'))
       from generate_series(1, 20000)" >/dev/null
start_worker "fair" --concurrency 2 --lease 10s --poll-interval 1s --sandbox none --queues flood/x,quiet/x
wait_for "flood running" 20 sql_is "select count(*) > 0 from boxcar.jobs where queue = 'flood/x' and status <> 'queued'" t
for i in 1 2 3 4 5; do
  sql "select boxcar.enqueue('quiet/x', '{\"command\":[\"true\"]}')" >/dev/null
  sleep 0.2
done
check "the quiet scope's 5 jobs ran" wait_for "quiet" 20 sql_is "select count(*) from boxcar.jobs where queue = 'quiet/x' and status = 'succeeded'" 5
left=$(sql "select count(*) from boxcar.jobs where queue = 'flood/x' and status = 'queued'")
check "while the flood was still queued ($left left)" test "$left" -gt 10000
diag "quiet pickup latency (ms): $(sql "select string_agg(round(extract(epoch from started_at - created_at) * 1000)::text, ' ' order by created_at) from boxcar.jobs where queue = 'quiet/x'")"
tap_done
