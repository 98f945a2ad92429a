#!/usr/bin/env bash
# Fair share between scopes: the pickup latency of a quiet scope's jobs,
# alone and while another scope floods the same worker with queued jobs.
#
#   bench/fairshare.sh        (or `make bench BENCHES=fairshare`)
#
# One `boxcar worker --sandbox none --queues flood/x,quiet/x` with
# BENCH_CONCURRENCY slots (4).  Quiet jobs (`true`) are enqueued one per
# transaction, BENCH_QUIET of them (40), one every 100 ms, from one
# session; pickup latency = jobs.started_at (the claim) - jobs.created_at,
# both server clocks.
#   alone   the worker has nothing else to do
#   flood   BENCH_FLOOD jobs (100000) of scope "flood", all older than the
#           quiet ones, are queued first (one statement) and the worker is
#           busy with them; the quiet jobs go in while they are queued.
# Prints p50/p95 of both and their ratio, and the most flood jobs that
# started between a quiet job's enqueue and its start; fails (exit 1) when the flood's
# p50 is more than twice the alone p50 (plus 5 ms for timer noise), or when
# the flood was drained before the quiet jobs ran (the measurement would
# not have been under the flood).
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib.sh
C=${BENCH_CONCURRENCY:-4}
QUIET=${BENCH_QUIET:-40}
FLOOD=${BENCH_FLOOD:-100000}
make -s build/boxcar >/dev/null
scripts/pg.sh start >/dev/null
fresh_db bench_fairshare
start_worker bench-fair --concurrency "$C" --lease 30s --poll-interval 1s --sandbox none \
    --queues flood/x,quiet/x --log-level warn
sleep 1

# quiet TAG: enqueues the quiet jobs, waits until they ran, prints p50 p95 (ms).
quiet() {
  local tag=$1
  {
    for _ in $(seq 1 "$QUIET"); do
      echo "select boxcar.enqueue('quiet/x', '{\"command\":[\"true\"]}', idempotency_key => '$tag-' || gen_random_uuid());"
      echo "select pg_sleep(0.1);"
    done
  } | psql -X -qtA -v ON_ERROR_STOP=1 "$DATABASE_URL" >/dev/null
  local deadline=$((SECONDS + 60))
  until [[ $(sql "select count(*) from boxcar.jobs where idempotency_key like '$tag-%' and started_at is not null") == "$QUIET" ]]; do
    (( SECONDS < deadline )) || { echo "quiet jobs ($tag) not started within 60 s" >&2; return 1; }
    sleep 0.2
  done
  sql "select round((percentile_cont(0.5) within group (order by ms))::numeric, 1) || ' ' ||
              round((percentile_cont(0.95) within group (order by ms))::numeric, 1)
         from (select extract(epoch from started_at - created_at) * 1000 as ms from boxcar.jobs
                where idempotency_key like '$tag-%') x"
}

read -r a50 a95 < <(quiet alone)
sql "select count(boxcar.enqueue('flood/x', '{\"command\":[\"true\"]}', run_at => now() - interval '1 hour'))
       from generate_series(1, $FLOOD)" >/dev/null
until [[ $(sql "select count(*) >= $C from boxcar.jobs where queue = 'flood/x' and status <> 'queued'") == t ]]; do
  sleep 0.1
done
read -r f50 f95 < <(quiet flood)
# Load-independent: how many flood jobs started between a quiet job's
# enqueue and its start (with fair share, at most the slots that freed
# meanwhile; without, the whole flood).
ahead=$(sql "select max((select count(*) from boxcar.jobs f where f.queue = 'flood/x'
                          and f.started_at > q.created_at and f.started_at < q.started_at))
               from boxcar.jobs q where q.idempotency_key like 'flood-%'")
left=$(sql "select count(*) from boxcar.jobs where queue = 'flood/x' and status = 'queued'")
ran=$(sql "select count(*) from boxcar.jobs where queue = 'flood/x' and status <> 'queued'")
printf '%-34s %10s %10s\n' "quiet scope pickup (ms)" p50 p95
printf '%-34s %10s %10s\n' "alone" "$a50" "$a95"
printf '%-34s %10s %10s\n' "with $FLOOD flood jobs queued" "$f50" "$f95"
ratio=$(awk "BEGIN { printf \"%.2f\", $f50 / ($a50 > 0 ? $a50 : 1) }")
echo "ratio p50 flood/alone: $ratio (flood: $ran taken, $left still queued at the end)"
echo "flood jobs started ahead of a quiet job, at most: $ahead (slots: $C)"
rc=0
awk "BEGIN { exit !($f50 <= 2 * $a50 + 5) }" || { echo "FAIL: quiet p50 more than 2x alone"; rc=1; }
(( left > 0 )) || { echo "FAIL: the flood drained before the end: not measured under a flood"; rc=1; }
exit $rc
