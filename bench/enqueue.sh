#!/usr/bin/env bash
# Enqueue benchmark (issue 49): BENCH_JOBS (10,000) no-op jobs into boxcar
# and into graphile-worker (npm, its own database on the same server), no
# worker running, one client connection each, jobs/s (wall clock at the
# client, from the first call sent to the last answer):
#
#   batch of B   boxcar.enqueue_many, BENCH_BATCH (1,000) jobs a call,
#                against graphile-worker's add_jobs (workerUtils.addJobs)
#   one call     all the jobs in one call of each
#   one a call   boxcar.enqueue and graphile-worker's addJob, one job a
#                call: the floor, a round trip a job
#
# BENCH_ROUNDS (3) rounds, each way from empty tables; the median round.
# Driver: bench/enqueue_many.mjs.  BENCH_KEEP=1 keeps the databases.
#
#   bench/enqueue.sh     (or `make bench BENCHES=enqueue`)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

N=${BENCH_JOBS:-10000}
B=${BENCH_BATCH:-1000}
ROUNDS=${BENCH_ROUNDS:-3}
DB_BX=bench_enqueue_boxcar DB_GW=bench_enqueue_graphile
BOXCAR=$BOXCAR_ROOT/build/boxcar
die() { echo "bench-enqueue: $*" >&2; exit 1; }

cleanup() {
  local rc=$?
  if [[ ${BENCH_KEEP:-0} != 1 ]]; then
    scripts/pg.sh dropdb "$DB_BX" >/dev/null 2>&1
    scripts/pg.sh dropdb "$DB_GW" >/dev/null 2>&1
  fi
  rm -f "${OUT:-}"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v node >/dev/null || die "node is not installed (scripts/deps.sh installs it)"
[[ -f node_modules/graphile-worker/package.json ]] ||
  die "graphile-worker is not installed: run npm ci (scripts/deps.sh does)"
GW_VERSION=$(node -p 'require("./node_modules/graphile-worker/package.json").version')
[[ -x $BOXCAR ]] || make --no-print-directory build/boxcar >&2 || die "make build/boxcar failed"

scripts/pg.sh start >/dev/null
for db in "$DB_BX" "$DB_GW"; do
  scripts/pg.sh dropdb "$db" >/dev/null 2>&1 || true
  scripts/pg.sh createdb "$db" >/dev/null
done
DATABASE_URL=$(db_url "$DB_BX") GW_DATABASE_URL=$(db_url "$DB_GW")
export DATABASE_URL GW_DATABASE_URL
"$BOXCAR" migrate >/dev/null

OUT=$(mktemp "${TMPDIR:-/tmp}/bench-enqueue.XXXXXX")
node bench/enqueue_many.mjs "$N" "$B" "$ROUNDS" >"$OUT" || die "the driver failed"

# The median round's jobs/s of a way.
rate() {
  awk -F'\t' -v w="$1" '$1 == w { printf "%.0f\n", $3 / $4 }' "$OUT" | sort -n |
    awk '{ r[NR] = $1 } END { print NR ? r[int((NR + 1) / 2)] : "-" }'
}
sed 's/^/# /' "$OUT" >&2
echo "# enqueue $N no-op jobs, no worker; median of $ROUNDS rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %14s %20s\n' "way" "boxcar jobs/s" "graphile $GW_VERSION jobs/s"
printf '%-26s %14s %20s\n' "batches of $B" "$(rate "boxcar_many_$B")" "$(rate "graphile_add_jobs_$B")"
printf '%-26s %14s %20s\n' "one call of $N" "$(rate boxcar_many_all)" "$(rate graphile_add_jobs_all)"
printf '%-26s %14s %20s\n' "one job a call (floor)" "$(rate boxcar_enqueue_1)" "$(rate graphile_add_job_1)"
