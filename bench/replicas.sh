#!/usr/bin/env bash
# Scale-out: 1, 2, 4, 8 and 16 worker replicas against one PostgreSQL, each
# replica in its own network namespace (scripts/replicas-net.sh: a veth to
# a bridge, PostgreSQL listening on the bridge's address), like separate
# hosts.  For each count: BENCH_JOBS jobs (`echo x`: a line of output, so
# the job's live log is written as a real job's is) enqueued in one
# statement while every replica is up and idle, and
#   jobs/s       N / (last finished_at - the enqueue's start), server clock
#   connections  peak count of the database's backends in pg_stat_activity
#                (sampled every 200 ms), and how many came over the veths
#   pg cpu       CPU seconds of every postgres process (/proc/PID/stat,
#                utime + stime) over the run, divided by its length: cores
#   worker cpu   the same for the replicas' boxcar processes
#   dup claims   jobs with more than one `claimed` event, and jobs whose
#                attempts is not 1 (must both be 0)
# `make bench BENCHES=replicas`; needs root.  Settings: BENCH_JOBS (2000),
# BENCH_CONCURRENCY (4 slots per replica), BENCH_REPLICAS ("1 2 4 8 16"),
# BENCH_SANDBOX (none; namespace isolates every job).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/replicas-net.sh
N=${BENCH_JOBS:-2000}
C=${BENCH_CONCURRENCY:-4}
COUNTS=${BENCH_REPLICAS:-1 2 4 8 16}
SB=${BENCH_SANDBOX:-none}
BOXCAR=${BOXCAR:-$BOXCAR_ROOT/build/boxcar}
if [[ $(id -u) -ne 0 ]]; then
  echo "bench-replicas: needs root (network namespaces); skipped"; exit 0
fi
max=0; for r in $COUNTS; do (( r > max )) && max=$r; done
scripts/pg.sh start
tmp=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rn_down >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
rn_up "$max"
DB=bench_replicas
adm() { psql -X -qtA -v ON_ERROR_STOP=1 "$BOXCAR_ADMIN_URL" -c "$1"; }
q() { psql -X -qtA -v ON_ERROR_STOP=1 "$(db_url $DB)" -c "$1"; }
# CPU ticks of the given processes: utime + stime, and with "+children"
# first, also those of their reaped children (a worker's job processes).
cpu_of() {
  local total=0 p f kids=0
  [[ $1 == +children ]] && { kids=1; shift; }
  for p in "$@"; do
    f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    f=${f##*) }
    read -ra a <<<"$f"
    total=$(( total + a[11] + a[12] + kids * (a[13] + a[14]) ))
  done
  echo "$total"
}
tck=$(getconf CLK_TCK)

printf '\n%-9s %9s %8s %12s %11s %9s %10s %10s\n' replicas slots jobs/s "conns(peak)" "over veth" "pg cores" "wkr cores" "dup claims"
for R in $COUNTS; do
  scripts/pg.sh dropdb $DB; scripts/pg.sh createdb $DB
  DATABASE_URL=$(db_url $DB) "$BOXCAR" migrate >/dev/null
  pids=()
  for i in $(seq 1 "$R"); do
    DATABASE_URL=$(rn_url $DB) nsenter --net="$(rn_netns "$i")" -- "$BOXCAR" worker --worker-id "rep-$i" \
        --work-dir "$BOXCAR_DEV/work/rep-$i" --concurrency "$C" --sandbox "$SB" \
        --poll-interval 1s >"$tmp/w$i.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 300); do
    [[ $(q "select count(*) from boxcar.workers where state = 'running'") == "$R" ]] && break
    sleep 0.1
  done
  sleep 1
  pg0=$(cpu_of $(scripts/pg.sh pids)); w0=$(cpu_of +children "${pids[@]}")
  t0=$(date +%s%N)
  start=$(q "select clock_timestamp()")
  q "select count(boxcar.enqueue('default', '{\"command\": [\"echo\", \"x\"]}')) from generate_series(1, $N)" >/dev/null
  peak=0 veth=0
  while :; do
    read -r c v d <<<"$(q "select count(*), count(*) filter (where client_addr << '$RN_CIDR'),
                                 (select count(*) from boxcar.jobs where status in ('succeeded', 'failed'))
                            from pg_stat_activity where datname = '$DB'" | tr '|' ' ')"
    (( c > peak )) && { peak=$c; by_app=$(q "select application_name || '=' || count(*) from pg_stat_activity
                                               where datname = '$DB' and client_addr << '$RN_CIDR' group by application_name order by 1" | tr '\n' ' '); }
    (( v > veth )) && veth=$v
    [[ $d == "$N" ]] && break
    (( $(date +%s%N) - t0 > 600000000000 )) && { echo "replicas=$R: not done in 600 s" >&2; break; }
    sleep 0.2
  done
  secs_ns=$(( $(date +%s%N) - t0 ))
  pg1=$(cpu_of $(scripts/pg.sh pids)); w1=$(cpu_of +children "${pids[@]}")
  IFS='|' read -r rate dups notone failed <<<"$(q "select round($N / extract(epoch from max(finished_at) - '$start'::timestamptz))::int,
      (select count(*) from (select job_id from boxcar.job_events where kind = 'claimed' group by 1 having count(*) > 1) x),
      (select count(*) from boxcar.jobs where attempts <> 1),
      (select count(*) from boxcar.jobs where status <> 'succeeded')
    from boxcar.jobs")"
  pgc=$(awk -v c=$((pg1 - pg0)) -v t=$tck -v n=$secs_ns 'BEGIN { printf "%.2f", c / t / (n / 1e9) }')
  wc=$(awk -v c=$((w1 - w0)) -v t=$tck -v n=$secs_ns 'BEGIN { printf "%.2f", c / t / (n / 1e9) }')
  printf '%-9s %9s %8s %12s %11s %9s %10s %10s\n' "$R" $((R * C)) "$rate" "$peak" "$veth" "$pgc" "$wc" "$dups/$notone"
  [[ $failed == 0 ]] || echo "  ($failed jobs did not succeed)"
  echo "          at the peak, by application_name: $by_app"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
done
echo "(dup claims: jobs claimed twice / jobs with attempts <> 1; cores: CPU seconds per second of the run, $(nproc) on this host)"
