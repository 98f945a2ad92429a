# The workspace is a bounded filesystem of its own (issue 12), through the
# worker: sparse files, hard links and file counts cannot beat the limits,
# the timeout covers the run, what the job leaves over a limit fails it with
# WORKSPACE_LIMIT (final, head unchanged, nothing lost), workspace files are
# not memory, and no mount or loop device outlives its job or worker.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]]; then
  skip "bounded workspaces need the namespace backend as root"; tap_done; exit 0
fi
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-ws-$$"
fresh_db e2e_workspace
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
WD=$BOXCAR_DEV/work/ws-w
# The worker keeps its job mounts in a mount namespace of its own: look
# there (and in ours, where none may appear).
mounts_under() { cat /proc/$WORKER_PID/mountinfo /proc/self/mountinfo 2>/dev/null | grep -c " ${1}/"; }
loops_under() { losetup -a | grep -c "$1/" ; }
run_job() { local id; id=$(echo "$1" | "$BOXCAR" enqueue --spec -); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }

start_worker ws-w --concurrency 1 --lease 10s --poll-interval 300ms --sandbox namespace

# Item 1: a sparse file beats nothing.  While the job holds a 1 GiB sparse
# file, the work dir stays under its 16 MiB; the artifact keeps the hole.
id=$(echo '{"script": "truncate -s 1G sparse; echo x > small; sleep 3", "limits": {"disk_mb": 16}, "artifact": {"storage": "sparse"}}' | "$BOXCAR" enqueue --spec -)
wait_for "sparse job started" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$id' and kind = 'started'\") == 1 ]]"
sleep 1
du_kb=$(du -sk "$WD" | cut -f1)
"$BOXCAR" status --wait "$id" >/dev/null
size=$(job_field $id "result->'artifact'->>'size'")
if [[ $(job_field $id status) == succeeded ]] && (( du_kb < 16384 + 2048 && size < 1048576 )); then
  ok "1 GiB sparse file under disk_mb 16: work dir ${du_kb} KiB while it ran, artifact ${size} bytes"
else not_ok "sparse file bounded"; diag "du=$du_kb size=$size $(job_field $id "error")"; fi
"$BOXCAR" storage pull sparse@latest "$tmp/sparse" 2>/dev/null
is "the pulled version has the 1 GiB file, still sparse" \
   "$(stat -c '%s' "$tmp/sparse/sparse") $(( $(stat -c '%b' "$tmp/sparse/sparse") < 64 ))" "1073741824 1"

# Item 2: the timeout covers the whole run (nothing is copied afterwards).
id=$(run_job '{"script": "mkdir d; for i in $(seq 3000); do printf x > d/f$i; done; head -c 20000000 /dev/urandom > big; sleep 60", "limits": {"timeout_s": 2, "disk_mb": 512}, "artifact": {"storage": "slow"}}')
wall=$(job_field $id "result->>'wall_ms'")
span=$(sql "select (extract(epoch from max(at) filter (where kind = 'exited')) - extract(epoch from min(at) filter (where kind = 'claimed'))) * 1000
              from (select (e ->> 'at')::timestamptz as at, e ->> 'kind' as kind from boxcar.job_events_json('$id') e) x" | cut -d. -f1)
if [[ $(job_field $id "error->>'code'") == TIMEOUT ]] && (( wall < 2600 && span < 4000 )); then
  ok "timeout_s 2 with files in the workspace: TIMEOUT, wall ${wall} ms, claim to exit ${span} ms"
else not_ok "timeout covers the run"; diag "wall=$wall span=$span $(job_field $id error)"; fi

# Item 3: 64 hard links to an 8 MiB file are 8 MiB, in the workspace and
# in the artifact.
id=$(run_job '{"script": "head -c 8388608 /dev/urandom > f; for i in $(seq 64); do ln f l$i || exit 1; done", "limits": {"disk_mb": 16}, "artifact": {"storage": "links"}}')
size=$(job_field $id "result->'artifact'->>'size'")
if [[ $(job_field $id status) == succeeded ]] && (( size < 9 * 1048576 )); then
  ok "64 hard links to 8 MiB under disk_mb 16: succeeded, artifact ${size} bytes"
else not_ok "hard links"; diag "size=$size $(job_field $id error)"; fi
"$BOXCAR" storage pull links@latest "$tmp/links" 2>/dev/null
is "pulled back, they are links of one inode" "$(stat -c %h "$tmp/links/f")" "65"

# Item 4: the file count is the kernel's; packing more than limits.files
# is the job's failure.
id=$(run_job '{"script": "i=0; while [ $i -lt 100000 ]; do printf \"\" > f$i || break; i=$((i+1)); done; echo STOPPED $i", "limits": {"disk_mb": 16, "files": 1000}, "artifact": {"storage": "many"}}')
out=$(job_field $id "result->>'stdout'"); errout=$(job_field $id "result->>'stderr'")
n=$(sed -n 's/^STOPPED \([0-9]*\)$/\1/p' <<<"$out")
if [[ $errout == *"No space left on device"* ]] && [[ -n $n ]] && (( n < 1100 )); then
  ok "100,000 files against files 1000: ENOSPC after $n"
else not_ok "file count bounded by the kernel"; diag "$out $errout"; fi
is "over limits.files at packing: failed WORKSPACE_LIMIT naming the limit, run once" \
   "$(job_field $id "status || ' ' || (error->>'code') || ' ' || (error->>'message' like '%more than 1000 files%') || ' ' || attempts")" "failed WORKSPACE_LIMIT true 1"

# Items 5 and 6: a tree too deep to pack fails the job (final), the head
# stays, and the next job still finds what the last good one left.
id=$(run_job '{"script": "echo precious > precious.txt", "artifact": {"storage": "deep"}}')
head1=$(sql "select head_version from boxcar.storages where name = 'deep'")
is "a first version holds precious.txt" "$(job_field $id status)" "succeeded"
id=$(run_job '{"script": "rm precious.txt; d=.; for i in $(seq 205); do d=$d/d; done; mkdir -p $d", "artifact": {"storage": "deep"}}')
is "a 205-deep tree: WORKSPACE_LIMIT naming the path and the limit, not retried" \
   "$(job_field $id "status || ' ' || (error->>'code') || ' ' || (error->>'message' like '%deeper than 128 levels: d/d/%') || ' ' || attempts")" "failed WORKSPACE_LIMIT true 1"
is "the storage's head did not move" "$(sql "select head_version from boxcar.storages where name = 'deep'")" "$head1"
id=$(run_job '{"script": "cat precious.txt", "artifact": {"storage": "deep"}}')
is "the next job still finds precious.txt" "$(job_field $id "result->>'stdout'")" "precious"

# Item 7: a 1 GiB workspace with memory_mb 512 is disk, not memory.
id=$(run_job '{"script": "dd if=/dev/zero of=g bs=1M count=1024 2>&1 | tail -1; ls -l g", "limits": {"memory_mb": 512, "disk_mb": 1100, "timeout_s": 120}}')
is "1 GiB written to the workspace under memory_mb 512: succeeded, not OOM-killed" \
   "$(job_field $id "status || ' ' || (result->>'oom_killed')")" "succeeded false"

# (The ready filesystems of the pool, --warm-workspaces, live under
# $WD/pool; see t_ws_pool.sh.)
is "no mount is left under the jobs' directories" "$(mounts_under "$WD/jobs")" "0"
is "no loop device is left on an image under the jobs' directories" "$(loops_under "$WD/jobs")" "0"

# A killed worker leaves no mount and no loop device (they die with its
# mount namespace), and the next worker on the work dir removes the rest.
id=$(echo '{"command": ["sleep", "60"], "limits": {"disk_mb": 16}}' | "$BOXCAR" enqueue --spec -)
wait_for "sleeper started" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$id' and kind = 'started'\") == 1 ]]"
in_worker=$(grep -c " $WD/jobs/" /proc/$WORKER_PID/mountinfo); on_host=$(grep -c " $WD/" /proc/self/mountinfo)
loops=$(loops_under "$WD/jobs")
kill -9 "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
if [[ $in_worker == 1 && $on_host == 0 && $loops == 1 ]] && wait_for "loop device released" 10 bash -c "[[ \$(losetup -a | grep -c '$WD/') == 0 ]]"; then
  ok "the job's mount lives in the worker's namespace only; kill -9 of the worker releases it and its loop device"
else not_ok "kill -9 leaves nothing mounted"; diag "in_worker=$in_worker on_host=$on_host loops=$loops now=$(loops_under "$WD")"; fi
is "nothing of it is mounted on the host" "$(grep -c " $WD/" /proc/self/mountinfo)" "0"
"$BOXCAR" cancel "$id" >/dev/null
left=$(ls "$WD/jobs" | wc -l)
start_worker ws-w --concurrency 1 --lease 10s --poll-interval 300ms --sandbox namespace
if [[ $left -ge 1 ]] && wait_for "leftover job dir removed" 10 bash -c "[[ ! -e '$WD/jobs/$id.1' ]]"; then
  ok "the restarted worker removes the killed job's directory and image"
else not_ok "leftover job dir removed"; diag "left=$left $(ls "$WD/jobs")"; fi

tap_done
