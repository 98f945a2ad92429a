# Periodic jobs: three workers enqueue each scheduled run exactly once,
# also when the leader dies in the middle of its tick, and a run missed
# during downtime runs once.
source "$(dirname "$0")/../lib.sh"
# sql_is QUERY VALUE: the query answers VALUE (for wait_for: evaluated at each try).
sql_is() { [[ $(sql "$1") == "$2" ]]; }
fresh_db e2e_schedules
# Yearly schedules whose next_run_at the test moves into the past: no real
# tick can fall inside the test.
"$BOXCAR" schedule add y --cron '0 0 1 1 *' --queue sched -- true >/dev/null
check "schedule add through the CLI" sql_is "select count(*) from boxcar.schedules where name = 'y'" 1
pids=()
declare -A pid_of
for w in a b c; do
  start_worker "sched-$w" --concurrency 2 --lease 3s --poll-interval 1s --sandbox none --queues sched,slow
  pids+=("$WORKER_PID")
  pid_of[sched-$w]=$WORKER_PID
done
wait_for "a leader" 20 sql_is "select count(*) from boxcar.leaders where expires_at > now()" 1

# Five due runs, each also ticked by three extra sessions at once (as
# replicas that all believe they lead would).
moved() { [[ $(sql "select next_run_at > now() from boxcar.schedules where name = '$1'") == t ]]; }
for k in 1 2 3 4 5; do
  sql "update boxcar.schedules set next_run_at = date_trunc('second', now()) - interval '$k minutes' where name = 'y'"
  ticks=()
  for s in 1 2 3; do sql "select boxcar.schedule_tick()" >/dev/null & ticks+=($!); done
  wait_for "run $k enqueued" 20 moved y || not_ok "run $k was enqueued"
  wait "${ticks[@]}"
done
is "five due runs, five jobs" "$(sql "select count(*) from boxcar.jobs where queue = 'sched'")" 5
is "one job per scheduled time" "$(sql "select count(distinct idempotency_key) from boxcar.jobs where idempotency_key like 'schedule:y:%'")" 5
wait_for "scheduled jobs run" 30 sql_is "select count(*) from boxcar.jobs where queue = 'sched' and status = 'succeeded'" 5 \
  && ok "the scheduled jobs ran" || not_ok "the scheduled jobs ran"

# The leader dies inside its tick: a trigger holds the tick's insert for
# 3 s, the leader is killed -9 meanwhile.
sql "create function public.slow_insert() returns trigger language plpgsql as \$\$
     begin if new.queue = 'slow' then perform pg_sleep(3); end if; return new; end \$\$;
     create trigger slow_insert before insert on boxcar.jobs for each row execute function public.slow_insert()"
"$BOXCAR" schedule add s --cron '0 0 1 1 *' --queue slow -- true >/dev/null
leader=$(sql "select worker_id from boxcar.leaders where expires_at > now()")
sql "update boxcar.schedules set next_run_at = date_trunc('second', now()) - interval '1 minute' where name = 's'"
in_tick() { [[ $(sql "select count(*) from pg_stat_activity where query like '%schedule_tick%' and wait_event = 'PgSleep'") -ge 1 ]]; }
check "the leader ($leader) is inside its tick" wait_for "tick" 10 in_tick
kill -KILL "${pid_of[$leader]}"
new_leader() { local l; l=$(sql "select worker_id from boxcar.leaders where expires_at > now()"); [[ -n $l && $l != "$leader" ]]; }
check "another worker takes the lead" wait_for "new leader" 20 new_leader
wait_for "run enqueued" 20 moved s
sleep 2
is "the killed leader's run is enqueued once" "$(sql "select count(*) from boxcar.jobs where queue = 'slow'")" 1

# Now the tick's own transaction is killed (its backend terminated) while
# it waits: it rolls back, and the next tick enqueues the run once.
sql "update boxcar.schedules set next_run_at = date_trunc('second', now()) - interval '2 minutes' where name = 's'"
check "the new leader is inside its tick" wait_for "tick" 10 in_tick
sql "select pg_terminate_backend(pid) from pg_stat_activity where query like '%schedule_tick%' and wait_event = 'PgSleep'" >/dev/null
wait_for "run enqueued" 30 moved s
sleep 1
is "a tick rolled back is done again, once" "$(sql "select count(*) from boxcar.jobs where queue = 'slow'")" 2
is "two distinct scheduled times" "$(sql "select count(distinct idempotency_key) from boxcar.jobs where queue = 'slow'")" 2
sql "drop trigger slow_insert on boxcar.jobs"

# Downtime: every worker stopped, a daily schedule five days behind.
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
wait "${pids[@]}" 2>/dev/null
"$BOXCAR" schedule add d --cron '0 0 * * *' --queue sched -- true >/dev/null
sql "update boxcar.schedules set next_run_at = date_trunc('day', now()) - interval '5 days' where name = 'd'"
start_worker "sched-d" --concurrency 2 --lease 3s --poll-interval 1s --sandbox none --queues sched
wait_for "missed run" 20 moved d
sleep 2
is "five missed daily runs run once" "$(sql "select count(*) from boxcar.jobs where idempotency_key like 'schedule:d:%'")" 1
is "keyed on the first missed time" "$(sql "select idempotency_key = 'schedule:d:' || to_char((date_trunc('day', now()) - interval '5 days') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from boxcar.jobs where idempotency_key like 'schedule:d:%'")" t
is "the next run is the next midnight" "$(sql "select next_run_at = date_trunc('day', now()) + interval '1 day' from boxcar.schedules where name = 'd'")" t

# Pause: nothing enqueued while paused, even when due.
"$BOXCAR" schedule pause d >/dev/null
sql "update boxcar.schedules set next_run_at = now() - interval '1 minute' where name = 'd'"
sleep 2
is "a paused schedule enqueues nothing" "$(sql "select count(*) from boxcar.jobs where idempotency_key like 'schedule:d:%'")" 1
"$BOXCAR" schedule resume d >/dev/null
is "resume starts from now" "$(sql "select enabled and next_run_at > now() from boxcar.schedules where name = 'd'")" t
is "schedule ls --json lists the three" "$("$BOXCAR" schedule ls --json | wc -l)" 3
tap_done
