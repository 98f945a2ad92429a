#!/usr/bin/env bash
# Chaos at scale: CHAOS_JOBS jobs (default 10,000) over 4 workers while
#   - a random worker is killed with SIGKILL every 2-5 s and restarted, under
#     the same --worker-id (its orphans are rescued at once) or, one time in
#     three, under a new one (its jobs wait for their leases to expire);
#   - PostgreSQL restarts once (scripts/pg.sh restart), and later freezes
#     for 12 s (SIGSTOP: it neither answers nor refuses), longer than a lease;
#   - S3 is down for 30 s while artifact jobs run;
#   - the webhook receiver is down for 60 s;
#   - three rows are set to `running` with no lease and no worker by hand.
# Then it counts, and each must be 0: lost jobs (never finished), jobs
# finished twice (two `finished` events), command runs that no lost attempt
# explains (the command appends its key to a file outside the sandbox; a
# second run is legitimate only after an attempt was rescued or retried),
# jobs left stuck once the leases expired, artifact version chains that
# fork or skip (parent links per storage, and the head's content holding
# every succeeded job's line exactly once), webhooks missing or delivered
# under two ids, and invalid signatures (the receiver verifies each one).
#
# CHAOS_SANDBOX picks the workers' backend.  none (the default): a process
# per job, no namespaces, for throughput: the chaos is in the queue, the
# database, S3 and the receiver.  namespace: every job in a sandbox from
# the workers' warm pools, the artifact jobs' workspaces on their images,
# all of it under the same kills; a job cannot write outside its sandbox,
# so it sends its key through its network allow-list (the egress proxy)
# to marks.py, which appends it to the same file.  Every 1-2 s a random
# process of the workers' sandboxes is killed with SIGKILL as well: a
# supervisor (outside) or a sandbox's init, waiting warm or under its job
# (every other time one running its job's command, when there is one: a
# job whose sandbox is killed under it may have run in part; it is
# retried, and that is the only rerun it may have).  Once the last workers
# have stopped, nothing their sandboxes made may be left: no mount or loop
# device under their work dirs, no boxcar-sandbox cgroup or process.
# CHAOS_JOBS=100000 is `make chaos`.
source "$(dirname "$0")/../lib.sh"
N=${CHAOS_JOBS:-10000}
SANDBOX=${CHAOS_SANDBOX:-none}
WORKERS=4
CONC=${CHAOS_CONCURRENCY:-$([[ $SANDBOX == none ]] && echo 8 || echo 4)}
STORAGES=8
A=$(( N / 25 ))                 # artifact jobs, spread over the storages
GHOSTS=3
TOTAL=$(( N + GHOSTS ))
LEASE=10
# How long the jobs may take after the chaos ends before the run fails.
DEADLINE=${CHAOS_DEADLINE:-$(( 240 + N / 40 ))}
[[ ${SAN:-0} == 1 ]] && DEADLINE=$(( DEADLINE * 4 ))

eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="chaos-$$"
fresh_db chaos
tmp=$(mktemp -d); chmod 777 "$tmp"
mark="$tmp/marks"; : > "$mark"; chmod 666 "$mark"
hooks="$tmp/hooks.jsonl"
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
recv_secret=$(webhook_secrets_of chaos)
logs="$BOXCAR_DEV/test-logs"; mkdir -p "$logs"

recv_pid=""
start_receiver() {   # [PORT]
  rm -f "$tmp/port"
  python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port "${1:-0}" --port-file "$tmp/port" \
      --secret "$recv_secret" --log "$hooks" >/dev/null 2>>"$tmp/recv.err" &
  recv_pid=$!
  wait_for "receiver" 10 test -s "$tmp/port"
}
stop_receiver() { kill -9 "$recv_pid" 2>/dev/null; { wait "$recv_pid"; } 2>/dev/null; recv_pid=""; }

# How a job leaves its mark (its key, once per run of its command).
marks_pid=""
if [[ $SANDBOX == none ]]; then
  SH=sh MARK='echo $K >> $M' MARK_ENV="'M', '$mark'" NET="" NET_FLAGS=()
else
  python3 "$BOXCAR_ROOT/tests/chaos/marks.py" "$mark" "$tmp/marks.port" 2>>"$tmp/marks.err" &
  marks_pid=$!
  wait_for "the mark collector" 10 test -s "$tmp/marks.port"
  mport=$(cat "$tmp/marks.port")
  SH=bash MARK='echo $K > /dev/tcp/127.0.0.1/$MP' MARK_ENV="'MP', '$mport'"
  NET=", 'network', jsonb_build_object('allow', jsonb_build_array('127.0.0.1:$mport'))"
  NET_FLAGS=(--network-allow "chaos=127.0.0.1:$mport")
fi

# What sandboxes could leave behind, one line each: a mount or loop
# device under the chaos work dirs, a boxcar-sandbox cgroup whose
# supervisor is gone, a boxcar-sandbox process started from here (its
# working directory is the workers').
leftovers() {
  local p c
  grep -F "$BOXCAR_DEV/work/chaos-" /proc/self/mountinfo | awk '{ print "mount " $5 }'
  losetup -n -O NAME,BACK-FILE 2>/dev/null | grep -F "$BOXCAR_DEV/work/chaos-" | sed 's/^/loop /'
  for c in $(find /sys/fs/cgroup -mindepth 2 -type d -name 'boxcar-sandbox-*' 2>/dev/null); do
    kill -0 "${c##*-}" 2>/dev/null || echo "cgroup $c"
  done
  for p in $(pgrep -f "^$BOXCAR_ROOT/${BOXCAR_BUILD:-build}/boxcar-sandbox "); do
    [[ $(readlink "/proc/$p/cwd") == "$PWD" ]] && echo "process $p: $(tr '\0' ' ' < "/proc/$p/cmdline")"
  done
}
[[ $SANDBOX == none ]] || leftovers | sort > "$tmp/left.before"

declare -a wpid wname
gen=0
# The receiver is down for a minute: the schedule retries through it.
SCHED=1s,2s,3s$(printf ',5s%.0s' $(seq 1 10))$(printf ',10s%.0s' $(seq 1 19))
start_w() {   # SLOT NAME
  wname[$1]=$2
  "$BOXCAR" worker --worker-id "$2" --work-dir "$BOXCAR_DEV/work/chaos-$1" --queues chaos \
      --concurrency "$CONC" --sandbox "$SANDBOX" "${NET_FLAGS[@]}" --lease "${LEASE}s" --poll-interval 1s \
      --webhook-retry-schedule "$SCHED" >>"$logs/chaos-w$1.log" 2>&1 &
  wpid[$1]=$!
}
kill_w() { kill -9 "${wpid[$1]}" 2>/dev/null; { wait "${wpid[$1]}"; } 2>/dev/null; }
# kill_sandbox_process any|busy: SIGKILL to a supervisor (a worker's
# boxcar-sandbox child) or a sandbox's init (the supervisor's child); busy:
# only of a sandbox running its job's command (init has a child that is
# no longer boxcar-sandbox).  From one process table.
sb_kills=0
kill_sandbox_process() {
  local victims
  mapfile -t victims < <(ps -eo pid=,ppid=,comm= | awk -v workers=" ${wpid[*]} " -v want="$1" '
    { up[$1] = $2; comm[$1] = $3 }
    END {
      # (k in a), not a[k]: looking a key up would add it to a.
      for (p in up) if (index(workers, " " up[p] " ") && comm[p] == "boxcar-sandbox") helper[p] = 1
      for (p in up) if (up[p] in helper) init[p] = 1
      for (p in up) if ((up[p] in init) && comm[p] != "boxcar-sandbox") busy[up[p]] = 1
      for (p in init) if (want == "any" || (p in busy)) { print p; print up[p] }
      if (want == "any") for (p in helper) print p
    }')
  (( ${#victims[@]} )) || return 0
  local v=${victims[RANDOM % ${#victims[@]}]}
  [[ $v =~ ^[1-9][0-9]+$ ]] && kill -9 "$v" 2>/dev/null && sb_kills=$((sb_kills + 1))
  return 0
}
cleanup() {
  local i
  for i in "${!wpid[@]}"; do kill -9 "${wpid[$i]}" 2>/dev/null; done
  [[ -n $recv_pid ]] && kill -9 "$recv_pid" 2>/dev/null
  [[ -n $marks_pid ]] && kill -9 "$marks_pid" 2>/dev/null
  "$BOXCAR_ROOT/scripts/s3.sh" start >/dev/null 2>&1
  [[ -n $frozen ]] && kill -CONT $frozen 2>/dev/null
  { wait; } 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
for i in $(seq 1 $WORKERS); do : > "$logs/chaos-w$i.log"; done

start_receiver
port=$(cat "$tmp/port")
hook="http://127.0.0.1:$port/hook"

# Artifact jobs first, priority 1 (claimed before the no-op ones as soon as
# their storage unblocks them), then the others; then the ghosts, due in
# an hour, later turned into `running` rows without lease or worker.
t_enq=$(date +%s%N)
sql "select count(boxcar.enqueue('chaos',
        jsonb_build_object('command', jsonb_build_array('$SH', '-c',
                             'sleep 0.2; echo \$K >> log.txt && $MARK'),
                           'env', jsonb_build_object('K', 'a' || g, $MARK_ENV),
                           'artifact', jsonb_build_object('storage', 'chaos-s' || (g % $STORAGES),
                                                          'base', 'latest') $NET),
        priority => 1, max_attempts => 50, webhook_url => '$hook'))
     from generate_series(1, $A) g" >/dev/null
sql "select count(boxcar.enqueue('chaos',
        jsonb_build_object('command', jsonb_build_array('$SH', '-c', '$MARK'),
                           'env', jsonb_build_object('K', 'j' || g, $MARK_ENV) $NET),
        max_attempts => 50, webhook_url => '$hook'))
     from generate_series($A + 1, $N) g" >/dev/null
sql "select count(boxcar.enqueue('chaos',
        jsonb_build_object('command', jsonb_build_array('$SH', '-c', '$MARK'),
                           'env', jsonb_build_object('K', 'g' || g, $MARK_ENV) $NET),
        run_at => now() + interval '1 hour', max_attempts => 50, webhook_url => '$hook'))
     from generate_series(1, $GHOSTS) g" >/dev/null
diag "enqueued $TOTAL jobs ($A with artifacts on $STORAGES storages) in $(( ($(date +%s%N) - t_enq) / 1000000 )) ms"

for i in $(seq 1 $WORKERS); do start_w "$i" "chaos-w$i"; done
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
q() { sql "$@" 2>/dev/null; }     # the database may be restarting
finished_n() { q "select count(*) from boxcar.jobs where status in ('succeeded', 'failed', 'cancelled')"; }

# The events, in seconds from the start.
# S3 first, while the artifact chains are young; PostgreSQL restarts in the
# background (its shutdown checkpoint takes seconds) while the kills go on.
T_S3=4 T_HOOK=8 T_GHOST=12 T_PG=20 T_FREEZE=30 FREEZE_S=12
pg_done=0 s3_state=0 hook_state=0 ghost_done=0 kills=0 new_ids=0 freeze_state=0 frozen=""
next_kill=$(( $(date +%s) + 3 ))
next_sb_kill=$(( $(date +%s) + 2 ))
s3_busy=""
while :; do
  e=$(el)
  if (( pg_done == 0 && e >= T_PG )); then
    diag "[$e s] PostgreSQL restart"
    "$BOXCAR_ROOT/scripts/pg.sh" restart >/dev/null 2>"$tmp/pg.err" & pg_restart=$!
    pg_done=1
  elif (( pg_done == 1 )) && ! kill -0 "$pg_restart" 2>/dev/null; then
    wait "$pg_restart" && pg_done=2 || { diag "pg.sh restart failed: $(cat "$tmp/pg.err")"; pg_done=3; }
    diag "[$(el) s] PostgreSQL back"
  fi
  if (( freeze_state == 0 && pg_done >= 2 && e >= T_FREEZE )); then
    frozen=$("$BOXCAR_ROOT/scripts/pg.sh" pids); kill -STOP $frozen; freeze_state=1; frozen_at=$(date +%s)
    diag "[$e s] PostgreSQL frozen (SIGSTOP)"
  elif (( freeze_state == 1 && $(date +%s) >= frozen_at + FREEZE_S )); then
    kill -CONT $frozen; frozen=""; freeze_state=2
    diag "[$(el) s] PostgreSQL thawed after $(( $(date +%s) - frozen_at )) s"
  fi
  if (( s3_state == 0 && e >= T_S3 )); then
    s3_busy=$(q "select count(*) from boxcar.jobs where status = 'running' and artifact_storage is not null")
    "$BOXCAR_ROOT/scripts/s3.sh" stop; s3_state=1; s3_down_at=$(date +%s)
    diag "[$e s] S3 down ($s3_busy artifact jobs running)"
  elif (( s3_state == 1 && $(date +%s) >= s3_down_at + 30 )); then
    if "$BOXCAR_ROOT/scripts/s3.sh" start >/dev/null; then
      s3_state=2; diag "[$(el) s] S3 back, down for $(( $(date +%s) - s3_down_at )) s"
    fi
  fi
  if (( hook_state == 0 && e >= T_HOOK )); then
    stop_receiver; hook_state=1; hook_down_at=$(date +%s)
    diag "[$e s] webhook receiver down"
  elif (( hook_state == 1 && $(date +%s) >= hook_down_at + 60 )); then
    start_receiver "$port"; hook_state=2
    diag "[$(el) s] webhook receiver back, down for $(( $(date +%s) - hook_down_at )) s"
  fi
  if (( !ghost_done && e >= T_GHOST )); then
    q "update boxcar.jobs set status = 'running', attempts = 1, worker_id = null,
          lease_expires_at = null, run_at = now()
        where spec->'env'->>'K' like 'g%'" >/dev/null && ghost_done=1
  fi
  if (( $(date +%s) >= next_kill )); then
    v=$(( RANDOM % WORKERS + 1 ))
    kill_w "$v"; kills=$((kills + 1))
    if (( RANDOM % 3 == 0 )); then
      gen=$((gen + 1)); new_ids=$((new_ids + 1)); start_w "$v" "chaos-w$v-$gen"
    else
      start_w "$v" "${wname[$v]}"
    fi
    next_kill=$(( $(date +%s) + 2 + RANDOM % 4 ))
  fi
  if [[ $SANDBOX != none ]] && (( $(date +%s) >= next_sb_kill )); then
    if (( RANDOM % 2 )); then kill_sandbox_process busy; else kill_sandbox_process any; fi
    next_sb_kill=$(( $(date +%s) + 1 + RANDOM % 2 ))
  fi
  # Not while it is frozen: the query would wait for the thaw.
  (( freeze_state == 1 )) || f=$(finished_n)
  if (( pg_done >= 2 && freeze_state == 2 && s3_state == 2 && hook_state == 2 && ghost_done )) &&
     [[ $f == "$TOTAL" ]]; then
    break
  fi
  if (( e > DEADLINE )); then
    diag "[$e s] deadline: $f of $TOTAL finished"
    break
  fi
  sleep 0.5
done
t_jobs=$(el)
diag "chaos over after $t_jobs s: $kills kill -9 ($new_ids restarts under a new id), $(finished_n) of $TOTAL finished"

# Leases expire and the leader rescues: give the rest that long to finish.
wait_for "the rest" $(( 3 * LEASE + 30 )) bash -c "[[ \$(psql -X -qtA '$DATABASE_URL' -c \"select count(*) from boxcar.jobs where status in ('succeeded','failed','cancelled')\") == $TOTAL ]]"
all_delivered() { [[ $(q "select count(*) from boxcar.webhook_deliveries where status = 'delivered'") == "$TOTAL" ]]; }
wait_for "webhooks" 180 all_delivered
t_all=$(el)
# Stuck: running with its lease gone, looked at after every lease expired.
sleep 1
stuck=$(sql "select count(*) from boxcar.jobs where status = 'running' and (lease_expires_at is null or lease_expires_at < now())")
for i in "${!wpid[@]}"; do kill -TERM "${wpid[$i]}" 2>/dev/null; done
for i in "${!wpid[@]}"; do wait "${wpid[$i]}" 2>/dev/null; done
if [[ $SANDBOX != none ]]; then
  # A supervisor's cgroup goes when it has been reaped: a moment after.
  no_leftovers() { leftovers | sort | comm -13 "$tmp/left.before" - > "$tmp/left.after"; [[ ! -s $tmp/left.after ]]; }
  no_leftovers || sleep 2
  if no_leftovers; then
    ok "nothing the sandboxes made is left once the workers stopped (mounts, loop devices, cgroups, processes)"
  else
    not_ok "nothing the sandboxes made is left once the workers stopped"; diag "$(head -20 "$tmp/left.after")"
  fi
fi

# The receiver's log and the command's marks, as tables.
python3 - "$hooks" > "$tmp/hooks.csv" <<'PY'
import csv, json, sys
w = csv.writer(sys.stdout)
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue          # a line cut by the receiver's kill -9
    body = d.get("body") if isinstance(d.get("body"), dict) else {}
    job = (body.get("data") or {}).get("job_id", "")
    w.writerow([job, d.get("webhook_id", ""), "t" if d.get("valid") else "f", d.get("answered", "")])
PY
sql "create table chaos_marks (k text); create table chaos_hooks (job_id text, webhook_id text, valid boolean, answered text)"
psql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "\\copy chaos_marks from '$mark'"
psql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "\\copy chaos_hooks from '$tmp/hooks.csv' csv"

count() { sql "$1"; }
lost=$(count "select count(*) from boxcar.jobs where status not in ('succeeded', 'failed', 'cancelled')")
failed=$(count "select count(*) from boxcar.jobs where status <> 'succeeded'")
# As `boxcar events` tells it: a finished event is the job row's (boxcar.row_events).
twice=$(count "select count(*) from (select j.id from boxcar.jobs j cross join lateral boxcar.job_events_json(j.id) e
                                      where e ->> 'kind' = 'finished' group by 1 having count(*) > 1) x")
# A job's command ran n times; n - 1 reruns need as many lost attempts.
runs="with m as (select k, count(*) n from chaos_marks group by k),
          j as (select j.id, j.status, j.spec->'env'->>'K' k,
                       (select count(*) from boxcar.job_events e where e.job_id = j.id
                         and e.kind in ('rescued', 'retried')) lost
                  from boxcar.jobs j)"
unexplained=$(count "$runs select count(*) from j join m using (k) where m.n > 1 + j.lost")
reruns=$(count "$runs select coalesce(sum(m.n - 1), 0) from j join m using (k) where m.n > 1")
not_run=$(count "$runs select count(*) from j left join m using (k) where j.status = 'succeeded' and m.n is null")
rescued=$(count "select count(*) from boxcar.job_events where kind = 'rescued'")
# Attempts failed by a sandbox killed under its job.
sb_hit=$(count "select count(*) from boxcar.job_events where kind = 'retried'
                  and details->'error'->>'message' like '%may have run in part%'")
ghosts=$(count "select count(*) from boxcar.jobs where spec->'env'->>'K' like 'g%' and status = 'succeeded' and attempts >= 2")
# Version chains: a parent with two children is a fork; a version off the
# head's chain, or a chain link to a missing parent, is a skip.
forks=$(count "select count(*) from (select storage, parent_sha256 from boxcar.storage_versions
                 where parent_sha256 is not null group by 1, 2 having count(*) > 1) x")
off_chain=$(count "with recursive c as (
      select s.name storage, v.sha256, v.parent_sha256 from boxcar.storages s
        join boxcar.storage_versions v on v.storage = s.name and v.sha256 = s.head_version
      union all
      select c.storage, v.sha256, v.parent_sha256 from c
        join boxcar.storage_versions v on v.storage = c.storage and v.sha256 = c.parent_sha256)
    select (select count(*) from boxcar.storage_versions) - (select count(*) from c)
         + (select count(*) from c where parent_sha256 is not null
              and not exists (select from boxcar.storage_versions v
                               where v.storage = c.storage and v.sha256 = c.parent_sha256))")
conflicts=$(count "select count(*) from boxcar.jobs where (result->'artifact'->>'conflict')::boolean")
# Each head holds each of its storage's succeeded jobs' lines exactly once:
# none missing, none twice.  A line twice would be a job's changes applied
# twice: an attempt lost after its upload whose version was recorded all
# the same, so that its retry started from it.  A version is recorded only
# with the job's end (boxcar.record_job_artifact), so a lost attempt's
# upload never becomes a version or the head.
sql "create table chaos_heads (storage text, k text)"
for s in $(seq 0 $((STORAGES - 1))); do
  rm -rf "$tmp/head"
  "$BOXCAR" storage pull "chaos-s$s" "$tmp/head" >/dev/null 2>&1
  sed "s/^/chaos-s$s\t/" "$tmp/head/log.txt" > "$tmp/head.tsv" 2>/dev/null
  psql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "\\copy chaos_heads from '$tmp/head.tsv'"
done
heads="with h as (select storage, k, count(*) n from chaos_heads group by 1, 2),
           j as (select j.id, j.artifact_storage storage, j.spec->'env'->>'K' k
                   from boxcar.jobs j where j.artifact_storage is not null and j.status = 'succeeded')"
head_lines=$(count "select count(*) from chaos_heads")
head_missing=$(count "$heads select count(*) from j left join h using (storage, k) where h.n is null")
head_stray=$(count "$heads select count(*) from h left join j using (storage, k) where j.id is null")
head_twice=$(count "$heads select coalesce(sum(h.n - 1), 0) from h join j using (storage, k) where h.n > 1")
versions=$(count "select count(*) from boxcar.storage_versions")
hook_missing=$(count "select count(*) from boxcar.jobs j where not exists (select from chaos_hooks h
                        where h.job_id = j.id::text and h.valid and h.answered ~ '^2')")
hook_two_ids=$(count "select count(*) from (select job_id from chaos_hooks where valid and answered ~ '^2'
                        group by 1 having count(distinct webhook_id) > 1) x")
hook_dups=$(count "select count(*) - count(distinct webhook_id) from chaos_hooks where valid and answered ~ '^2'")
invalid=$(count "select count(*) from chaos_hooks where not valid")
requests=$(count "select count(*) from chaos_hooks")

diag "jobs: $TOTAL in $t_jobs s ($(( TOTAL / (t_jobs > 0 ? t_jobs : 1) )) jobs/s with the chaos), webhooks all delivered at $t_all s"
diag "kill -9: $kills ($new_ids under a new id); rescued attempts: $rescued; command reruns after a lost attempt: $reruns"
[[ $SANDBOX != none ]] &&
  diag "kill -9 of sandbox processes: $sb_kills; attempts they failed (retried): $sb_hit"
diag "artifact: $A jobs, $versions versions, $head_lines lines in the heads; S3 went down with $s3_busy artifact jobs running"
diag "webhook requests: $requests (redeliveries under the same id: $hook_dups)"
is "PostgreSQL restarted" "$pg_done" 2
is "PostgreSQL frozen and thawed" "$freeze_state" 2
is "lost jobs (never finished)" "$lost" 0
# What the jobs not succeeded were doing: their last error (the workers'
# logs name its code only) and when they were to run next.
if (( failed > 0 )); then
  diag "jobs not succeeded (the first 12): id status attempts/max, next run, storage, last error"
  sql "select id || ' ' || status || ' ' || attempts || '/' || max_attempts || ', ' ||
              to_char(run_at, 'HH24:MI:SS') || ', ' || coalesce(artifact_storage, '-') || ', ' ||
              coalesce(left(error::text, 400), '-')
         from boxcar.jobs where status <> 'succeeded' order by created_at limit 12" |
    while read -r l; do diag "  $l"; done
fi
is "jobs not succeeded (failed, cancelled or lost)" "$failed" 0
is "jobs finished twice (two finished events)" "$twice" 0
is "command runs no lost attempt explains" "$unexplained" 0
is "jobs succeeded without their command running" "$not_run" 0
is "jobs stuck running once the leases expired" "$stuck" 0
is "running rows without lease or worker rescued and run" "$ghosts" "$GHOSTS"
is "artifact chains: forks" "$forks" 0
is "artifact chains: skips (versions off the head's chain, or a missing parent)" "$off_chain" 0
is "artifact conflicts reported" "$conflicts" 0
is "succeeded artifact jobs whose line is missing from the head" "$head_missing" 0
is "lines in the heads from no succeeded job" "$head_stray" 0
is "lines repeated in a head (a job's changes applied twice)" "$head_twice" 0
is "artifact versions: one per artifact job (none from a lost attempt)" "$versions" "$A"
is "jobs without a delivered, valid webhook" "$hook_missing" 0
is "jobs whose webhook came under two ids" "$hook_two_ids" 0
is "invalid signatures" "$invalid" 0
check "S3 went down while artifact jobs ran" test "${s3_busy:-0}" -gt 0
[[ $SANDBOX != none ]] && check "sandboxes were killed under their jobs ($sb_hit attempts)" test "$sb_hit" -gt 0
tap_done
