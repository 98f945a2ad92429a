# A replica's connections do not grow with its concurrency: 24 slots share
# --db-connections 2 while every one of them streams live output and
# restores and saves an artifact.  PostgreSQL's own view of the worker's
# connections (pg_stat_activity, sampled throughout) stays at the main
# loop's, the reporter's and the pool's (a connection per slot, as before
# the pool, would be 26); nothing the jobs wrote is lost.  Then the same
# with a single shared connection.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="dbpool-$$"
fresh_db e2e_db_pool
N=96
CONC=24
tmp=$(mktemp -d)

# The most connections named boxcar-worker to this database at once, while
# the queue has work; sampled every 50 ms into $1.
sample() {
  local peak=0 n
  while :; do
    n=$(psql -X -qtA "$DATABASE_URL" -c "select count(*) from pg_stat_activity
          where datname = current_database() and application_name = 'boxcar-worker'" 2>/dev/null)
    [[ -n $n ]] && (( n > peak )) && { peak=$n; echo "$peak" > "$1"; }
    sleep 0.05
  done
}
done_n() { sql "select count(*) from boxcar.jobs where queue = '$1' and status = 'succeeded'"; }
all_done() { [[ $(done_n "$1") == "$N" ]]; }

run() {   # QUEUE DB_CONNECTIONS
  local q=$1
  # Each job prints five lines 0.2 s apart (each a live-log flush) and
  # appends to a file; one in three does so in an artifact (8 storages,
  # whose jobs run one at a time), so all 24 slots are busy at once.
  sql "select count(boxcar.enqueue('$q', jsonb_build_object(
         'command', jsonb_build_array('sh', '-c',
                      'for i in 1 2 3 4 5; do echo \$K-\$i; sleep 0.2; done; echo \$K >> log.txt'),
         'env', jsonb_build_object('K', '$q' || g))
         || case when g % 3 = 0 then jsonb_build_object('artifact',
                   jsonb_build_object('storage', '$q-s' || (g % 8))) else '{}' end))
       from generate_series(1, $N) g" >/dev/null
  echo 0 > "$tmp/peak-$q"
  sample "$tmp/peak-$q" &
  local sampler=$!
  start_worker "dbpool-$q" --queues "$q" --concurrency "$CONC" --db-connections "$2" \
      --sandbox none --poll-interval 1s
  wait_for "$q done" 180 all_done "$q"
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
}

# Jobs with plain output too, 24 at once: every slot streams at the same time.
run pooled 2
is "all $N jobs succeed with 24 slots on 2 shared connections" "$(done_n pooled)" "$N"
peak=$(cat "$tmp/peak-pooled")
diag "peak boxcar-worker connections: $peak (main loop, reporter, 2 shared)"
check "the worker never holds more than main loop + reporter + 2 ($peak)" test "$peak" -le 4
check "and the slots did use the pool ($peak)" test "$peak" -ge 3
is "every job's live output is stored whole (5 lines each)" \
   "$(sql "select count(*) from (select j.id from boxcar.jobs j join boxcar.job_logs l on l.job_id = j.id
            where j.queue = 'pooled' group by j.id
           having string_agg(convert_from(l.data, 'UTF8'), '' order by l.seq)
                  = (j.spec->'env'->>'K') || '-1' || chr(10) || (j.spec->'env'->>'K') || '-2' || chr(10)
                    || (j.spec->'env'->>'K') || '-3' || chr(10) || (j.spec->'env'->>'K') || '-4' || chr(10)
                    || (j.spec->'env'->>'K') || '-5' || chr(10)) x")" "$N"
is "every artifact job recorded its version" \
   "$(sql "select count(*) from boxcar.storage_versions v join boxcar.jobs j on j.id = v.job_id
            where j.queue = 'pooled'")" "$(( N / 3 ))"
is "the storages' heads hold every artifact job's line" \
   "$(for s in $(seq 0 7); do rm -rf "$tmp/h"; "$BOXCAR" storage pull "pooled-s$s" "$tmp/h" >/dev/null 2>&1 && cat "$tmp/h/log.txt"; done | sort -u | wc -l)" "$(( N / 3 ))"

# One shared connection: the slots wait their turn for it.
run single 1
one=$(cat "$tmp/peak-single")
diag "--db-connections 1: peak $one"
is "all $N jobs succeed with 24 slots on 1 shared connection" "$(done_n single)" "$N"
check "the worker never holds more than main loop + reporter + 1 ($one)" test "$one" -le 3
is "no live output is lost waiting for it" \
   "$(sql "select count(*) from (select j.id from boxcar.jobs j join boxcar.job_logs l on l.job_id = j.id
            where j.queue = 'single' group by j.id having sum(length(l.data)) = 5 * (length(j.spec->'env'->>'K') + 3)) x")" "$N"
rm -rf "$tmp"
tap_done
