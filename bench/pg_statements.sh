#!/usr/bin/env bash
# Where a boxcar job's PostgreSQL time goes, per statement (issue 50):
#
#   bench/pg_statements.sh DB N SPEC WORKER_ARGS...
#
# runs `build/boxcar worker WORKER_ARGS` on database DB (migrated, its
# queue empty) with pg_stat_statements counting every statement, nested
# ones too (plpgsql's, triggers'), and prints, per statement, its calls and
# execution time per job over N jobs of SPEC (after 50 not counted).
# bench/queue.sh calls it after its measured phases: the counting costs
# the server time of its own, which its PostgreSQL CPU figure leaves out.
# Times are the server's wall clock inside the statement (a nested
# statement's time is in its caller's too), not CPU; on a loaded host they
# grow with the load, the calls and rows do not.
#
# Needs pg_stat_statements in shared_preload_libraries (scripts/pg.sh
# puts it there when it makes the cluster, pg_stat_statements.track =
# none); without it, prints one line saying so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
(( $# >= 3 )) || { echo "usage: bench/pg_statements.sh DB N SPEC WORKER_ARGS..." >&2; exit 2; }
DB=$1 N=$2 SPEC=$3
shift 3
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "pg_statements: N must be a positive integer, not '$N'" >&2; exit 2; }
admin() { psql -X -qtA -v ON_ERROR_STOP=1 "$BOXCAR_ADMIN_URL" "$@"; }
# The script's own statements (the enqueue, the polls) go uncounted: a
# superuser's session with counting off.
on_db() {
  psql -X -qtA -v ON_ERROR_STOP=1 "postgresql:///$DB?host=$BOXCAR_PG_SOCKDIR&port=$BOXCAR_PG_PORT&user=postgres" \
    -c "set pg_stat_statements.track = 'none'" -c "$1"
}

if [[ ,$(admin -c "show shared_preload_libraries" | tr -d ' '), != *,pg_stat_statements,* ]]; then
  echo "per-statement table: none (pg_stat_statements is not in shared_preload_libraries of this cluster;" \
       "add it to $BOXCAR_PG_DATA/postgresql.conf and restart, as scripts/pg.sh does for a new one)"
  exit 0
fi
admin -c "create extension if not exists pg_stat_statements" >/dev/null
# For this database's new sessions only: the other databases (and the
# peer's) go on uncounted.
admin -c "alter database \"$DB\" set pg_stat_statements.track = 'all'" >/dev/null
WORKER=
cleanup() {
  [[ -n $WORKER ]] && { kill -TERM "$WORKER" 2>/dev/null; wait "$WORKER" 2>/dev/null || true; }
  admin -c "alter database \"$DB\" reset pg_stat_statements.track" >/dev/null 2>&1 || true
}
trap cleanup EXIT

DATABASE_URL=$(db_url "$DB") "$BOXCAR_ROOT/build/boxcar" worker --worker-id bench-statements "$@" \
  2> "${TMPDIR:-/tmp}/pg_statements.$$.log" &
WORKER=$!
idle() { [[ $(on_db "select not exists (select from boxcar.jobs where status in ('queued', 'running'))") == t ]]; }
wait_idle() {
  local i
  for i in $(seq 1200); do idle && return 0; kill -0 "$WORKER" 2>/dev/null || break; sleep 0.1; done
  echo "pg_statements: the jobs did not finish; the worker's log:" >&2
  tail -5 "${TMPDIR:-/tmp}/pg_statements.$$.log" >&2
  exit 1
}
enqueue() { on_db "select count(boxcar.enqueue(queue => 'default', spec => '$SPEC')) from generate_series(1, $1)" >/dev/null; }
enqueue 50
wait_idle
DBOID=$(admin -c "select oid from pg_database where datname = '$DB'")
admin -c "select pg_stat_statements_reset(0, $DBOID, 0)" >/dev/null
enqueue "$N"
wait_idle
rm -f "${TMPDIR:-/tmp}/pg_statements.$$.log"
# Every statement the worker's sessions ran, top-level ones marked *.
echo "PostgreSQL per statement, per job, $N jobs ($*); * = called by the worker, the others nested in those:"
admin -F $'\t' -c "
  select to_char(s.calls::numeric / $N, 'FM990.00'), to_char(s.total_exec_time * 1000 / $N, 'FM99990'),
         to_char(s.rows::numeric / $N, 'FM990.00'),
         to_char((s.shared_blks_hit + s.shared_blks_read)::numeric / $N, 'FM9990.0'),
         to_char(s.wal_records::numeric / $N, 'FM990.0'),
         case when s.toplevel then '* ' else '  ' end || left(regexp_replace(s.query, '\s+', ' ', 'g'), 90)
    from pg_stat_statements s
   where s.dbid = $DBOID and s.calls > 0 and s.total_exec_time * 1000 / $N >= 1
   order by s.toplevel desc, s.total_exec_time desc" |
  awk -F'\t' 'BEGIN { printf "%9s %8s %8s %8s %8s  %s\n", "calls/job", "us/job", "rows/job", "blks/job", "wal/job", "statement" }
              { printf "%9s %8s %8s %8s %8s  %s\n", $1, $2, $3, $4, $5, $6 }'
admin -F' ' -c "
  select 'top-level calls per job: ' || to_char(sum(calls) filter (where toplevel)::numeric / $N, 'FM990.00')
         || '; their time per job: ' || to_char(sum(total_exec_time) filter (where toplevel) * 1000 / $N, 'FM99990')
         || ' us; WAL records per job: ' || to_char(sum(wal_records) filter (where toplevel)::numeric / $N, 'FM990.0')
    from pg_stat_statements s
   where s.dbid = $DBOID"
