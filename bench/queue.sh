#!/usr/bin/env bash
# Queue benchmark: boxcar against graphile-worker (npm), no-op jobs
# (`true`), same PostgreSQL server (one database each), same job count and
# concurrency, one worker process each, both running for the whole run.
#
#   bench/queue.sh            (or `make bench BENCHES=queue`)
#   BENCH_SANDBOX=1 bench/queue.sh   sandboxed jobs, see below (or
#                   bench/queue-sandbox.sh, `make bench BENCHES=queue-sandbox`)
#
#   idle        both workers started and idle for a second: RSS idle
#   warm-up     BENCH_WARMUP jobs each in one statement, not measured
#   throughput  BENCH_ROUNDS rounds, boxcar and graphile alternating, of
#               BENCH_JOBS jobs enqueued in one statement and transaction;
#               jobs/s = N / (last job finished - start of the enqueue
#               transaction), both timestamps taken by the server; median
#   latency     BENCH_RATE jobs/s for BENCH_LAT_SECONDS, one job per
#               transaction, the worker otherwise idle (boxcar, then
#               graphile); pickup = command start (taken by the worker just
#               before it spawns `true`) - jobs.created_at, and - the moment
#               the enqueuer got its COMMIT back; p50/p99; boxcar's split
#               (commit->claim->spawn[->inside]) at p50 and at p99, and the
#               slowest 1% traced (the mean of each phase over them)
#   RSS         /proc/PID/status VmRSS of each worker process every 100 ms;
#               peak over warm-up + throughput + latency
#   warm        (sandboxed) boxcar's warm and cold sandbox starts, and
#               the warm share of each throughput round (/metrics)
#   CPU         over the throughput rounds, per job: the worker process's
#               own time, with the children it reaped, and (sandboxed) all
#               that ran in the worker's own cgroup (see cg_prepare); the
#               whole PostgreSQL server's, and of it the backends on the
#               system's own database (pg_ticks)
#
# boxcar: `build/boxcar worker --sandbox none`, enqueue with boxcar.enqueue(),
# start instant = jobs.result.started_at, finish = jobs.finished_at.
# graphile-worker: bench/graphile_worker.mjs (task `bench_true` spawns
# `true`), enqueue with graphile_worker.add_job(), start instant recorded by
# the task, finish = a statement-level trigger on the delete graphile-worker
# does when it completes a job (it keeps no finished jobs).
#
# Sandboxed mode (BENCH_SANDBOX=1, issue 3): every job runs
#   /bin/sh -c 'date +%s%N'
# isolated, and prints the instant it starts inside the sandbox.  boxcar:
# `build/boxcar worker --sandbox namespace` (its default backend), the job
# spec carries no limits, so the defaults apply (cgroup memory/pids/cpu,
# size-limited workspace, timeout, seccomp); the instant is read back from
# jobs.result->>'stdout'.  graphile-worker: task `bench_sandbox` spawns
#   bwrap --unshare-all --proc /proc --dev /dev --tmpfs /tmp --new-session
#         --die-with-parent (+ read-only /usr and the /bin, /lib... links)
# with the same inner command and keeps the instant from its stdout.
# Pickup latency there ends at that inner start instead of the spawn;
# BENCH_JOBS defaults to 1000; databases bench_queue_sb_*.
# The floor under commit->inside: the command alone (build/spawn-floor),
# back to back and at the latency phase's pace (one every 1000/RATE ms).
# Beside the ceiling (the command alone, C at a time): the command in a
# job's fresh namespaces and nothing else (the kernel's share of any such
# sandbox), bwrap and the command alone, and boxcar-sandbox and the
# command alone (cold, the jobs' limits): what each leaves of the ceiling
# without a queue.
#
# Settings (environment): BENCH_BOXCAR (build/boxcar; another build's
# boxcar, its boxcar-sandbox beside it, for a comparison), BENCH_JOBS
# (2000), BENCH_CONCURRENCY (8), BENCH_ROUNDS (3), BENCH_RATE (50),
# BENCH_LAT_SECONDS (10), BENCH_WARMUP (100), BENCH_POLL_INTERVAL_S (5,
# both workers' poll fallback),
# BENCH_STATEMENT_JOBS (500, sandboxed: the jobs of the per-statement
# table, bench/pg_statements.sh, run after the measured phases),
# BENCH_GW_LOG=warn (drop graphile-worker's per-job info lines), BENCH_KEEP=1
# keeps the two databases and the files for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

SANDBOX=${BENCH_SANDBOX:-0}
[[ $SANDBOX == 1 ]] && N=${BENCH_JOBS:-1000} || N=${BENCH_JOBS:-2000}
C=${BENCH_CONCURRENCY:-8}
RATE=${BENCH_RATE:-50}
LAT_SECS=${BENCH_LAT_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-100}
ROUNDS=${BENCH_ROUNDS:-3}
POLL_S=${BENCH_POLL_INTERVAL_S:-5}
STMT_N=${BENCH_STATEMENT_JOBS:-500}
BOXCAR=${BENCH_BOXCAR:-$BOXCAR_ROOT/build/boxcar}
if [[ $SANDBOX == 1 ]]; then
  DB_BX=bench_queue_sb_boxcar DB_GW=bench_queue_sb_graphile
  BACKEND=namespace GW_TASK=bench_sandbox ME=bench-queue-sandbox
  # The job, the same for both: print the instant it starts, in ns.
  INNER=(/bin/sh -c 'date +%s%N')
  INNER_JSON='["/bin/sh","-c","date +%s%N"]'
  BX_SPEC="{\"command\":$INNER_JSON}"
else
  DB_BX=bench_queue_boxcar DB_GW=bench_queue_graphile
  BACKEND=none GW_TASK=bench_true ME=bench-queue
  INNER=(true)
  BX_SPEC='{"command":["true"]}'
fi

die() { echo "$ME: $*" >&2; exit 1; }
log() { printf '# %s\n' "$*" >&2; }
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }

# --- processes started here die with the script -----------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/$ME.XXXXXX")
declare -A PIDS=()      # name -> pid
declare -A CG=()        # system -> its cgroup directory (cg_prepare)
CG_FILE=""              # cpuacct.usage (ns) or cpu.stat (usage_usec)
cleanup() {
  local rc=$?
  set +e
  for name in "${!PIDS[@]}"; do kill -TERM "${PIDS[$name]}" 2>/dev/null; done
  sleep 0.3
  for name in "${!PIDS[@]}"; do kill -KILL "${PIDS[$name]}" 2>/dev/null; done
  [[ -n ${SQLC_PID:-} ]] && kill "$SQLC_PID" 2>/dev/null
  wait 2>/dev/null
  (( ${#CG[@]} == 0 )) || cg_remove
  if [[ ${BENCH_KEEP:-0} != 1 ]]; then
    # A few tries: the server may be restarting (someone else's test).
    for db in "$DB_BX" "$DB_GW"; do
      for try in 1 2 3 4 5; do
        scripts/pg.sh dropdb "$db" >/dev/null 2>&1 && break
        [[ $try == 5 ]] && echo "# $ME: could not drop database $db" >&2 || sleep 1
      done
    done
    rm -rf "$TMP"
  else
    echo "# kept: databases $DB_BX, $DB_GW; files in $TMP" >&2
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- prerequisites ------------------------------------------------------------
command -v node >/dev/null || die "node is not installed (scripts/deps.sh installs it)"
[[ -f node_modules/graphile-worker/package.json ]] ||
  die "graphile-worker is not installed: run npm ci (scripts/deps.sh does)"
GW_VERSION=$(node -p 'require("./node_modules/graphile-worker/package.json").version')
if [[ ! -x $BOXCAR ]]; then
  for try in 1 2 3 4 5; do
    make --no-print-directory build/boxcar >&2 && break
    [[ $try -eq 5 ]] && die "make build/boxcar failed"
    log "make build/boxcar failed; retrying in 60 s"; sleep 60
  done
fi
if [[ $SANDBOX == 1 ]]; then
  command -v bwrap >/dev/null || die "bwrap is not installed (apt-get install bubblewrap)"
  [[ -x $BOXCAR_ROOT/build/boxcar-sandbox ]] || make --no-print-directory build/boxcar-sandbox >&2 ||
    die "make build/boxcar-sandbox failed"
  # graphile-worker's sandbox: what issue 3 names, plus the read-only system
  # directories a command needs (as in bench/sandbox.sh).
  BWRAP="bwrap --unshare-all --proc /proc --dev /dev --tmpfs /tmp --ro-bind /usr /usr"
  for d in bin lib lib64 sbin; do
    if [[ -L /$d ]]; then BWRAP+=" --symlink $(readlink "/$d") /$d"
    elif [[ -d /$d ]]; then BWRAP+=" --ro-bind /$d /$d"; fi
  done
  BWRAP+=" --new-session --die-with-parent"
  # Both sandboxes must run the job before anything is measured.
  out=$(cd / && env -i PATH=/usr/bin:/bin $BWRAP "${INNER[@]}" 2>&1) &&
    [[ $out =~ ^[0-9]{16,}$ ]] || die "bwrap cannot run the job here: $out"
  SB_DETECT=$("$BOXCAR" sandbox detect 2>&1) || die "boxcar sandbox detect failed: $SB_DETECT"
  grep -q '^backend: *namespace' <<< "$SB_DETECT" ||
    die "boxcar's namespace backend is not available here:"$'\n'"$SB_DETECT"
  SB_CGROUP=$(awk -F': *' '$1 == "cgroup" { sub(/;.*/, ")", $2); print $2 }' <<< "$SB_DETECT")
fi
scripts/pg.sh start

# --- SQL helpers --------------------------------------------------------------
# sql DB QUERY...: a one-off psql (each -c its own transaction).
sql() {
  local db=$1; shift
  local args=()
  for q in "$@"; do args+=(-c "$q"); done
  psql -X -qtA -v ON_ERROR_STOP=1 "$(db_url "$db")" "${args[@]}"
}
# sqlc_open DB / sqlc QUERY: one persistent session for the polls, so that
# waiting costs neither a psql start nor a SCRAM login every 50 ms.
sqlc_open() {
  sqlc_close
  coproc SQLC { exec psql -X -qtA "$(db_url "$1")" 2>&1; }
  SQLC_IN=${SQLC[1]} SQLC_OUT=${SQLC[0]}
}
sqlc_close() {
  if [[ -n ${SQLC_PID:-} ]]; then
    exec {SQLC_IN}>&-
    wait "$SQLC_PID" 2>/dev/null || true
    SQLC_PID=
  fi
}
# sqlc QUERY: its one-line answer in SQLC_ANSWER (no subshell, so that die
# ends the script).
sqlc() {
  { printf '%s;\n' "$1" >&"$SQLC_IN" && IFS= read -r -t 30 SQLC_ANSWER <&"$SQLC_OUT"; } 2>/dev/null ||
    sqlc_lost "$1"
  [[ $SQLC_ANSWER != ERROR:* ]] || die "$SQLC_ANSWER ($1)"
}
# sqlc_lost QUERY: the polling session is gone or silent; a server restart
# (someone else's test suite) is the usual cause.
sqlc_lost() {
  local started
  started=$(pg_start_time 2>/dev/null) || started="(unreachable)"
  [[ $started == "$PG_STARTED" ]] ||
    die "PostgreSQL was restarted during the run (someone else's test?): figures are void (started $PG_STARTED, now $started)"
  die "no answer from psql to: $1"
}
# wait_sql SECS QUERY: polls QUERY every 50 ms until it returns t.
wait_sql() {
  local deadline=$(( $(now_us) + $1 * 1000000 ))
  while sqlc "$2"; [[ $SQLC_ANSWER != t ]]; do
    (( $(now_us) < deadline )) || return 1
    sleep 0.05
  done
}

fresh_db() {
  scripts/pg.sh dropdb "$1" 2>/dev/null
  scripts/pg.sh createdb "$1"
  sql "$1" "create schema bench" \
    "create table bench.marks (k text primary key, t timestamptz not null)" \
    "create table bench.lat (id text primary key, created_us bigint, sent_us bigint, ack_us bigint)" \
    "create table bench.starts (id text primary key, start_us bigint, end_us bigint, inner_us bigint)" \
    "create table bench.done (t timestamptz not null default clock_timestamp())"
}

# --- process probes -----------------------------------------------------------
# rss_sampler PID OUT: "µs kB" every 100 ms until PID exits (builtins only).
rss_sampler() {
  local pid=$1 out=$2 k v _ fd
  exec {fd}<> <(:)
  while [[ -r /proc/$pid/status ]]; do
    while read -r k v _; do
      [[ $k == VmRSS: ]] && { printf '%s %s\n' "${EPOCHREALTIME/./}" "$v"; break; }
    done 2>/dev/null < "/proc/$pid/status"
    read -r -t 0.1 -u "$fd" _ || true
  done > "$out"
}
# --- CPU of each system's whole process tree -------------------------------------
# A worker's ticks plus those of the children it reaped miss most of bwrap:
# bwrap exits with its command's status without waiting for its process in
# the new namespaces (the one that builds the root, runs the command and
# tears the namespaces down at its exit), so that process is reaped by init
# and its time never reaches graphile-worker.  A cgroup counts every process
# started in it, whoever reaps it.  So each worker runs in a cgroup of its
# own, made here and removed at exit: cpuacct on cgroup v1 (boxcar never
# uses that controller); on v2 only where the cgroup this script runs in
# already delegates memory, pids and cpu, since boxcar's worker enables them
# in the cgroup it starts in for its jobs' limits.  Elsewhere: no figure.
cg_own() { awk -F: -v c="$1" '$2 == c || $2 ~ "(^|,)" c "(,|$)" { print $3; exit }' /proc/self/cgroup; }
cg_prepare() {
  local root own s
  if [[ $(stat -fc %T /sys/fs/cgroup 2>/dev/null) == cgroup2fs ]]; then
    own=$(cg_own "") root=/sys/fs/cgroup$own
    awk '{ exit !(/memory/ && /pids/ && /cpu/) }' "$root/cgroup.subtree_control" 2>/dev/null || return 0
    CG_FILE=cpu.stat
  elif [[ -r /sys/fs/cgroup/cpuacct/cpuacct.usage ]]; then
    own=$(cg_own cpuacct) root=/sys/fs/cgroup/cpuacct$own CG_FILE=cpuacct.usage
  else
    return 0
  fi
  for s in boxcar graphile; do
    mkdir "${root%/}/$ME-$$-$s" 2>/dev/null || { CG=(); CG_FILE=""; return 0; }
    CG[$s]=${root%/}/$ME-$$-$s
  done
}
# cg_enter SYSTEM: moves this (sub)shell into SYSTEM's cgroup, if it has one.
cg_enter() { [[ -z ${CG[$1]:-} ]] || echo "$BASHPID" > "${CG[$1]}/cgroup.procs"; }
# cg_usage_us SYSTEM: the CPU time of everything that ran in it, µs.
cg_usage_us() {
  if [[ $CG_FILE == cpu.stat ]]; then awk '$1 == "usage_usec" { print $2 }' "${CG[$1]}/cpu.stat"
  else echo $(( $(< "${CG[$1]}/cpuacct.usage") / 1000 )); fi
}
# cg_remove: the cgroups, once their processes are gone (on v2 boxcar's
# worker leaves its leaf, boxcar-worker, inside).
cg_remove() {
  local s try
  for s in "${!CG[@]}"; do
    for try in 1 2 3 4 5; do
      find "${CG[$s]}" -depth -type d -exec rmdir {} + 2>/dev/null
      [[ -d ${CG[$s]} ]] || break
      [[ $try == 5 ]] && echo "# $ME: could not remove the cgroup ${CG[$s]}" >&2 || sleep 0.5
    done
  done
}

# cpu_ticks PID: user + system clock ticks of the process itself.
cpu_ticks() { local s; s=$(< "/proc/$1/stat"); s=${s##*) }; set -- $s; echo $(( ${12} + ${13} )); }
# cpu_ticks_all PID: the same plus those of its children it has waited for
# (the sandboxes, and what ran inside them).
cpu_ticks_all() { local s; s=$(< "/proc/$1/stat"); s=${s##*) }; set -- $s; echo $(( ${12} + ${13} + ${14} + ${15} )); }
# pg_ticks DB: the same for the whole PostgreSQL server, "all own": the
# postmaster with the backends it reaped and every process of it still
# running (all); of those, the client backends connected to DB (own: the
# worker's connections and the bench's polls, not its enqueue, which runs
# in a psql of its own).
pg_ticks() {
  local pm t c u title own=0
  pm=$(head -1 "$BOXCAR_PG_DATA/postmaster.pid")
  t=$(cpu_ticks_all "$pm")
  # A backend that exits between pgrep and the read counts 0 here (its
  # ticks go to the postmaster's reaped children).
  for c in $(pgrep -P "$pm"); do
    u=$(cpu_ticks "$c" 2>/dev/null) || u=0
    t=$(( t + ${u:-0} ))
    # "postgres: USER DB HOST(PORT) STATE" for a client backend.
    title=$(tr '\0' ' ' < "/proc/$c/cmdline" 2>/dev/null) || title=
    [[ $title =~ ^postgres:\ [^\ ]+\ ([^\ ]+)\ ([^\ ]*\([0-9]+\)|\[local\]) &&
       ${BASH_REMATCH[1]} == "$1" ]] && own=$(( own + ${u:-0} ))
  done
  echo "$t $own"
}
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# rss_stats FILE T_IDLE T0 T1: "idle_kB peak_kB": the last sample at or
# before T_IDLE, the largest in [T0, T1].
rss_stats() {
  awk -v ti="$2" -v t0="$3" -v t1="$4" '
    $1 <= ti { idle = $2 }
    $1 >= t0 && $1 <= t1 && $2 > peak { peak = $2 }
    END { print idle + 0, peak + 0 }' "$1"
}

# --- the two systems -----------------------------------------------------------
# Per system: its database, how one job is enqueued (an SQL expression), a
# query that is t once every job has run, and the finish time of the last
# job of throughput round $r (marks s, c, e of that round in scope as m).
declare -A DB=([boxcar]=$DB_BX [graphile]=$DB_GW)
declare -A ENQ=(
  [boxcar]="boxcar.enqueue(queue => 'default', spec => '$BX_SPEC')"
  [graphile]="graphile_worker.add_job('$GW_TASK', '{}'::json)")
declare -A DONE=(
  [boxcar]="select not exists (select from boxcar.jobs where status in ('queued', 'running'))"
  [graphile]="select not exists (select from graphile_worker._private_jobs where last_error is null)")
declare -A LAST=(
  [boxcar]="select max(j.finished_at) t from boxcar.jobs j, m where j.created_at between m.s and m.c"
  [graphile]="select max(d.t) t from bench.done d, m where d.t between m.s and m.e")
declare -A R=()   # results: R[system.key]

# use SYSTEM: points the polling session at SYSTEM's database.
use() { printf '\\c %s\n' "${DB[$1]}" >&"$SQLC_IN"; }

# alive SYSTEM: dies, with the end of its log, if SYSTEM's worker has exited.
alive() {
  [[ -r /proc/${PIDS[$1]}/stat ]] ||
    die "the $1 worker exited; the end of its log:"$'\n'"$(tail -15 "$TMP/$1.log")"
}

# tp_round SYSTEM R: N jobs in one statement and transaction, wait for all.
tp_round() {
  local s=$1 r=$2 pid=${PIDS[$1]} cpu0 cpua0 cg0 pg0 pg1
  alive "$s"
  cpu0=$(cpu_ticks "$pid") cpua0=$(cpu_ticks_all "$pid") pg0=($(pg_ticks "${DB[$s]}"))
  [[ -n $CG_FILE ]] && cg0=$(cg_usage_us "$s")
  sql "${DB[$s]}" "insert into bench.marks values ('s$r', now()); select count(${ENQ[$s]}) from generate_series(1, $N)" \
                  "insert into bench.marks values ('c$r', clock_timestamp())" >/dev/null
  use "$s"
  wait_sql 120 "${DONE[$s]}" || { alive "$s"; die "$s: $N jobs did not finish in 120 s"; }
  sql "${DB[$s]}" "insert into bench.marks values ('e$r', clock_timestamp())" >/dev/null
  alive "$s"
  R[$s.cpu_ticks]=$(( ${R[$s.cpu_ticks]:-0} + $(cpu_ticks "$pid") - cpu0 ))
  R[$s.cpu_ticks_all]=$(( ${R[$s.cpu_ticks_all]:-0} + $(cpu_ticks_all "$pid") - cpua0 ))
  pg1=($(pg_ticks "${DB[$s]}"))
  R[$s.pg_ticks]=$(( ${R[$s.pg_ticks]:-0} + pg1[0] - pg0[0] ))
  R[$s.pg_own_ticks]=$(( ${R[$s.pg_own_ticks]:-0} + pg1[1] - pg0[1] ))
  [[ -n $CG_FILE ]] && R[$s.cg_us]=$(( ${R[$s.cg_us]:-0} + $(cg_usage_us "$s") - cg0 ))
  local out
  out=$(sql "${DB[$s]}" "with m as (select max(t) filter (where k = 's$r') s, max(t) filter (where k = 'c$r') c,
                                          max(t) filter (where k = 'e$r') e from bench.marks),
                             d as (${LAST[$s]})
                        select round(($N / extract(epoch from d.t - m.s))::numeric, 1),
                               round((extract(epoch from m.c - m.s) * 1000)::numeric, 1),
                               round(($N / extract(epoch from d.t - m.c))::numeric, 1)
                          from m, d")
  R[$s.tp]+="${out//|/ } "$'\n'
}

# lat_phase SYSTEM: RATE jobs/s for LAT_SECS, one per transaction.
lat_phase() {
  local s=$1
  use "$s"
  # In the background so that a signal to the script is handled at once.
  DATABASE_URL=$(db_url "${DB[$s]}") BENCH_BOXCAR_SPEC=$BX_SPEC BENCH_GW_TASK=$GW_TASK \
    node bench/enqueue_steady.mjs "$s" "$RATE" "$LAT_SECS" \
    "$TMP/$s.lat" & PIDS[enqueuer]=$!
  # Meanwhile: is autovacuum working on this database (it follows the
  # throughput rounds and competes for the two CPUs)?
  R[$s.autovac]=0
  while kill -0 "${PIDS[enqueuer]}" 2>/dev/null; do
    sqlc "select count(*) from pg_stat_activity where backend_type = 'autovacuum worker' and datname = current_database()"
    (( SQLC_ANSWER > 0 )) && R[$s.autovac]=$(( ${R[$s.autovac]} + 1 ))
    sleep 0.25
  done
  wait "${PIDS[enqueuer]}" || die "$s: the steady enqueuer failed"
  unset 'PIDS[enqueuer]'
  wait_sql 30 "${DONE[$s]}" || { alive "$s"; die "$s: latency jobs did not finish in 30 s"; }
  alive "$s"
  sql "${DB[$s]}" "\\copy bench.lat from '$TMP/$s.lat'" >/dev/null
}

# median of the numbers on stdin; range "min-max".
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }
# pct_cols EXPR: p50|p99|max|count of EXPR (ms).
pct_cols() {
  echo "round(percentile_cont(0.5) within group (order by $1)::numeric, 2),
        round(percentile_cont(0.99) within group (order by $1)::numeric, 2),
        round(max($1)::numeric, 2), count($1)"
}
# The instant a latency job's command started (µs since the epoch): just
# before the spawn (worker clock), or, sandboxed, the job's own `date`
# inside the sandbox.  boxcar: over the job row j; graphile: over
# bench.starts s.
if [[ $SANDBOX == 1 ]]; then
  BX_START_US="(case when j.result->>'stdout' ~ '^\s*[0-9]{16,}\s*$'
                     then btrim(j.result->>'stdout', E' \n')::numeric / 1000 end)"
  GW_START_US="s.inner_us"
else
  BX_START_US="extract(epoch from (j.result->>'started_at')::timestamptz) * 1e6"
  GW_START_US="s.start_us"
fi
BX_SPAWN_US="extract(epoch from (j.result->>'started_at')::timestamptz) * 1e6"
# p50 of EXPR, ms.
p50() { echo "round(percentile_cont(0.5) within group (order by $1)::numeric, 2)"; }
p99() { echo "round(percentile_cont(0.99) within group (order by $1)::numeric, 2)"; }

# --- environment ------------------------------------------------------------------
pg_start_time() { psql -X -qtA "$BOXCAR_ADMIN_URL" -c "select pg_postmaster_start_time()"; }
PG_STARTED=$(pg_start_time)
# The wall clock against the monotonic one (us): every latency here is a
# difference of wall-clock instants taken by different processes, so a
# step of the host's clock during the run (seen here: graphile's
# commit->spawn came out at -240 ms) voids them.  Slewing (at most
# 500 ppm) is not a step: the bound allows for it.
clock_offset_us() { python3 -c 'import time; print((time.time_ns() - time.monotonic_ns()) // 1000)'; }
CLOCK_OFFSET=$(clock_offset_us)
CLOCK_T0=$SECONDS
# Other people's sessions on the same server (a test suite running meanwhile
# shares the CPUs and the WAL with the benchmark).
other_sessions() {
  psql -X -qtA "$BOXCAR_ADMIN_URL" -c \
    "select count(*) || ' (' || count(*) filter (where state <> 'idle') || ' active)'
       from pg_stat_activity where backend_type = 'client backend'
        and datname not in ('$DB_BX', '$DB_GW') and pid <> pg_backend_pid()"
}
OTHER_SESSIONS=$(other_sessions)
BOXCAR_BUILT=$(date -u -r "$BOXCAR" '+%F %T UTC')
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "$([[ $SANDBOX == 1 ]] && echo 'sandboxed jobs; ')N=$N x $ROUNDS rounds, concurrency=$C, latency ${RATE}/s x ${LAT_SECS}s, warm-up $WARMUP;" \
    "$(nproc) CPUs; load $LOAD_BEFORE; other PG sessions: $OTHER_SESSIONS"

# --- both workers, idle -------------------------------------------------------------
log "starting boxcar worker and graphile-worker $GW_VERSION (each on its own database)"
fresh_db "$DB_BX"
fresh_db "$DB_GW"
DATABASE_URL=$(db_url "$DB_BX") "$BOXCAR" migrate >/dev/null
mkdir -p "$TMP/work"
MPORT=$(free_port)
# Only the sandboxed report has the figure (without sandboxes the worker
# reaps all it starts).
[[ $SANDBOX == 1 ]] && cg_prepare
(cg_enter boxcar
 DATABASE_URL=$(db_url "$DB_BX") exec "$BOXCAR" worker --worker-id bench-queue --queues default \
   --concurrency "$C" --sandbox "$BACKEND" --poll-interval "${POLL_S}s" --work-dir "$TMP/work" \
   --metrics-addr "127.0.0.1:$MPORT") 2> "$TMP/boxcar.log" &
PIDS[boxcar]=$!
(cg_enter graphile
 DATABASE_URL=$(db_url "$DB_GW") BENCH_CONCURRENCY=$C BENCH_POLL_MS=$((POLL_S * 1000)) \
   BENCH_STARTS="$TMP/graphile.starts" BENCH_READY="$TMP/graphile.ready" \
   BENCH_BWRAP=${BWRAP:-} BENCH_INNER=${INNER_JSON:-} \
   exec node bench/graphile_worker.mjs) > "$TMP/graphile.log" 2>&1 &
PIDS[graphile]=$!
for s in boxcar graphile; do rss_sampler "${PIDS[$s]}" "$TMP/$s.rss" & PIDS[$s-rss]=$!; done

sqlc_open "$DB_BX"
wait_sql 20 "select exists (select from boxcar.workers where id = 'bench-queue')" ||
  die "boxcar worker did not start: $(tail -5 "$TMP/boxcar.log")"
for _ in $(seq 200); do [[ -f $TMP/graphile.ready ]] && break; sleep 0.1; done
[[ -f $TMP/graphile.ready ]] || die "graphile-worker did not start: $(tail -5 "$TMP/graphile.log")"
# graphile-worker deletes a job when it completes it: note when.
sql "$DB_GW" "create function bench.note_done() returns trigger language plpgsql as
                \$\$ begin insert into bench.done default values; return null; end \$\$" \
             "create trigger bench_done after delete on graphile_worker._private_jobs
                for each statement execute function bench.note_done()" >/dev/null
sleep 1
T_IDLE=$(now_us)
# Memory held by the idle worker's warm sandboxes: the PSS of each
# supervisor, its sandbox's init and the job's process waiting in it (each
# address space once: the job's process shares init's until it execs,
# kcmp(2) KCMP_VM tells), and what its cgroup is charged (the tmpfs root,
# kernel memory of the namespaces' objects).
pss_of_address_spaces() {
  python3 - "$@" <<'PY'
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_KCMP, KCMP_VM = 312, 1
seen, total = [], 0
for pid in map(int, sys.argv[1:]):
    if any(libc.syscall(SYS_KCMP, pid, other, KCMP_VM, 0, 0) == 0 for other in seen):
        continue
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            total += next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    except (OSError, StopIteration):
        continue
    seen.append(pid)
print(total)
PY
}
warm_memory() {
  local n=0 pss=0 cg=0 p path f init
  for p in $(pgrep -P "$1" -f 'boxcar-sandbox --warm'); do
    n=$((n + 1))
    init=$(pgrep -P "$p" | head -1)
    # shellcheck disable=SC2046 # the pids, a word each
    pss=$(( pss + $(pss_of_address_spaces "$p" $init ${init:+$(pgrep -P "$init")}) ))
    path=$(awk -F: '$2 == "memory" || $2 == "" { print $3; exit }' "/proc/${init:-$p}/cgroup" 2>/dev/null)
    for f in "/sys/fs/cgroup/memory$path/memory.usage_in_bytes" "/sys/fs/cgroup$path/memory.current" \
             "/sys/fs/cgroup/unified$path/memory.current"; do
      [[ -r $f ]] && { cg=$(( cg + $(cat "$f") / 1024 )); break; }
    done
  done
  echo "$n $pss $cg"
}
[[ $SANDBOX == 1 ]] && read -r R[warm_n] R[warm_pss_kb] R[warm_cg_kb] < <(warm_memory "${PIDS[boxcar]}")

# boxcar's pools so far, from one read of its /metrics: sandbox starts
# "warm cold", then workspace filesystems "reused made cold discarded".
pool_counts() {
  curl -fsS "http://127.0.0.1:$MPORT/metrics" 2>/dev/null |
    awk -F'[{}" ]+' '$1 == "boxcar_sandbox_starts_total" { s[$3] = $4 }
         $1 == "boxcar_workspace_events_total" { v[$3] = $4 }
         END { print s["warm"] + 0, s["cold"] + 0, v["reused"] + 0, v["made"] + 0, v["cold"] + 0,
                     v["discarded"] + 0 }'
}

# --- load: warm-up, throughput rounds alternating, then latency --------------------
T0=$(now_us)
log "warm-up, $ROUNDS throughput rounds each (alternating), latency phases"
for s in boxcar graphile; do
  sql "${DB[$s]}" "select count(${ENQ[$s]}) from generate_series(1, $WARMUP)" >/dev/null
  use "$s"
  wait_sql 60 "${DONE[$s]}" || { alive "$s"; die "$s: warm-up jobs did not finish in 60 s"; }
done
read -r w0 c0 u0 m0 k0 d0 < <(pool_counts)
for r in $(seq "$ROUNDS"); do
  read -r wa ca _ < <(pool_counts)
  tp_round boxcar "$r"
  read -r wb cb _ < <(pool_counts)
  # Warm share of this round's starts (the pool keeping up under load).
  R[warm_rounds]+="$(awk -v w=$((wb - wa)) -v c=$((cb - ca)) 'BEGIN { printf "%.0f%%", w + c ? 100 * w / (w + c) : 0 }') "
  sleep 0.3
  tp_round graphile "$r"
  sleep 0.3
done
read -r w1 c1 u1 m1 k1 d1 < <(pool_counts)
R[ws]="$((u1 - u0)) wiped and reused, $((m1 - m0)) made ahead, $((k1 - k0)) made on the job's path, $((d1 - d0)) discarded"
sleep 0.5
lat_phase boxcar
read -r w2 c2 _ < <(pool_counts)
R[starts]="throughput rounds $((w1 - w0)) warm, $((c1 - c0)) cold; latency phase $((w2 - w1)) warm, $((c2 - c1)) cold"
sleep 0.5
lat_phase graphile
sleep 0.3
T1=$(now_us)

for s in boxcar graphile; do
  R[$s.hwm_kb]=$(status_kb "${PIDS[$s]}" VmHWM)
  read -r R[$s.rss_idle_kb] R[$s.rss_peak_kb] < <(rss_stats "$TMP/$s.rss" "$T_IDLE" "$T0" "$T1")
  R[$s.jobs_s]=$(awk 'NF { print $1 }' <<< "${R[$s.tp]}" | median)
  R[$s.jobs_s_range]=$(awk 'NF { print $1 }' <<< "${R[$s.tp]}" | range)
  R[$s.enqueue_ms]=$(awk 'NF { print $2 }' <<< "${R[$s.tp]}" | median)
  R[$s.drain_jobs_s]=$(awk 'NF { print $3 }' <<< "${R[$s.tp]}" | median)
done
R[boxcar.failed]=$(sql "$DB_BX" "select count(*) from boxcar.jobs where status <> 'succeeded'")
R[graphile.failed]=$(sql "$DB_GW" "select count(*) from graphile_worker._private_jobs")
sqlc_close
for s in boxcar graphile; do
  kill -TERM "${PIDS[$s]}"; wait "${PIDS[$s]}" || true; unset "PIDS[$s]"
  wait "${PIDS[$s-rss]}" 2>/dev/null || true; unset "PIDS[$s-rss]"
done

# --- pickup latency -------------------------------------------------------------------
lat=$(sql "$DB_BX" "select $(pct_cols "x"), $(pct_cols "y") from (
         select ($BX_START_US - extract(epoch from j.created_at) * 1e6) / 1000 x,
                ($BX_START_US - l.ack_us) / 1000 y
           from bench.lat l join boxcar.jobs j on j.id::text = l.id) s")
IFS='|' read -r R[boxcar.p50] R[boxcar.p99] R[boxcar.max] R[boxcar.lat_n] \
             R[boxcar.ack_p50] R[boxcar.ack_p99] R[boxcar.ack_max] _ <<< "$lat"
# Where boxcar's pickup goes: commit ack -> claim (jobs.started_at, set in
# claim()) -> command start (result.started_at) [-> start inside the
# sandbox], p50 of each.
BX_PHASES="select (extract(epoch from j.started_at) * 1e6 - l.ack_us) / 1000 a,
                  extract(epoch from (j.result->>'started_at')::timestamptz - j.started_at) * 1000 b,
                  ($BX_START_US - $BX_SPAWN_US) / 1000 c, ($BX_START_US - l.ack_us) / 1000 t
             from bench.lat l join boxcar.jobs j on j.id::text = l.id"
R[boxcar.split]=$(sql "$DB_BX" "select 'commit->claim ' || $(p50 a) || ' ms, claim->spawn ' || $(p50 b) || ' ms'
                                    $([[ $SANDBOX == 1 ]] && echo "|| ', spawn->inside ' || $(p50 c) || ' ms'")
                               from ($BX_PHASES) s")
# The same phases at p99, each on its own; and the slowest 1% of the jobs
# by commit->inside, traced: how many, and the mean of each phase over
# them (where their tail went).
R[boxcar.split99]=$(sql "$DB_BX" "select 'commit->claim ' || $(p99 a) || ' ms, claim->spawn ' || $(p99 b) || ' ms'
                                    $([[ $SANDBOX == 1 ]] && echo "|| ', spawn->inside ' || $(p99 c) || ' ms'")
                               from ($BX_PHASES) s")
R[boxcar.tail]=$(sql "$DB_BX" "select count(*) || ' jobs at or above ' || round(min(t)::numeric, 2) || ' ms, mean commit->claim '
                                      || round(avg(a)::numeric, 2) || ', claim->spawn ' || round(avg(b)::numeric, 2)
                                      $([[ $SANDBOX == 1 ]] && echo "|| ', spawn->inside ' || round(avg(c)::numeric, 2)") || ' ms'
                                 from ($BX_PHASES) q
                                where t >= (select percentile_cont(0.99) within group (order by t) from ($BX_PHASES) s)")
[[ -s $TMP/graphile.starts ]] || die "graphile-worker wrote no start times: $(tail -5 "$TMP/graphile.log")"
sql "$DB_GW" "\\copy bench.starts from '$TMP/graphile.starts'" >/dev/null
lat=$(sql "$DB_GW" "select $(pct_cols "x"), $(pct_cols "y") from (
         select ($GW_START_US - l.created_us) / 1000.0 x, ($GW_START_US - l.ack_us) / 1000.0 y
           from bench.lat l join bench.starts s using (id)) q")
IFS='|' read -r R[graphile.p50] R[graphile.p99] R[graphile.max] R[graphile.lat_n] \
             R[graphile.ack_p50] R[graphile.ack_p99] R[graphile.ack_max] _ <<< "$lat"
if [[ $SANDBOX == 1 ]]; then
  R[graphile.split]=$(sql "$DB_GW" "select 'commit->spawn ' || $(p50 a) || ' ms, spawn->inside ' || $(p50 b) || ' ms'
                                 from (select (s.start_us - l.ack_us) / 1000.0 a, (s.inner_us - s.start_us) / 1000.0 b
                                         from bench.lat l join bench.starts s using (id)) q")
  # Sandbox start-up under the throughput load: spawn -> inside, every job
  # of the rounds (p50|p99 ms).
  R[boxcar.sb_start]=$(sql "$DB_BX" "select $(p50 c) || '|' || round(percentile_cont(0.99) within group (order by c)::numeric, 2)
                                     from (select ($BX_START_US - $BX_SPAWN_US) / 1000 c from boxcar.jobs j) q")
  R[graphile.sb_start]=$(sql "$DB_GW" "select $(p50 c) || '|' || round(percentile_cont(0.99) within group (order by c)::numeric, 2)
                                       from (select (s.inner_us - s.start_us) / 1000.0 c from bench.starts s) q")
  # Every latency job must have reported its inner start.
  for s in boxcar graphile; do
    [[ ${R[$s.lat_n]} == $(wc -l < "$TMP/$s.lat") ]] ||
      die "$s: ${R[$s.lat_n]} of $(wc -l < "$TMP/$s.lat") latency jobs reported a start inside the sandbox"
  done
fi

# Where boxcar's PostgreSQL time per sandboxed job goes, statement by
# statement (bench/pg_statements.sh): a worker of its own, after the
# measured phases, so that the counting's cost stays out of the figures.
if [[ $SANDBOX == 1 ]]; then
  R[statements]=$(bench/pg_statements.sh "$DB_BX" "$STMT_N" "$BX_SPEC" --queues default \
                    --concurrency "$C" --sandbox "$BACKEND" --poll-interval "${POLL_S}s" \
                    --work-dir "$TMP/work") || die "bench/pg_statements.sh failed"
fi

[[ $(pg_start_time) == "$PG_STARTED" ]] ||
  die "PostgreSQL was restarted during the run (someone else's test?): figures are void"
CLOCK_STEP=$(( $(clock_offset_us) - CLOCK_OFFSET ))
(( ${CLOCK_STEP#-} <= 2000 + (SECONDS - CLOCK_T0) * 600 )) ||
  die "the host's wall clock moved $(( CLOCK_STEP / 1000 )) ms against the monotonic one during the run (a clock step): the latency figures are void"

# The floor under commit->inside: the job's command alone, spawned with no
# sandbox and no queue, as the job runs it: cwd /, and the environment
# both peers give a job (PATH, HOME, LANG=C.UTF-8: date loads the locale,
# about 0.13 ms here, which an empty environment left out of the floor).
[[ -x $BOXCAR_ROOT/build/spawn-floor ]] || make --no-print-directory build/spawn-floor >&2 ||
  die "make build/spawn-floor failed"
alone() { (cd / && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
                   "$BOXCAR_ROOT/build/spawn-floor" "$@"); }
# floor KEY SPAWN-FLOOR-ARGS...: its "p50_ms=X p99_ms=Y" into R[KEY_p50], R[KEY_p99].
floor() {
  local key=$1 out; shift
  out=$(alone "$@") || die "spawn-floor $* failed: $out"
  out=${out#p50_ms=}; R[${key}_p50]=${out%% *}; R[${key}_p99]=${out##*p99_ms=}
}
if [[ $SANDBOX == 1 ]]; then
  floor floor 400 "${INNER[@]}"
  # The same at the latency phase's pace: back to back, the CPUs never
  # idle and the caches stay hot, which no paced job finds (here a spawn
  # one every 20 ms costs 0.2-0.5 ms more than back to back).
  EVERY_MS=$(( RATE >= 1000 ? 1 : 1000 / RATE ))
  floor pfloor --every "$EVERY_MS" 250 "${INNER[@]}"
fi
# The ceiling over throughput: the same command alone, N runs, C at a
# time, its output thrown away; no queue running a job once each can pass it.
# rate KEY [--namespaced] COMMAND...: spawn-floor's "jobs_s=X" for
# COMMAND, N runs, C at a time, into R[KEY]; --namespaced clones each run
# into a sandboxed job's namespaces (spawn-floor --rate-namespaced).
rate() {
  local key=$1 mode=--rate out; shift
  [[ $1 == --namespaced ]] && { mode=--rate-namespaced; shift; }
  out=$(alone "$mode" "$N" "$C" "$@") || die "spawn-floor $mode $1 failed: $out"
  R[$key]=${out#jobs_s=}
}
rate ceiling "${INNER[@]}"
if [[ $SANDBOX == 1 ]]; then
  # The kernel's part alone: the namespaces boxcar's sandbox makes for a
  # job (mount, pid, ipc, uts, network; user when not root), made by the
  # spawn's own clone, with no mounts, cgroup, seccomp or helper process:
  # a bound on any sandbox that gives each job fresh ones.
  rate ns_ceiling --namespaced "${INNER[@]}"
  # The peer's sandbox alone the same way (bwrap and the command, no
  # queue, no limits, no seccomp): what namespaces and mounts leave.
  rate sb_ceiling $BWRAP "${INNER[@]}"
  # And boxcar's own sandbox alone, cold, with what the worker gives the
  # bench's jobs (the spec's default limits, read from worker/spec/spec.h;
  # seccomp; the environment), but a tmpfs of the same bound for the
  # workspace instead of the worker's ext4: the sandbox's share, without
  # the queue.
  spec_default() {
    local v
    v=$(awk -v k="SPEC_DEFAULT_$1" '$1 == "#define" && $2 == k { print $3 }' worker/spec/spec.h)
    [[ -n $v ]] || die "SPEC_DEFAULT_$1 is not in worker/spec/spec.h"
    echo "$v"
  }
  # (An assignment fails with its substitution: set -e stops here.)
  SB_MEM=$(spec_default MEMORY_MB); SB_PIDS=$(spec_default PIDS)
  SB_CPUS=$(spec_default CPUS); SB_DISK=$(spec_default DISK_MB)
  BX_SB=("$(dirname "$BOXCAR")/boxcar-sandbox" --env PATH=/usr/local/bin:/usr/bin:/bin
         --env HOME=/workspace --env LANG=C.UTF-8 --timeout 600 --memory-mb "$SB_MEM"
         --pids "$SB_PIDS" --cpus "$SB_CPUS" --disk-mb "$SB_DISK" --network none --)
  rate bx_sb_ceiling "${BX_SB[@]}" "${INNER[@]}"
fi

# --- report -------------------------------------------------------------------------
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.0f%%", 100 * a / b }'; }
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", a - b }'; }
row() { printf '%-28s %12s %12s %16s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
for s in boxcar graphile; do
  R[$s.idle_mib]=$(mib "${R[$s.rss_idle_kb]}"); R[$s.peak_mib]=$(mib "${R[$s.rss_peak_kb]}")
  R[$s.hwm_mib]=$(mib "${R[$s.hwm_kb]}")
  R[$s.cpu_us_job]=$(( ${R[$s.cpu_ticks]} * 1000000 / $(getconf CLK_TCK) / (N * ROUNDS) ))
  R[$s.cpu_all_us_job]=$(( ${R[$s.cpu_ticks_all]} * 1000000 / $(getconf CLK_TCK) / (N * ROUNDS) ))
  R[$s.pg_us_job]=$(( ${R[$s.pg_ticks]} * 1000000 / $(getconf CLK_TCK) / (N * ROUNDS) ))
  R[$s.pg_own_us_job]=$(( ${R[$s.pg_own_ticks]} * 1000000 / $(getconf CLK_TCK) / (N * ROUNDS) ))
  R[$s.pg_rest_us_job]=$(( ${R[$s.pg_us_job]} - ${R[$s.pg_own_us_job]} ))
  [[ -n $CG_FILE ]] && R[$s.cg_us_job]=$(( ${R[$s.cg_us]} / (N * ROUNDS) ))
done
# The labels of the latency rows: where pickup ends.
if [[ $SANDBOX == 1 ]]; then
  L_LAT="created->inside" L_ACK="commit->inside"
else
  L_LAT="pickup latency" L_ACK="pickup from commit"
fi

echo
if [[ $SANDBOX == 1 ]]; then
  echo "queue benchmark, sandboxed: $N jobs (/bin/sh -c 'date +%s%N', each in its own sandbox) x $ROUNDS rounds,"
  echo "concurrency $C, one worker each; boxcar --sandbox namespace with the default limits"
  echo "(memory 1024 MiB, pids 256, 1 CPU, disk 2048 MiB, timeout 600 s) and seccomp;"
  echo "cgroup $SB_CGROUP;"
  echo "graphile-worker spawns bwrap $(bwrap --version | awk '{ print $2 }') (namespaces only: no limits, no seccomp);"
else
  echo "queue benchmark: $N no-op jobs (command true) x $ROUNDS rounds, concurrency $C, one worker each;"
fi
echo "PostgreSQL 15 (127.0.0.1:$BOXCAR_PG_PORT, synchronous_commit on), $(nproc) CPUs, node $(node --version),"
echo "build/boxcar $("$BOXCAR" version 2>/dev/null | head -1), the binary of $BOXCAR_BUILT"
printf '%-28s %12s %12s %16s\n' "" "boxcar" "graphile" "boxcar/graphile"
printf '%-28s %12s %12s %16s\n' "" "" "$GW_VERSION" ""
row "throughput (jobs/s)"       "${R[boxcar.jobs_s]}"   "${R[graphile.jobs_s]}"
printf '%-28s %12s %12s\n' "  rounds min-max" "${R[boxcar.jobs_s_range]}" "${R[graphile.jobs_s_range]}"
if [[ $SANDBOX == 1 ]]; then   # the figure issue 3 asks for first
  row "$L_ACK p50 (ms)"   "${R[boxcar.ack_p50]}" "${R[graphile.ack_p50]}"
  row "$L_ACK p99 (ms)"   "${R[boxcar.ack_p99]}" "${R[graphile.ack_p99]}"
  row "$L_LAT p50 (ms)"   "${R[boxcar.p50]}"     "${R[graphile.p50]}"
  row "$L_LAT p99 (ms)"   "${R[boxcar.p99]}"     "${R[graphile.p99]}"
else
row "pickup latency p50 (ms)"   "${R[boxcar.p50]}"      "${R[graphile.p50]}"
row "pickup latency p99 (ms)"   "${R[boxcar.p99]}"      "${R[graphile.p99]}"
row "pickup from commit p50 (ms)" "${R[boxcar.ack_p50]}" "${R[graphile.ack_p50]}"
row "pickup from commit p99 (ms)" "${R[boxcar.ack_p99]}" "${R[graphile.ack_p99]}"
fi
row "worker RSS idle (MiB)"     "${R[boxcar.idle_mib]}" "${R[graphile.idle_mib]}"
row "worker RSS peak (MiB)"     "${R[boxcar.peak_mib]}" "${R[graphile.peak_mib]}"
echo
echo "details"
row "bulk enqueue of N (ms)"       "${R[boxcar.enqueue_ms]}"   "${R[graphile.enqueue_ms]}"
row "drain after commit (jobs/s)"  "${R[boxcar.drain_jobs_s]}" "${R[graphile.drain_jobs_s]}"
row "worker CPU per job (us)"      "${R[boxcar.cpu_us_job]}"   "${R[graphile.cpu_us_job]}"
if [[ $SANDBOX == 1 ]]; then
  row "  + reaped children (us)"     "${R[boxcar.cpu_all_us_job]}" "${R[graphile.cpu_all_us_job]}"
  if [[ -n $CG_FILE ]]; then
    row "  + sandboxes' CPU (us)"    "${R[boxcar.cg_us_job]}"      "${R[graphile.cg_us_job]}"
  else
    echo "  + sandboxes' CPU: no figure (no cpuacct, or a cgroup v2 that does not delegate here)"
  fi
  row "sandbox start p50 (ms)"       "${R[boxcar.sb_start]%|*}"   "${R[graphile.sb_start]%|*}"
  row "sandbox start p99 (ms)"       "${R[boxcar.sb_start]#*|}"   "${R[graphile.sb_start]#*|}"
fi
row "PostgreSQL CPU per job (us)"  "${R[boxcar.pg_us_job]}"    "${R[graphile.pg_us_job]}"
row "  on its database (us)"      "${R[boxcar.pg_own_us_job]}"  "${R[graphile.pg_own_us_job]}"
row "  the rest (us)"             "${R[boxcar.pg_rest_us_job]}" "${R[graphile.pg_rest_us_job]}"
row "$L_LAT max (ms)"              "${R[boxcar.max]}"          "${R[graphile.max]}"
row "$L_ACK max (ms)"              "${R[boxcar.ack_max]}"      "${R[graphile.ack_max]}"
row "VmHWM at the end (MiB)"       "${R[boxcar.hwm_mib]}"      "${R[graphile.hwm_mib]}"
echo "boxcar pickup p50 split: ${R[boxcar.split]}"
echo "boxcar pickup p99 split: ${R[boxcar.split99]} (each phase's own p99)"
echo "boxcar slowest 1% by $L_ACK: ${R[boxcar.tail]}"
if [[ $SANDBOX == 1 ]]; then
  if (( ${R[warm_n]:-0} > 0 )); then
    echo "warm sandboxes held by the idle worker: ${R[warm_n]}, each $(( R[warm_pss_kb] / R[warm_n] )) KiB PSS" \
         "(supervisor, init, waiting job process) + $(( R[warm_cg_kb] / R[warm_n] )) KiB charged to its cgroup"
  else
    echo "warm sandboxes held by the idle worker: none (pool off, or not root)"
  fi
  echo "boxcar sandbox starts: ${R[starts]}; warm per throughput round: ${R[warm_rounds]}"
  echo "boxcar workspace filesystems in the throughput rounds: ${R[ws]}"
  echo "the job's command alone, in the job's environment, no sandbox or queue (spawn -> date inside, 400 runs, idle host):" \
       "p50 ${R[floor_p50]} ms, p99 ${R[floor_p99]} ms;" \
       "one every $EVERY_MS ms, as the latency phase's jobs come (250 runs): p50 ${R[pfloor_p50]} ms, p99 ${R[pfloor_p99]} ms"
  echo "boxcar commit->inside p50 above the floor: $(diff_ms "${R[boxcar.ack_p50]}" "${R[floor_p50]}") ms" \
       "(back to back), $(diff_ms "${R[boxcar.ack_p50]}" "${R[pfloor_p50]}") ms (paced)"
fi
[[ $SANDBOX == 1 ]] && echo "graphile pickup p50 split: ${R[graphile.split]}"
[[ $SANDBOX == 1 ]] && echo "${R[statements]}"
echo "the job's command alone, no sandbox or queue, $C at a time, $N runs (the ceiling over any queue's" \
     "jobs/s here): ${R[ceiling]} jobs/s, $(ratio "${R[ceiling]}" "${R[graphile.jobs_s]}")x graphile's throughput;" \
     "boxcar at $(pct "${R[boxcar.jobs_s]}" "${R[ceiling]}") of it, graphile at $(pct "${R[graphile.jobs_s]}" "${R[ceiling]}")"
if [[ $SANDBOX == 1 ]]; then
  # share KEY: R[KEY] jobs/s, its share of the ceiling, boxcar's of it.
  share() {
    echo "${R[$1]} jobs/s, $(pct "${R[$1]}" "${R[ceiling]}") of the ceiling;" \
         "boxcar at $(pct "${R[boxcar.jobs_s]}" "${R[$1]}") of it"
  }
  echo "the job's namespaces and the command alone, no queue, $C at a time, $N runs (each run cloned into" \
       "new mount, pid, ipc, uts and network namespaces; nothing else): $(share ns_ceiling)"
  echo "bwrap and the command alone, no queue, $C at a time, $N runs (namespaces and mounts only):" \
       "$(share sb_ceiling), graphile at $(pct "${R[graphile.jobs_s]}" "${R[sb_ceiling]}")"
  echo "boxcar-sandbox and the command alone, cold, no queue, $C at a time, $N runs (the jobs' limits," \
       "seccomp, a tmpfs workspace of their disk bound): $(share bx_sb_ceiling)"
fi
printf '%-28s %12s %12s\n' "autovacuum seen (1/4 s)" "${R[boxcar.autovac]}" "${R[graphile.autovac]}"
printf '%-28s %12s %12s\n' "latency samples" "${R[boxcar.lat_n]}" "${R[graphile.lat_n]}"
printf '%-28s %12s %12s\n' "jobs not succeeded" "${R[boxcar.failed]}" "${R[graphile.failed]}"
echo "jobs/s: N / (last job finished - start of the enqueue transaction), server clock, median"
echo "of the rounds (boxcar and graphile rounds alternate); drain: N / (last job finished -"
echo "commit of the enqueue transaction); worker CPU: the worker process's own user+system time."
echo "PostgreSQL CPU: all of the server's processes over the throughput rounds (background ones too);"
echo "on its database: the backends connected to the system's database (its worker's and the bench's"
echo "polls); the rest: the enqueue (a psql session of its own), background processes, other sessions."
if [[ $SANDBOX == 1 ]]; then
  echo "+ reaped children: with the children the worker reaped; bwrap does not reap its process"
  echo "in the namespaces, so this misses most of bwrap. + sandboxes' CPU: all that ran in the"
  echo "worker's own cgroup ($CG_FILE), the worker, its sandboxes and jobs, whoever reaped them."
  echo "commit->inside: the job's own date +%s%N inside the sandbox - when the enqueuer got its"
  echo "COMMIT acknowledged (same host clock); created->inside: the same start - jobs.created_at"
  echo "(boxcar: clock_timestamp() at the insert; graphile: now(), the start of add_job's statement)."
  echo "sandbox start: spawn of boxcar-sandbox / bwrap (worker clock) -> date inside, every job."
  echo "boxcar does more per job: seccomp, a cgroup with memory/pids/cpu limits, a bounded ext4"
  echo "workspace (idmapped), a status report; bwrap sets up namespaces and mounts only."
  echo "boxcar's sandboxes are warm (made ahead by the worker's pool) unless the pool was empty."
else
echo "pickup latency: command start (worker clock, just before spawning true) - jobs.created_at"
echo "(boxcar: clock_timestamp() at the insert; graphile: now(), the start of add_job's statement);"
echo "pickup from commit: the same start - when the enqueuer got its COMMIT acknowledged."
fi
OTHER_END=$(other_sessions)
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg);" \
     "other PG client sessions at start: $OTHER_SESSIONS, at the end: $OTHER_END"
[[ $OTHER_SESSIONS == "$OTHER_END" && $OTHER_SESSIONS == *"(0 active)" ]] ||
  echo "WARNING: other clients were using the server: these figures are noisy, run again"
[[ ${R[boxcar.failed]} == 0 && ${R[graphile.failed]} == 0 ]] || die "some jobs did not succeed"
