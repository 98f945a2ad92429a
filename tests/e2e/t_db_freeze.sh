# Leases that run out while the database is out of reach are nobody's
# fault: a frozen server (its processes stopped with SIGSTOP: it neither
# answers nor refuses, as under a stuck disk or a paused VM) or a stopped
# one (a restart, a failover).  Once it is back, the live workers renew
# their leases and finish their jobs, none rescued and run twice; a
# worker that died has its jobs rescued, a lease later.
#
# Each scenario: three workers on a steady flow of short jobs (b, started
# first, leads: it rescues).  Worker c stops (a stalled process, or one
# whose reconnection comes later) and worker a dies; the database goes
# away for more than two leases and comes back; c resumes a second after
# the leader has the database again.  Without a lease of grace the
# leader, alone to run statements then, would rescue c's jobs before c
# could renew its leases.
source "$(dirname "$0")/../lib.sh"
pg_pids() { "$BOXCAR_ROOT/scripts/pg.sh" pids; }
pid_c=""
restore() { kill -CONT $(pg_pids) $pid_c 2>/dev/null || true; "$BOXCAR_ROOT/scripts/pg.sh" start >/dev/null 2>&1; }
trap 'restore; cleanup_bg' EXIT
finished_n() { sql "select count(*) from boxcar.jobs where status in ('succeeded', 'failed', 'cancelled')"; }
running_on() { sql "select count(*) from boxcar.jobs where status = 'running' and worker_id = '$1'"; }
export -f sql running_on finished_n

# scenario NAME freeze|stop, with the log line the leader must leave.
scenario() {
  local name=$1 how=$2 reason=$3 N=400 pid_a pid_b w
  fresh_db "e2e_$name"
  for w in b c a; do
    start_worker "$name-$w" --concurrency 4 --lease 3s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
    eval "pid_$w=$WORKER_PID"
  done
  sql "select count(boxcar.enqueue('default', '{\"command\": [\"sh\", \"-c\", \"sleep 0.2\"]}'::jsonb))
         from generate_series(1, $N)" >/dev/null
  wait_for "all busy" 20 bash -c "(( \$(running_on $name-a) && \$(running_on $name-b) && \$(running_on $name-c) ))"
  kill -STOP "$pid_c"
  kill -9 "$pid_a"; { wait "$pid_a"; } 2>/dev/null
  sleep 0.3
  if [[ $how == freeze ]]; then
    kill -STOP $(pg_pids); sleep 7; kill -CONT $(pg_pids)
  else
    "$BOXCAR_ROOT/scripts/pg.sh" stop >/dev/null; sleep 7; "$BOXCAR_ROOT/scripts/pg.sh" start >/dev/null
    wait_for "the leader reconnected" 20 bash -c "(( \$(grep -c 'event=db.connected' '$BOXCAR_DEV/test-logs/$name-b.log') >= 2 ))"
  fi
  sleep 1
  kill -CONT "$pid_c"
  wait_for "all finished" 90 bash -c "[[ \$(finished_n) == $N ]]"
  is "$how: all $N jobs succeeded" "$(sql "select count(*) from boxcar.jobs where status = 'succeeded'")" "$N"
  is "$how: jobs of worker a (dead) rescued" \
     "$(sql "select count(*) > 0 from boxcar.job_events where kind = 'rescued' and worker_id = '$name-a'")" t
  is "$how: jobs of workers b and c (alive) rescued: none, each ran once" \
     "$(sql "select count(*) from boxcar.job_events where kind = 'rescued' and worker_id <> '$name-a'")" 0
  grep -q "event=jobs.rescue_deferred.*reason=\"$reason\"" "$BOXCAR_DEV/test-logs/$name-b.log" &&
    ok "$how: the leader says it waited a lease ($reason)" ||
    { not_ok "$how: rescue_deferred logged"; grep -E 'rescue|leader|db\.' "$BOXCAR_DEV/test-logs/$name-b.log" | sed 's/^/# /' | tail -8; }
  kill -TERM "$pid_b" "$pid_c" 2>/dev/null; wait "$pid_b" "$pid_c" 2>/dev/null
  pid_c=""
}
scenario freeze freeze "heartbeats stalled"
scenario outage stop "the database was out of reach"
tap_done
