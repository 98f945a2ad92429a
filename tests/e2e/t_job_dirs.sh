# A finished job's directory is kept for a later job (worker/workdir/dir_bin.c)
# instead of removed and made again: the next job finds it exactly as a new
# one, nothing of the last job's in its workspace or meta, nothing outside
# it touched; a stopped worker leaves none, and a killed one's are removed
# by the next start.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_job_dirs
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
run_job() { local id; id=$(echo "$1" | "$BOXCAR" enqueue --spec -); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }
kept() { ls "$1/jobs" 2>/dev/null | grep -c '^free-'; }

# --sandbox none: the job works in the directory itself.
WD=$BOXCAR_DEV/work/dirs-none
echo "not the job's" > "$tmp/outside"
start_worker dirs-none --concurrency 1 --poll-interval 300ms --sandbox none
id=$(run_job "{\"script\": \"mkdir -p a/b/c && echo 1 > a/b/c/f && echo 2 > .hidden && ln -s $tmp/outside link && ln -s $tmp out && mkdir locked && echo 3 > locked/x && chmod 000 locked\"}")
is "a job leaves files, links out and a mode-000 directory" "$(job_field $id status)" "succeeded"
wait_for "its directory kept" 10 bash -c "[[ \$(ls '$WD/jobs' | grep -c '^free-') == 1 ]]"
free=$(ls "$WD/jobs" | grep '^free-')
is "kept: its lock, an empty workspace and meta (it held the script) with a new progress FIFO (0600), nothing else" \
   "$(cd "$WD/jobs/$free" && ls -A | tr '\n' ' '; find workspace meta -mindepth 1 -printf '%p %y %m')" "lock meta workspace meta/progress p 600"
id=$(run_job '{"script": "pwd; ls -A | wc -l; ls -ld . | cut -c1-10"}')
is "the next job's workspace is empty, mode 0755" "$(job_field $id "result->>'stdout'" | sed -n 2,3p | xargs echo)" "0 drwxr-xr-x"
is "the next job ran in the kept directory (renamed to its own)" \
   "$(job_field $id "result->>'stdout'" | head -1)" "$WD/jobs/$id.1/workspace"
is "what the links pointed at is untouched" "$(cat "$tmp/outside"; ls "$tmp" | wc -l)" "not the job's
1"
# Eight at once: at most concurrency + 2 are kept, the rest removed.
kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
is "a stopped worker leaves no directory" "$(ls -A "$WD/jobs" | wc -l)" "0"
start_worker dirs-none --concurrency 4 --poll-interval 300ms --sandbox none
ids=$(for i in $(seq 12); do echo '{"command": ["sleep", "0.3"]}' | "$BOXCAR" enqueue --spec -; done)
for id in $ids; do "$BOXCAR" status --wait "$id" >/dev/null; done
wait_for "directories kept" 10 bash -c "[[ \$(ls '$WD/jobs' | grep -vc '^free-') == 0 ]]"
n=$(kept "$WD")
if (( n >= 1 && n <= 6 )); then ok "12 jobs, 4 at a time: $n directories kept (at most 4 + 2)"
else not_ok "kept directories bounded"; diag "$(ls "$WD/jobs")"; fi
# kill -9: the kept directories' locks die with the worker; the next start
# removes them like any leftover.
inst=$(sql "select instance from boxcar.workers where id = 'dirs-none'")
kill -9 "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
start_worker dirs-none --concurrency 1 --poll-interval 300ms --sandbox none
# It registers after cleaning its work dir.
wait_for "worker registered" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.workers where id = 'dirs-none' and instance <> '$inst'\") == 1 ]]"
is "after kill -9, the next start removes the kept directories" "$(ls -A "$WD/jobs" | wc -l)" "0"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID"

# The namespace backend: the job sees meta at /run/boxcar (read-only) and
# its workspace filesystem, which the pool wipes; the directory around
# them is kept.
if [[ $E2E_SANDBOX == namespace && $(id -u) -eq 0 ]]; then
  WD=$BOXCAR_DEV/work/dirs-ns
  start_worker dirs-ns --concurrency 1 --poll-interval 300ms --sandbox namespace
  id=$(run_job '{"script": "echo secret > /workspace/s; ls /run/boxcar"}')
  is "a script job's meta holds its script and its progress FIFO" "$(job_field $id "status || ' ' || (result->>'stdout')" | xargs echo)" "succeeded progress script.sh"
  wait_for "its directory kept" 10 bash -c "[[ \$(ls '$WD/jobs' | grep -c '^free-') == 1 ]]"
  free=$(ls "$WD/jobs" | grep '^free-')
  is "kept: its lock, the empty mount point and meta with a new progress FIFO (0600), nothing else" \
     "$(cd "$WD/jobs/$free" && ls -A | tr '\n' ' '; find fs meta -mindepth 1 -printf '%p %y %m')" "fs lock meta meta/progress p 600"
  id=$(run_job '{"command": ["sh", "-c", "ls -A /run/boxcar; ls -A /workspace | wc -l"]}')
  is "the next job's meta holds only its own progress FIFO, its workspace nothing" "$(job_field $id "status || ' ' || (result->>'stdout')" | xargs echo)" "succeeded progress 0"
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
  is "a stopped worker leaves no directory" "$(ls -A "$WD/jobs" | wc -l)" "0"
else
  skip "the namespace backend's kept directories need root"
fi

tap_done
