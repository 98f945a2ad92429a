#!/usr/bin/env bash
# Session benchmark (issue 47): a live session's jobs against plain jobs,
# through one idle worker (--sandbox namespace, LISTEN on, a short poll
# interval), one job at a time, each enqueued once the previous one had
# ended (bench/enqueue_serial.mjs: one connection, the end heard through a
# NOTIFY from a trigger this benchmark puts on boxcar.jobs, nothing
# polled).
#
#   bench/session.sh          (or `make bench BENCHES=session`)
#
#   commands  BENCH_SESSION_JOBS jobs of one live session (after its first
#             few), each `/bin/sh -c 'date +%s%N'`: commit -> command start
#             inside the session = the job's own printed instant - when the
#             enqueuer got its COMMIT back; p50/p99.  Beside it, the same
#             for plain jobs (no session; the worker's warm sandbox pool)
#             and the floor: the command spawned alone, no sandbox or queue
#             (build/spawn-floor, same run).  The goal: session p50 within
#             1 ms of the floor.
#   files     the same for file operations, {"files": [{"op": "write",
#             "path": "x", ...}]}: commit -> the write done inside = the
#             file's mtime the job reports (result.files[0].stat.mtime).
#             A probe in the session first checks that mtime is the
#             instant of the write (fine-grained timestamps: the kernel's
#             coarse clock would put it up to a tick early).
#   turn      one agent turn of BENCH_SESSION_TURN commands, each appending
#             a line to one small file, over a BENCH_SESSION_WS_MB workspace
#             (BENCH_SESSION_WS_FILES files of random bytes): the session's
#             storage made by a first session job, the session then ended
#             (checkpointed and stopped) so the turn starts from a
#             checkpoint as a next turn does; against the same commands as
#             plain artifact jobs on a storage holding a tree of the same
#             shape (other random bytes, so S3's content addressing shares
#             nothing between the two), each a cold job.  Wall time (first
#             enqueue -> last end heard), bytes uploaded (sum of
#             result.artifact.size, and the worker's
#             boxcar_transfer_bytes_total{direction="upload"}).
#
# Settings (environment): BENCH_SESSION_JOBS (200), BENCH_SESSION_FILE_JOBS
# (= BENCH_SESSION_JOBS), BENCH_SESSION_TURN (30), BENCH_SESSION_WS_MB
# (1024), BENCH_SESSION_WS_FILES (256), BENCH_CONCURRENCY (2),
# BENCH_POLL_INTERVAL (200ms), BENCH_KEEP=1 keeps the database, the files,
# the worker's log and the S3 objects.  Needs root (sessions run on the
# namespace backend, workspaces are loop-mounted filesystems), node (the
# enqueuer) and build/boxcar-session-agent.
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$BOXCAR_ROOT"
ME=bench-session
die() { echo "$ME: $*" >&2; exit 1; }
log() { printf '# %s\n' "$*" >&2; }
[[ $(id -u) -eq 0 ]] || { echo "$ME: needs root (sessions need the namespace backend); skipped"; exit 0; }
grep -qw overlay /proc/filesystems || { echo "$ME: no overlay filesystem here; skipped"; exit 0; }

N=${BENCH_SESSION_JOBS:-200}
NF=${BENCH_SESSION_FILE_JOBS:-$N}
TURN=${BENCH_SESSION_TURN:-30}
WS_MB=${BENCH_SESSION_WS_MB:-1024}
WS_FILES=${BENCH_SESSION_WS_FILES:-256}
C=${BENCH_CONCURRENCY:-2}
POLL=${BENCH_POLL_INTERVAL:-200ms}
WARMUP=3          # first jobs of each series, not measured (the first starts the session)
FLOOR_RUNS=400
DISK_MB=$((WS_MB * 2 + 64))
BOXCAR=$BOXCAR_ROOT/build/boxcar
AGENT=$BOXCAR_ROOT/build/boxcar-session-agent
DB=bench_session

# --- prerequisites ------------------------------------------------------------
command -v node >/dev/null || die "node is not installed (scripts/deps.sh installs it)"
[[ -f node_modules/pg/package.json ]] || die "node's pg is not installed: run npm ci (scripts/deps.sh does)"
make --no-print-directory -s build/boxcar build/boxcar-sandbox build/spawn-floor >&2 ||
  die "make build/boxcar build/boxcar-sandbox build/spawn-floor failed"
[[ -x $AGENT ]] || make --no-print-directory -s build/boxcar-session-agent >&2 ||
  die "the session agent build/boxcar-session-agent is missing (the worker runs it in each session's sandbox)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/$ME.XXXXXX")
WPID=""
eval "$(scripts/s3.sh start)"
export BOXCAR_S3_PREFIX="$ME-$$"
cleanup() {
  local rc=$?
  set +e
  if [[ -n $WPID ]]; then
    kill -TERM "$WPID" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$WPID" 2>/dev/null
    wait "$WPID" 2>/dev/null
  fi
  if [[ ${BENCH_KEEP:-0} != 1 ]]; then
    scripts/pg.sh dropdb "$DB" >/dev/null 2>&1
    rm -rf "$BOXCAR_DEV/s3/data/$BOXCAR_S3_BUCKET/$BOXCAR_S3_PREFIX" "$TMP"
  else
    echo "# kept: database $DB, files and the worker's log in $TMP, S3 prefix $BOXCAR_S3_PREFIX" >&2
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scripts/pg.sh start >/dev/null
scripts/pg.sh dropdb "$DB" >/dev/null 2>&1 || true
scripts/pg.sh createdb "$DB" >/dev/null
DATABASE_URL=$(db_url "$DB"); export DATABASE_URL
"$BOXCAR" migrate >/dev/null
# sql QUERY...: each its own -c (transaction).
sql() {
  local args=() q
  for q in "$@"; do args+=(-c "$q"); done
  psql -X -qtA -v ON_ERROR_STOP=1 "$DATABASE_URL" "${args[@]}"
}
# A job's end, heard by the enqueuer (see bench/enqueue_serial.mjs).
sql "create schema bench" \
    "create table bench.lat (id uuid primary key, series text not null, n serial,
                             sent_us bigint, ack_us bigint, done_us bigint)" \
    "create function bench.note_done() returns trigger language plpgsql as
       \$\$ begin perform pg_notify('bench_done', new.id::text); return null; end \$\$" \
    "create trigger bench_done after update of status on boxcar.jobs for each row
       when (new.status in ('succeeded', 'failed', 'cancelled') and old.status is distinct from new.status)
       execute function bench.note_done()" >/dev/null
load() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD_BEFORE=$(load)
UPTIME_BEFORE=$(uptime)

MPORT=$(free_port)
"$BOXCAR" worker --worker-id "$ME" --work-dir "$TMP/work" --concurrency "$C" --sandbox namespace \
  --poll-interval "$POLL" --metrics-addr "127.0.0.1:$MPORT" >"$TMP/worker.log" 2>&1 &
WPID=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$MPORT/metrics" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$MPORT/metrics" || die "the worker did not start: $(tail -5 "$TMP/worker.log")"
sleep 1   # its warm sandboxes are made

# metric NAME_PREFIX: the sum of the worker's samples whose name and labels
# start with it.
metric() {
  curl -fsS "http://127.0.0.1:$MPORT/metrics" | awk -v k="$1" 'index($1, k) == 1 { s += $2 } END { printf "%.0f\n", s }'
}
# series NAME COUNT SPEC: COUNT jobs of SPEC ("%i": the job's number), one at
# a time, recorded in bench.lat as series NAME.
series() {
  local name=$1 count=$2 spec=$3
  kill -0 "$WPID" 2>/dev/null || die "the worker is gone: $(tail -5 "$TMP/worker.log")"
  BENCH_SPEC=$spec BENCH_JOB_TIMEOUT_S=${JOB_TIMEOUT_S:-120} \
    node bench/enqueue_serial.mjs "$count" "$TMP/$name.tsv" ||
    die "$name: the enqueuer failed (worker log: $(tail -3 "$TMP/worker.log"))"
  sed "s/\t/\t$name\t/" "$TMP/$name.tsv" > "$TMP/$name.rows"
  sql "\\copy bench.lat (id, series, sent_us, ack_us, done_us) from '$TMP/$name.rows'" >/dev/null
  local bad
  bad=$(sql "select count(*) from bench.lat l join boxcar.jobs j using (id)
              where l.series = '$name' and j.status <> 'succeeded'")
  [[ $bad == 0 ]] || die "$name: $bad jobs did not succeed, e.g.: $(sql "select j.error from bench.lat l join boxcar.jobs j using (id)
              where l.series = '$name' and j.status <> 'succeeded' limit 1")"
}
# pct EXPR WHERE: "p50 p99 max count" of EXPR (µs), in ms, over bench.lat l join
# boxcar.jobs j.
pct() {
  sql "select round(percentile_cont(0.5) within group (order by x)::numeric, 2) || ' ' ||
              round(percentile_cont(0.99) within group (order by x)::numeric, 2) || ' ' ||
              round(max(x)::numeric, 2) || ' ' || count(x)
         from (select ($1)::float8 / 1000 x from bench.lat l join boxcar.jobs j using (id) where $2) q"
}
p50() {
  sql "select round(percentile_cont(0.5) within group (order by x)::numeric, 2)
         from (select ($1)::float8 / 1000 x from bench.lat l join boxcar.jobs j using (id) where $2) q"
}
# The instants of a job (µs since the epoch): its own `date +%s%N` inside,
# its claim (server clock), the worker's start of it (result.started_at:
# for a session job, before it waits for its claim's commit and sends the
# agent its request; for a plain one, before the sandbox's spawn or the
# warm sandbox's handoff).
INSIDE_US="(case when j.result->>'stdout' ~ '^\s*[0-9]{16,}\s*$'
                 then btrim(j.result->>'stdout', E' \n')::numeric / 1000 end)"
CLAIM_US="extract(epoch from j.started_at) * 1e6"
WSTART_US="extract(epoch from (j.result->>'started_at')::timestamptz) * 1e6"
MTIME_US="(j.result->'files'->0->'stat'->>'mtime')::numeric * 1e6"

LAT_CMD='["/bin/sh","-c","date +%s%N"]'

# --- 1. commands in a live session ----------------------------------------------
log "commands: $N session jobs (after $WARMUP), then $N plain jobs; load $(load)"
R_LOAD1=$(load)
SES_SPEC="{\"session\":{\"id\":\"lat\",\"idle_timeout_s\":600},\"command\":$LAT_CMD}"
series ses-warm "$WARMUP" "$SES_SPEC"
series ses "$N" "$SES_SPEC"
[[ $(sql "select count(distinct (j.result->'session'->>'seq')) || ' ' || min((j.result->'session'->>'seq')::int)
            from bench.lat l join boxcar.jobs j using (id) where l.series = 'ses'") == "$N $((WARMUP + 1))" ]] ||
  die "the session's jobs did not all run in its one live sandbox (result.session.seq)"

# --- 2. file operations in the same session -----------------------------------------
# Is a file's mtime the instant it was written?  The probe, in the session's
# workspace, does what the agent does (open with O_TRUNC, write, close,
# stat) every 10 ms, as jobs a few ms apart do, and counts the mtimes
# between the instants before and after the write.  The kernel stamps a
# file from its coarse clock (a tick: 4 ms at HZ=250), unless the file's
# times were read since a change within the same tick (multigrain
# timestamps): so the mtime can be up to a tick early.
PROBE='import os, time
ins, lag, cost = 0, [], []
for i in range(200):
    t0 = time.time_ns()
    fd = os.open("mtime-probe", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, b"probe %d" % i); os.close(fd)
    t1 = time.time_ns()
    m = os.stat("mtime-probe").st_mtime_ns
    ins += t0 <= m <= t1; lag.append(t0 - m); cost.append(t1 - t0)
    time.sleep(0.01)
os.unlink("mtime-probe")
lag.sort(); cost.sort()
print(ins, len(lag), round(lag[-1] / 1e6, 3), round(lag[len(lag) // 2] / 1e6, 3), round(cost[len(cost) // 2] / 1e3, 1))'
series probe 1 "$(jq -cn --arg p "$PROBE" '{session: {id: "lat"}, command: ["python3", "-c", $p]}')"
read -r P_IN P_N P_LAG P_LAG50 P_COST <<<"$(sql "select j.result->>'stdout' from bench.lat l join boxcar.jobs j using (id) where series = 'probe'")"
# So the write's instant is also taken by a watcher the session keeps
# running (setsid): inotify on /workspace/x, the instant it hears each
# IN_CLOSE_WRITE (the agent's close right after its write; late by the
# watcher's wake-up), one line per write in /tmp/x-writes.
WATCH='import ctypes, os, struct, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, b"/workspace/x", 0x8) < 0:
    raise SystemExit("inotify: %s" % os.strerror(ctypes.get_errno()))
out = open("/tmp/x-writes", "w", buffering=1)
open("/tmp/x-watch.pid", "w").write("%d\n" % os.getpid())
while True:
    buf = os.read(fd, 4096)
    t = time.time_ns()
    off = 0
    while off < len(buf):
        off += 16 + struct.unpack_from("iIII", buf, off)[3]
        out.write("%d\n" % t)'
series watch-start 1 "$(jq -cn --arg w "$WATCH" '{session: {id: "lat"}, command: ["sh", "-c",
  "rm -f /tmp/x-watch.pid; echo > x; setsid python3 -c \"$0\" </dev/null >/tmp/x-watch.log 2>&1 & for i in $(seq 100); do test -s /tmp/x-watch.pid && exit 0; sleep 0.05; done; cat /tmp/x-watch.log; exit 1", $w]}')"
log "files: $NF session write jobs (after $WARMUP); load $(load)"
R_LOAD2=$(load)
FILE_SPEC='{"session":{"id":"lat"},"files":[{"op":"write","path":"x","content":"written by job %i\n"}]}'
series files-warm "$WARMUP" "$FILE_SPEC"
series files "$NF" "$FILE_SPEC"
series watch-read 1 '{"session":{"id":"lat"},"command":["sh","-c","cat /tmp/x-writes; kill $(cat /tmp/x-watch.pid)"],"limits":{"output_bytes":1048576}}'
sql "create table bench.heard (k serial, us bigint)" \
    "insert into bench.heard (us)
     select (regexp_split_to_table(btrim(j.result->>'stdout', E' \n'), E'\n'))::numeric / 1000
       from bench.lat l join boxcar.jobs j using (id) where l.series = 'watch-read'" >/dev/null
HEARD=$(sql "select count(*) from bench.heard")
[[ $HEARD == $((WARMUP + NF)) ]] ||
  die "the watcher heard $HEARD writes of x, not the $((WARMUP + NF)) the write jobs made"
# The k-th write heard is the k-th write job's (files-warm, then files).
sql "alter table bench.lat add column heard_us bigint" \
    "update bench.lat l set heard_us = h.us
       from (select id, row_number() over (order by n) k from bench.lat
              where series in ('files-warm', 'files')) w
       join bench.heard h on h.k = w.k
      where l.id = w.id" >/dev/null

# --- plain jobs, the same command, the same worker -------------------------------------
series plain-warm "$WARMUP" "{\"command\":$LAT_CMD}"
series plain "$N" "{\"command\":$LAT_CMD}"

# --- the floor ------------------------------------------------------------------------
# The job's command alone, spawned with no sandbox and no queue, as the job
# runs it: cwd /, the environment a job gets (see bench/queue.sh).
FLOOR=$(cd / && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
          "$BOXCAR_ROOT/build/spawn-floor" "$FLOOR_RUNS" /bin/sh -c 'date +%s%N') ||
  die "spawn-floor failed: $FLOOR"
FLOOR_P50=${FLOOR#p50_ms=}; FLOOR_P50=${FLOOR_P50%% *}; FLOOR_P99=${FLOOR##*p99_ms=}

read -r S50 S99 SMAX SN <<<"$(pct "$INSIDE_US - l.ack_us" "l.series = 'ses'")"
read -r P50 P99 PMAX PN <<<"$(pct "$INSIDE_US - l.ack_us" "l.series = 'plain'")"
read -r F50 F99 FMAX FN <<<"$(pct "l.heard_us - l.ack_us" "l.series = 'files'")"
read -r M50 M99 MMAX MN <<<"$(pct "$MTIME_US - l.ack_us" "l.series = 'files'")"
# heard - mtime: the watcher's wake-up, plus what the coarse clock put the
# mtime early by.
HM50=$(p50 "l.heard_us - $MTIME_US" "l.series = 'files'")
# mtime in the window the worker knows the write is in: after it started
# the job (result.started_at), before the job's end was heard.
F_OK=$(sql "select count(*) filter (where $MTIME_US >= $WSTART_US and $MTIME_US <= l.done_us)
              from bench.lat l join boxcar.jobs j using (id) where l.series = 'files'")
split() {  # SERIES END_EXPR: where the p50 goes
  echo "commit->claim $(p50 "$CLAIM_US - l.ack_us" "l.series = '$1'") ms," \
       "claim->worker start $(p50 "$WSTART_US - $CLAIM_US" "l.series = '$1'") ms," \
       "worker start->inside $(p50 "$2 - $WSTART_US" "l.series = '$1'") ms"
}
S_SPLIT=$(split ses "$INSIDE_US")
P_SPLIT=$(split plain "$INSIDE_US")
F_SPLIT=$(split files "l.heard_us")
# The round trip an agent sees: commit -> the job's end heard.
S_RT=$(p50 "l.done_us - l.ack_us" "l.series = 'ses'")
P_RT=$(p50 "l.done_us - l.ack_us" "l.series = 'plain'")
F_RT=$(p50 "l.done_us - l.ack_us" "l.series = 'files'")
POOL=$(curl -fsS "http://127.0.0.1:$MPORT/metrics" |
  awk -F'[{}" ]+' '$1 == "boxcar_sandbox_starts_total" { s[$3] = $4 } END { print s["warm"] + 0 " warm, " s["cold"] + 0 " cold" }')

# --- 3. an agent turn over a large workspace ----------------------------------------------
# The tree: WS_FILES files of random bytes (seeded: the same tree for the
# same seed) and a small notes.md the turn's commands append to.
GEN='import os, random, sys
mb, files, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
r = random.Random(seed)
per = (mb << 20) // files
for i in range(files):
    d = "data/d%02d" % (i // 16)
    os.makedirs(d, exist_ok=True)
    with open("%s/f%04d.bin" % (d, i), "wb") as f:
        f.write(r.randbytes(per))
with open("notes.md", "w") as f:
    f.write("# notes\n")'
gen_spec() {  # SEED EXTRA_JSON
  jq -cn --arg g "$GEN" --arg mb "$WS_MB" --arg n "$WS_FILES" --arg seed "$1" --argjson x "$2" --argjson d "$DISK_MB" \
    '{command: ["python3", "-c", $g, $mb, $n, $seed], limits: {disk_mb: $d, timeout_s: 600}} * $x'
}
secs_since() { awk -v a="$1" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
log "turn: the session's $WS_MB MiB first version (made, checkpointed, the session ended); load $(load)"
R_LOAD3=$(load)
SES_TURN_X="{\"session\":{\"id\":\"turn\",\"idle_timeout_s\":600}}"
t=${EPOCHREALTIME/./}
JOB_TIMEOUT_S=600 series ses-gen 1 "$(gen_spec 47 "$SES_TURN_X")"
SES_GEN_S=$(secs_since "$t")
t=${EPOCHREALTIME/./}
"$BOXCAR" sessions end turn >/dev/null
for _ in $(seq 600); do
  [[ $(sql "select state from boxcar.sessions where id = 'turn'") == ended ]] && break
  sleep 0.1
done
[[ $(sql "select state from boxcar.sessions where id = 'turn'") == ended ]] || die "the session did not end in 60 s"
SES_END_S=$(secs_since "$t")
log "turn: the plain storage's $WS_MB MiB first version"
t=${EPOCHREALTIME/./}
JOB_TIMEOUT_S=600 series plain-gen 1 "$(gen_spec 48 '{"artifact": {"storage": "bench-plain"}}')"
PLAIN_GEN_S=$(secs_since "$t")
BASE_MB=$(sql "select string_agg(case l.series when 'ses-gen' then 'session ' else 'plain ' end ||
                                 round((j.result->'artifact'->>'size')::bigint / 1048576.0, 1) || ' MiB', ', '
                                 order by l.series desc)
                 from bench.lat l join boxcar.jobs j using (id) where l.series in ('ses-gen', 'plain-gen')")

# turn NAME SPEC: the turn, with the worker's counters around it ->
# "upload_bytes download_bytes cache_hits cache_misses"
turn() {
  local u0 d0 h0 m0
  u0=$(metric 'boxcar_transfer_bytes_total{direction="upload"') d0=$(metric 'boxcar_transfer_bytes_total{direction="download"')
  h0=$(metric 'boxcar_artifact_cache_lookups_total{result="hit"') m0=$(metric 'boxcar_artifact_cache_lookups_total{result="miss"')
  series "$1" "$TURN" "$2"
  echo "$(( $(metric 'boxcar_transfer_bytes_total{direction="upload"') - u0 ))" \
       "$(( $(metric 'boxcar_transfer_bytes_total{direction="download"') - d0 ))" \
       "$(( $(metric 'boxcar_artifact_cache_lookups_total{result="hit"') - h0 ))" \
       "$(( $(metric 'boxcar_artifact_cache_lookups_total{result="miss"') - m0 ))"
}
log "turn: $TURN session commands, then $TURN plain artifact jobs; load $(load)"
R_LOAD4=$(load)
read -r TS_UP TS_DOWN TS_HIT TS_MISS <<<"$(turn ses-turn "{\"session\":{\"id\":\"turn\",\"idle_timeout_s\":600},\"command\":[\"sh\",\"-c\",\"echo session edit %i >> notes.md\"],\"limits\":{\"disk_mb\":$DISK_MB}}")"
read -r TP_UP TP_DOWN TP_HIT TP_MISS <<<"$(turn plain-turn "{\"command\":[\"sh\",\"-c\",\"echo plain edit %i >> notes.md\"],\"artifact\":{\"storage\":\"bench-plain\"},\"limits\":{\"disk_mb\":$DISK_MB}}")"
[[ $(sql "select (j.result->'session'->>'resumed') from bench.lat l join boxcar.jobs j using (id) where l.series = 'ses-turn' and l.n = (select min(n) from bench.lat where series = 'ses-turn')") == true ]] ||
  die "the turn's first session job did not resume the session from its checkpoint"
turn_fig() {  # SERIES -> "wall_s first_ms rest_p50_ms rest_p99_ms artifact_bytes notes_lines"
  sql "select round(((max(l.done_us) - min(l.sent_us)) / 1e6)::numeric, 2) || ' ' ||
              round(((array_agg(l.done_us - l.sent_us order by l.n))[1] / 1e3)::numeric, 0) || ' ' ||
              round((percentile_cont(0.5) within group (order by l.done_us - l.sent_us)
                       filter (where l.n > (select min(n) from bench.lat where series = '$1')) / 1e3)::numeric, 1) || ' ' ||
              round((percentile_cont(0.99) within group (order by l.done_us - l.sent_us)
                       filter (where l.n > (select min(n) from bench.lat where series = '$1')) / 1e3)::numeric, 1) || ' ' ||
              sum((j.result->'artifact'->>'size')::bigint) || ' ' ||
              count(*) filter (where (j.result->'artifact'->>'uploaded')::boolean)
         from bench.lat l join boxcar.jobs j using (id) where l.series = '$1'"
}
read -r TS_WALL TS_FIRST TS_P50 TS_P99 TS_ART TS_NUP <<<"$(turn_fig ses-turn)"
read -r TP_WALL TP_FIRST TP_P50 TP_P99 TP_ART TP_NUP <<<"$(turn_fig plain-turn)"
LOAD_AFTER=$(load)

# --- report ----------------------------------------------------------------------------------
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f", a - b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
row4() { printf '  %-44s %9s %9s %9s %6s\n' "$@"; }
built() { date -u -r "$1" '+%F %T UTC'; }
echo
echo "session benchmark: one worker (--sandbox namespace, --concurrency $C, --poll-interval $POLL, LISTEN on),"
echo "one job at a time, each enqueued once the previous one's end was heard; $(nproc) CPUs,"
echo "PostgreSQL 15 (127.0.0.1:$BOXCAR_PG_PORT, synchronous_commit on), S3: s3rver (127.0.0.1:${BOXCAR_S3_PORT:-54569});"
echo "build/boxcar $("$BOXCAR" version 2>/dev/null | head -1) built $(built "$BOXCAR"), build/boxcar-session-agent built $(built "$AGENT")"
echo
echo "1. commit -> command start inside (/bin/sh -c 'date +%s%N'), ms; load average at the start $R_LOAD1"
row4 "" p50 p99 max jobs
row4 "session, job $((WARMUP + 1)) on (live sandbox)" "$S50" "$S99" "$SMAX" "$SN"
row4 "plain job (no session, warm sandbox pool)" "$P50" "$P99" "$PMAX" "$PN"
row4 "floor: the command alone, no sandbox or queue" "$FLOOR_P50" "$FLOOR_P99" "" "$FLOOR_RUNS"
echo "  session p50 - floor p50: $(diff_ms "$S50" "$FLOOR_P50") ms (goal: within 1 ms); plain p50 - floor p50: $(diff_ms "$P50" "$FLOOR_P50") ms"
echo "  session p50 split: $S_SPLIT"
echo "  plain p50 split:   $P_SPLIT"
echo "  commit -> end heard, p50: session $S_RT ms, plain $P_RT ms (the session's includes its checkpoint)"
echo "  plain jobs' sandboxes, whole run: $POOL"
echo
echo "2. commit -> file written inside ({\"files\": [{\"op\": \"write\", \"path\": \"x\", ...}]}), ms;"
echo "   load average at the start $R_LOAD2"
row4 "" p50 p99 max jobs
row4 "session, write heard by a watcher inside" "$F50" "$F99" "$FMAX" "$FN"
row4 "session, by result.files[0].stat.mtime" "$M50" "$M99" "$MMAX" "$MN"
row4 "floor: a command alone (as in 1)" "$FLOOR_P50" "$FLOOR_P99" "" "$FLOOR_RUNS"
echo "  session p50 - floor p50: $(diff_ms "$F50" "$FLOOR_P50") ms (heard), $(diff_ms "$M50" "$FLOOR_P50") ms (mtime);"
echo "  the write alone (open, write, close, in python): ${P_COST} us p50"
echo "  session p50 split (heard): $F_SPLIT"
echo "  commit -> end heard by the enqueuer, p50: $F_RT ms"
echo "  mtime as the write's instant: a probe in the session's workspace (open O_TRUNC, write, close, stat,"
echo "  every 10 ms, x$P_N): $P_IN/$P_N mtimes between the instants before and after the write; the write"
echo "  started after its mtime by ${P_LAG50} ms p50, ${P_LAG} ms at most (the kernel's coarse clock)."
echo "  measured jobs: $F_OK/$FN mtimes between the worker's start of the job and its end heard;"
echo "  write heard - mtime p50: $HM50 ms"
echo
echo "3. one agent turn: $TURN commands, each appending a line to one small file, over a $WS_MB MiB workspace"
echo "   ($WS_FILES files of random bytes); load average at the start $R_LOAD4"
printf '  %-44s %14s %14s %14s\n' "" session "plain artifact" "plain/session"
printf '  %-44s %14s %14s %14s\n' "wall, first enqueue -> last end heard (s)" "$TS_WALL" "$TP_WALL" "$(ratio "$TP_WALL" "$TS_WALL")"
printf '  %-44s %14s %14s %14s\n' "first command, enqueue -> end heard (ms)" "$TS_FIRST" "$TP_FIRST" "$(ratio "$TP_FIRST" "$TS_FIRST")"
printf '  %-44s %14s %14s %14s\n' "the other $((TURN - 1)), enqueue -> end heard p50 (ms)" "$TS_P50" "$TP_P50" "$(ratio "$TP_P50" "$TS_P50")"
printf '  %-44s %14s %14s\n' "the other $((TURN - 1)), p99 (ms)" "$TS_P99" "$TP_P99"
printf '  %-44s %14s %14s\n' "uploaded: sum of result.artifact.size" "$(kib "$TS_ART")" "$(kib "$TP_ART")"
printf '  %-44s %14s %14s\n' "uploaded: worker's transfer_bytes (upload)" "$(kib "$TS_UP")" "$(kib "$TP_UP")"
printf '  %-44s %14s %14s\n' "downloaded: worker's transfer_bytes" "$(kib "$TS_DOWN")" "$(kib "$TP_DOWN")"
printf '  %-44s %14s %14s\n' "versions uploaded (of $TURN)" "$TS_NUP" "$TP_NUP"
printf '  %-44s %14s %14s\n' "artifact cache lookups: hits/misses" "$TS_HIT/$TS_MISS" "$TP_HIT/$TP_MISS"
echo "  before the turn (load average $R_LOAD3): the session's first job made its tree and checkpoint in ${SES_GEN_S} s,"
echo "  its end (final checkpoint, stop) took ${SES_END_S} s; the plain storage's first job ${PLAIN_GEN_S} s;"
echo "  their first versions: $BASE_MB"
echo
echo "floor: build/spawn-floor $FLOOR_RUNS runs of /bin/sh -c 'date +%s%N', spawn -> the instant it prints, same run."
echo "commit: when the enqueuer (bench/enqueue_serial.mjs) got its COMMIT acknowledged; inside: the job's own"
echo "date +%s%N (same host clock).  split: claim = jobs.started_at (clock_timestamp() in the claim statement),"
echo "worker start = result.started_at; worker start -> inside includes the wait for the claim's commit (no job"
echo "runs before it), and for a command the agent's fork and exec."
echo "host: load average before $LOAD_BEFORE, after $LOAD_AFTER; uptime at the start: $UPTIME_BEFORE"
