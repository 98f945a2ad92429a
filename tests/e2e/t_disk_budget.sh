# Jobs' workspaces cannot fill the worker's disk: on a 1200 MiB work dir
# with --disk-reserve 100MiB, two jobs of disk_mb 700 that each write
# 600 MiB run one after the other (the second waits, with a disk_wait
# event), and the free space never goes below the reserve; a job that
# could never fit fails with SANDBOX_SETUP naming the figures (at once, or
# after --disk-wait when other files fill the disk, while smaller jobs go
# past it); a job still waiting after --disk-wait goes back to the queue,
# not counted; a waiting job can be cancelled, and a draining worker hands
# it back.  The volume cache under the work dir gives way to a job that
# would not fit beside it, and its downloads keep the reserve free.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]]; then
  skip "bounded workspaces need the namespace backend as root"; tap_done; exit 0
fi
fresh_db e2e_disk_budget
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-disk-$$"
WD=$BOXCAR_DEV/work/disk-w
mkdir -p "$WD"
umount -l "$WD" 2>/dev/null
mount -t tmpfs -o size=1200m,mode=0700 boxcar-e2e-disk "$WD"
sampler=""
trap 'cleanup_bg; [[ -n $sampler ]] && kill $sampler 2>/dev/null; umount -l "$WD"' EXIT
free_mib() { echo $(( $(stat -f -c '%a * %S' "$WD") / 1048576 )); }
# watch_free SECS ... watched: the lowest free space (MiB) seen in between,
# sampled every SECS, in $lowest.
watch_free() {
  ( lo=100000; while :; do f=$(free_mib); (( f < lo )) && { lo=$f; echo "$lo" > "$WD.min"; }; sleep "$1"; done ) &
  sampler=$!
}
watched() { kill $sampler; sampler=""; lowest=$(cat "$WD.min"); rm -f "$WD.min"; }
enqueue() { echo "$1" | "$BOXCAR" enqueue --spec - "${@:2}"; }
# As `boxcar events` tells it (a job's 'finished' is its row's, last).
events() { sql "select string_agg(e ->> 'kind', ' ' order by (e ->> 'at')::timestamptz, n)
                  from boxcar.job_events_json('$1') with ordinality x(e, n)"; }
has_event() { [[ $(sql "select count(*) from boxcar.job_events_json('$1') e where e ->> 'kind' = '$2'") == 1 ]]; }
event_at() { sql "select extract(epoch from min((e ->> 'at')::timestamptz)) from boxcar.job_events_json('$1') e
                   where e ->> 'kind' = '$2'"; }
WRITER='head -c 629145600 /dev/zero > big && sync && sleep 1'
PORT=$(free_port)   # a fixed port collided once with an ephemeral one in use
waits() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v k="boxcar_disk_waits_total{outcome=\"$1\"}" '$1 == k { print $2 }'; }

WORKER_FLAGS=(--work-dir "$WD" --disk-reserve 100MiB --concurrency 2 --lease 10s --poll-interval 300ms
              --sandbox namespace --disk-wait 15s)
start_worker disk-w "${WORKER_FLAGS[@]}" --metrics-addr "127.0.0.1:$PORT"
wait_for "worker registered" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.workers where state = 'running'\") == 1 ]]"

check "the worker warned at start that a default job (2048 MiB) has no room here" \
  grep -q "event=disk.short detail=\"1[01][0-9][0-9] MiB free on the filesystem of --work-dir $WD, 100 MiB kept free by --disk-reserve: room for 1[01][0-9][0-9] MiB" \
  "$BOXCAR_DEV/test-logs/disk-w.log"

# Item 1: one after the other, and the reserve stays free.
watch_free 0.05
a=$(enqueue "{\"script\": \"$WRITER\", \"limits\": {\"disk_mb\": 700}}")
wait_for "first job started" 20 has_event "$a" started
b=$(enqueue "{\"script\": \"$WRITER\", \"limits\": {\"disk_mb\": 700}}")
"$BOXCAR" status --wait "$a" >/dev/null; "$BOXCAR" status --wait "$b" >/dev/null
watched
is "both writers succeeded" "$(job_field $a status) $(job_field $b status)" "succeeded succeeded"
check "the second waited for disk (events: $(events $b))" grep -q "claimed disk_wait started" <<< "$(events $b)"
why=$(sql "select details->>'message' from boxcar.job_events where job_id = '$b' and kind = 'disk_wait'")
check "its event says why: $why" grep -q "need 700 MiB of disk.*running jobs may still write.*--disk-reserve" <<< "$why"
check "it started once the first had finished" \
  awk -v s="$(event_at $b started)" -v f="$(event_at $a finished)" 'BEGIN { exit !(s >= f) }'
check "the work dir's free space never went below the reserve (lowest ${lowest} MiB)" \
  test "$lowest" -ge 95
check "the worker logged the wait" grep -q "event=job.disk_wait job_id=$b" "$BOXCAR_DEV/test-logs/disk-w.log"
is "and counted it: boxcar_disk_waits_total{outcome=\"started\"}" "$(waits started)" "1"

# The caches give way: a 500 MiB volume kept in the volume cache leaves
# too little room for a job of disk_mb 700; the worker evicts it (nobody
# holds it) instead of making the job wait.
VOL=$BOXCAR_DEV/work/disk-vol
rm -rf "$VOL"; mkdir -p "$VOL"
# 500 MiB that gzip packs about 60 to 1 (within the extraction's ratio check).
python3 -c '
import os, sys
with open(sys.argv[1], "wb") as f:
    for _ in range(8000):
        f.write(os.urandom(1024) + bytes(64512))' "$VOL/data"
vsha=$("$BOXCAR" storage push --kind volume disk-fill "$VOL" 2>/dev/null)
ventry=$(stack_of "$vsha")   # the cache's name for its tree
rm -rf "$VOL"
VOLUME_JOB='{"command": ["true"], "volumes": [{"name": "fill", "mount": "/mnt/fill", "storage": "disk-fill"}], "limits": {"disk_mb": 64}}'
v=$(enqueue "$VOLUME_JOB")
"$BOXCAR" status --wait "$v" >/dev/null
is "a job with the 500 MiB volume succeeded" "$(job_field $v status)" "succeeded"
check "control: the volume is in the cache under the work dir" test -d "$WD/volumes/v/$ventry"
check "control: a job of disk_mb 700 would not fit beside it ($(free_mib) MiB free, 100 kept)" \
  test $(( $(free_mib) - 100 )) -lt 700
w=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 700}}')
"$BOXCAR" status --wait "$w" >/dev/null
is "the job of disk_mb 700 succeeded" "$(job_field $w status)" "succeeded"
check "without waiting (events: $(events $w))" grep -q "^claimed started exited finished$" <<< "$(events $w)"
check "the volume was evicted from the cache" test ! -e "$WD/volumes/v/$ventry"
logged=$(grep -Eo "event=disk.reclaimed cache=volumes bytes=5[0-9]{8} asked=[0-9]+" "$BOXCAR_DEV/test-logs/disk-w.log")
check "the worker logged what it reclaimed: $logged" test -n "$logged"
reclaimed=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '$1 == "boxcar_disk_reclaimed_bytes_total{cache=\"volumes\"}" { print $2 }')
logged_bytes=$(sed -n 's/.* bytes=\([0-9]*\) .*/\1/p' <<< "$logged")
check "and counted it: boxcar_disk_reclaimed_bytes_total{cache=\"volumes\"} $reclaimed" \
  test -n "$reclaimed" -a "$reclaimed" = "${logged_bytes:-none}"

# Nor do the caches' downloads eat into the reserve: with 700 MiB of other
# files, the 500 MiB volume would leave less than the 100 MiB kept free;
# its extraction stops, the job fails naming the reserve (FETCH_FAILED,
# retried like any fetch), and nothing of it is left.
head -c 734003200 /dev/zero > "$WD/filler"
watch_free 0.02
v=$(enqueue "$VOLUME_JOB" --max-attempts 1)
"$BOXCAR" status --wait "$v" >/dev/null
watched; rm -f "$WD/filler"
msg=$(job_field $v "error->>'message'")
is "a volume that would eat into the reserve: failed, FETCH_FAILED" \
   "$(job_field $v status) $(job_field $v "error->>'code'")" "failed FETCH_FAILED"
check "the message says why: $msg" grep -q "MiB free on the filesystem after [0-9]* MiB of the archive, below the 100 MiB kept free (--disk-reserve)" <<< "$msg"
check "the free space stayed near the reserve (lowest ${lowest} MiB; the check runs every 8 MiB)" \
  test "$lowest" -ge 85
check "nothing of the volume is left in the cache" \
  bash -c "[[ ! -e '$WD/volumes/v/$ventry' && -z \$(ls -A '$WD/volumes/tmp') ]]"

# A session's next version is kept in the artifact cache from the job's
# changes (a copy of what changed), unless that copy could take the disk
# below the reserve: a job writing 100 MiB over version 1, admitted with
# 12 MiB to spare, has its version uploaded but not cached.  Only where
# bases are overlays over that cache: as root each sandbox has host ids of
# its own (docs/tenants.md), and bases are extracted instead.
base=$(artifact_base)
if [[ $base != overlay* ]]; then
  check "artifact cache: none kept here, bases are extracted, and detect says why ($base)" \
    eval 'extracted_for_own_ids "$base" && [[ ! -d $WD/artifacts || -z $(ls -A "$WD/artifacts") ]]'
else
p1=$(enqueue '{"script": "head -c 1048576 /dev/urandom > seed", "artifact": {"storage": "prom"}, "limits": {"disk_mb": 64}}')
"$BOXCAR" status --wait "$p1" >/dev/null
v1=$(job_field $p1 "result->'artifact'->>'sha256'")
head -c $(( ($(free_mib) - 352) * 1048576 )) /dev/zero > "$WD/filler"
watch_free 0.02
p2=$(enqueue "{\"script\": \"head -c 104857600 /dev/urandom > big\", \"artifact\": {\"storage\": \"prom\", \"base\": \"$v1\"}, \"limits\": {\"disk_mb\": 120}}")
"$BOXCAR" status --wait "$p2" >/dev/null
watched; rm -f "$WD/filler"
v2=$(job_field $p2 "result->'artifact'->>'sha256'")
is "the job over version 1 succeeded and uploaded its version" "$(job_field $p2 status) ${#v2}" "succeeded 64"
check "control: version 1 is in the artifact cache" test -d "$WD/artifacts/v/$(stack_of "$v1")"
check "its version was not cached" test ! -e "$WD/artifacts/v/$(stack_of "$v2")"
check "the worker said why" grep -q "event=artifact.cache sha256=$(stack_of "$v2") error=\"No space left on device\"" "$BOXCAR_DEV/test-logs/disk-w.log"
check "the free space stayed above the reserve (lowest ${lowest} MiB)" test "$lowest" -ge 95
fi

# Item 2: a job that cannot fit even alone fails, naming the figures: at
# once when the filesystem is too small; after --disk-wait when other
# files than the jobs' fill it, while jobs that fit go past it.
c=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 4096}}' --max-attempts 1)
"$BOXCAR" status --wait "$c" >/dev/null
is "disk_mb 4096 on a 1200 MiB work dir: failed, SANDBOX_SETUP" \
   "$(job_field $c status) $(job_field $c "error->>'code'")" "failed SANDBOX_SETUP"
msg=$(job_field $c "error->>'message'")
check "the message names the need, the filesystem and the reserve: $msg" \
  grep -q "need 4096 MiB of disk.*is on a filesystem of 1200 MiB, 100 MiB of which --disk-reserve keeps free" <<< "$msg"
head -c 419430400 /dev/zero > "$WD/filler"
t0=$EPOCHREALTIME
c=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 1000}}' --max-attempts 1)
wait_for "it waits" 20 has_event "$c" disk_wait
d=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 64}}')
"$BOXCAR" status --wait "$d" >/dev/null
is "a job that fits went past it meanwhile" "$(job_field $d status) $(job_field $c status)" "succeeded running"
"$BOXCAR" status --wait "$c" >/dev/null
took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
msg=$(job_field $c "error->>'message'")
is "disk_mb 1000 beside 400 MiB of other files: failed, SANDBOX_SETUP" \
   "$(job_field $c status) $(job_field $c "error->>'code'")" "failed SANDBOX_SETUP"
check "it failed after --disk-wait 15s (${took} s)" test "$took" -ge 14
check "the message names the room even with no job: $msg" \
  grep -q "need 1000 MiB of disk.*room for at most [67][0-9][0-9] MiB of jobs even with none running.*100 MiB kept free by --disk-reserve" <<< "$msg"
rm -f "$WD/filler"

# Item 3: cancelled while it waits.
HOLD='head -c 10485760 /dev/zero > f; sleep 8'
a=$(enqueue "{\"script\": \"$HOLD\", \"limits\": {\"disk_mb\": 700}}")
wait_for "holder started" 20 has_event "$a" started
b=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 700}}')
wait_for "second waiting" 20 has_event "$b" disk_wait
t0=$EPOCHREALTIME
"$BOXCAR" cancel "$b" >/dev/null
"$BOXCAR" status --wait "$b" >/dev/null
took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')
is "cancelled while waiting: cancelled, CANCELLED" \
   "$(job_field $b status) $(job_field $b "error->>'code'") $(job_field $b "error->>'message'")" \
   "cancelled CANCELLED cancelled while it waited for disk"
check "at once (${took} ms), while the holder still ran" test "$(job_field $a status)" = running
"$BOXCAR" status --wait "$a" >/dev/null
is "the holder succeeded" "$(job_field $a status)" "succeeded"
is "counted: boxcar_disk_waits_total{outcome=\"cancelled\"}" "$(waits cancelled)" "1"

# Item 4: after --disk-wait (15 s) a waiting job goes back to the queue,
# not counted; it runs once the holder is done.
a=$(enqueue '{"script": "sleep 22", "limits": {"disk_mb": 700}}')
wait_for "holder started" 20 has_event "$a" started
b=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 700}}')
"$BOXCAR" status --wait "$b" >/dev/null
ev=$(events $b)
check "released after the wait, then ran (events: $ev)" \
  grep -q "^claimed disk_wait released claimed .*started exited finished$" <<< "$ev"
is "succeeded, on its first counted attempt, after the holder" \
   "$(job_field $b status) $(job_field $b attempts) $(job_field $a status)" "succeeded 1 succeeded"
is "counted: boxcar_disk_waits_total{outcome=\"released\"}" "$(waits released)" "1"

# Item 5: a draining worker hands a waiting job back, not counted.
a=$(enqueue "{\"script\": \"$HOLD\", \"limits\": {\"disk_mb\": 700}}")
wait_for "holder started" 20 has_event "$a" started
b=$(enqueue '{"command": ["true"], "limits": {"disk_mb": 700}}')
wait_for "second waiting" 20 has_event "$b" disk_wait
kill -TERM "$WORKER_PID"
wait_for "second handed back" 10 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.jobs where id = '$b'\") == queued ]]"
is "drained while waiting: queued again, no attempt counted" \
   "$(job_field $b status) $(job_field $b attempts)" "queued 0"
wait "$WORKER_PID" 2>/dev/null
is "the holder finished within the drain" "$(job_field $a status)" "succeeded"
start_worker disk-w "${WORKER_FLAGS[@]}"
"$BOXCAR" status --wait "$b" >/dev/null
is "a new worker ran it" "$(job_field $b status)" "succeeded"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
check "the worker's budget file went with it" bash -c "! ls '$WD/disk' | grep -q '^w\.'"
tap_done
