# Inside the cgroup v2 VM: boxcar as systemd's Delegate=yes starts it, a
# process alone in a cgroup of its own (as root, and as an unprivileged
# user owning that cgroup).
# - root: the worker moves itself into a leaf, gives its jobs' cgroups
#   memory/pids/cpu, and the limits hold on jobs; nothing is left behind.
# - unprivileged: the worker does the same with the subtree it owns; its
#   namespace jobs fail closed (no bounded workspace without root, as the
#   README says), and boxcar-sandbox run by that user in the delegated
#   subtree (what an unprivileged worker spawns) still enforces the limits.
source "$(dirname "$0")/../lib.sh"
real=$BOXCAR
cgroot=/sys/fs/cgroup
wrap="$BOXCAR_DEV/vm-bin/boxcar"
mkdir -p "${wrap%/*}"
# The wrapper does what systemd does for a Delegate=yes unit: a cgroup of
# the unit's own, the process moved in before exec, the cgroup's files
# chowned to the unit's User= when it has one (BOXCAR_VM_USER).
cat > "$wrap" <<WRAP
#!/bin/bash
if [[ \$1 == worker ]]; then
  cg=$cgroot/boxcar-\$\$.service
  mkdir "\$cg" && echo \$\$ > "\$cg/cgroup.procs" || exit 99
  if [[ -n \${BOXCAR_VM_USER:-} ]]; then
    chown "\$BOXCAR_VM_USER" "\$cg" "\$cg/cgroup.procs" "\$cg/cgroup.threads" "\$cg/cgroup.subtree_control"
    exec setpriv --reuid="\$BOXCAR_VM_USER" --regid="\$BOXCAR_VM_USER" --clear-groups "$real" "\$@"
  fi
fi
exec "$real" "\$@"
WRAP
chmod 755 "$wrap"
export BOXCAR_WRAPPER=$wrap
BOXCAR=$wrap
echo "+memory +pids +cpu" > $cgroot/cgroup.subtree_control
"$BOXCAR_ROOT/scripts/pg.sh" start >/dev/null || { not_ok "PostgreSQL starts in the VM"; tap_done; exit 1; }
mkdir -p "$BOXCAR_DEV/work" "$BOXCAR_DEV/test-logs" && chmod 1777 "$BOXCAR_DEV/work"

run_job() { local id; id=$(echo "$1" | "$real" enqueue --spec -); "$real" status --wait --timeout 120s "$id" >/dev/null; echo "$id"; }
sandbox_cgroups() { compgen -G "$1/boxcar-sandbox-*" | wc -l; }

# start_delegated LABEL: a worker in a cgroup of its own, in its leaf.
start_delegated() {
  start_worker "vm-$1" --concurrency 2 --poll-interval 200ms --sandbox namespace
  cg=$cgroot/boxcar-$WORKER_PID.service
  wait_for "worker in its leaf" 30 grep -q "boxcar-$WORKER_PID.service/boxcar-worker" "/proc/$WORKER_PID/cgroup"
  if grep -q "sandbox.cgroup.*v2 delegated" "$BOXCAR_DEV/test-logs/vm-$1.log" \
     && [[ $(cat "/proc/$WORKER_PID/cgroup") == "0::/boxcar-$WORKER_PID.service/boxcar-worker" ]]; then
    ok "[$1] the worker moved itself into a leaf of its delegated cgroup"
  else not_ok "[$1] worker in a leaf"; diag "$(cat /proc/$WORKER_PID/cgroup 2>&1)"; tail -5 "$BOXCAR_DEV/test-logs/vm-$1.log" | sed 's/^/# /'; fi
  is "[$1] and enabled memory, pids and cpu for its jobs" "$(tr ' ' '\n' < "$cg/cgroup.subtree_control" | sort | tr '\n' ' ')" "cpu memory pids "
}

# stop_delegated LABEL: SIGTERM; the worker's sandboxes (warm ones too)
# must leave no cgroup behind.
stop_delegated() {
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
  is "[$1] after the worker stopped, no sandbox cgroup is left in its subtree" "$(sandbox_cgroups "$cg")" "0"
}

# limit_checks LABEL RUN: the memory, pids and cpu limits on jobs that RUN
# (a function taking a script and a limits object) runs; RUN leaves the
# job's error code in CODE and its output in OUT.
limit_checks() {
  local label=$1 run=$2 cpu
  $run 'python3 -c "x = bytearray(400 * 1024 * 1024)"' '{"memory_mb": 64}'
  is "[$label] memory_mb 64 against 400 MiB: OOM-killed and reported OOM" "$CODE" "OOM"
  $run 'for i in $(seq 200); do sleep 5 & done; wait; echo all-forked' '{"pids": 20, "timeout_s": 30}'
  if ! grep -q all-forked <<<"$OUT" && grep -qi "fork\|resource temporarily unavailable" <<<"$OUT"; then
    ok "[$label] pids 20: the 21st process cannot be forked"
  else not_ok "[$label] pids limit"; diag "code=$CODE ${OUT:0:300}"; fi
  $run 'python3 -c "import time
t=time.process_time(); w=time.time()
while time.time()-w < 2: pass
print(int((time.process_time()-t)*1000))"' '{"cpus": 0.25, "timeout_s": 120}'
  cpu=${OUT//[^0-9]/}
  if [[ -n $cpu ]] && (( cpu > 100 && cpu < 1000 )); then ok "[$label] cpus 0.25: ${cpu} ms of CPU in 2 s of spinning"
  else not_ok "[$label] cpu limit"; diag "cpu=$cpu code=$CODE ${OUT:0:300}"; fi
}

# --- root -------------------------------------------------------------------
fresh_db vm_root
start_delegated root
# A job that runs for a while: its cgroup (found from its process on the
# host) must be beside the worker's leaf, hold the job's memory limit, and
# go when the job ends.
m=vmjob-$$-$RANDOM
t0=$(date +%s)
id=$(echo "{\"command\": [\"bash\", \"-c\", \"exec -a $m sleep 15\"], \"limits\": {\"memory_mb\": 96}}" | "$real" enqueue --spec -)
jobcg=""
find_job() { local p; p=$(pgrep -f "^$m" | head -1) && [[ -n $p ]] && jobcg=$cgroot$(sed -n 's/^0:://p' "/proc/$p/cgroup"); }
wait_for "job running" 150 find_job
# The job may sit in a leaf below the sandbox's cgroup: the limit is on
# the boxcar-sandbox-* directory.
diag "job seen running after $(( $(date +%s) - t0 )) s"
sbxcg=$(grep -o "^$cg/boxcar-sandbox-[0-9]*" <<<"$jobcg")
mem=$( [[ -n $sbxcg ]] && cat "$sbxcg/memory.max" 2>/dev/null)
"$real" status --wait --timeout 120s "$id" >/dev/null
is "[root] a job runs" "$(job_field "$id" status)" "succeeded"
is "[root] its cgroup is beside the worker's leaf, with memory.max from memory_mb 96" "${sbxcg%/*}:$mem" "$cg:$((96 * 1048576))"
wait_for "job cgroup removed" 10 bash -c "[[ ! -e '$sbxcg' ]]"
if [[ -n $sbxcg && ! -e $sbxcg ]]; then ok "[root] and it is removed when the job ends"; else not_ok "[root] job cgroup removed"; diag "jobcg=$jobcg"; fi
worker_run() {
  local id; id=$(run_job "$(jq -nc --arg s "$1" --argjson l "$2" '{script: $s, limits: $l}')")
  CODE=$(job_field "$id" "coalesce(error->>'code', '')")
  OUT=$(job_field "$id" "coalesce(result->>'stdout', '') || coalesce(result->>'stderr', '')")
}
limit_checks root worker_run
stop_delegated root

# --- unprivileged -----------------------------------------------------------
fresh_db vm_nobody
export BOXCAR_VM_USER=65534
start_delegated nobody
id=$(run_job '{"command": ["true"]}')
code=$(job_field "$id" "error->>'code'"); msg=$(job_field "$id" "error->>'message'")
if [[ $code == SANDBOX_SETUP && $msg == *"not root"* ]]; then
  ok "[nobody] a namespace job fails closed, saying why: $msg"
else not_ok "[nobody] namespace job without root"; diag "$code $msg"; fi
stop_delegated nobody
unset BOXCAR_VM_USER

# boxcar-sandbox as nobody, in a subtree nobody owns, leaf and controllers
# set up as the worker does.
ucg=$cgroot/boxcar-user.service
mkdir -p "$ucg" && chown 65534 "$ucg" "$ucg/cgroup.procs" "$ucg/cgroup.threads" "$ucg/cgroup.subtree_control"
sandbox_run() {
  local args=() k v
  while IFS=$'\t' read -r k v; do
    case $k in memory_mb) args+=(--memory-mb "$v") ;; pids) args+=(--pids "$v") ;; cpus) args+=(--cpus "$v") ;; timeout_s) args+=(--timeout "$v") ;; esac
  done < <(jq -r 'to_entries[] | "\(.key)\t\(.value)"' <<<"$2")
  # As systemd does for the unit's processes, root puts it in the leaf;
  # from there nobody owns every cgroup its sandbox moves between.
  OUT=$(cd / && bash -c 'echo $$ > "$1/boxcar-leaf/cgroup.procs" || exit 99; shift; exec "$@"' _ "$ucg" \
    setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$BOXCAR_SANDBOX" --cgroup-parent "$ucg" --disk-mb 64 --status-fd 3 "${args[@]}" -- sh -c "$1" 2>&1 3>"$BOXCAR_DEV/vm-status")
  CODE=$(jq -r 'if .oom_killed then "OOM" elif .timed_out then "TIMEOUT" elif .exit_code != 0 then "NONZERO_EXIT" else "" end' "$BOXCAR_DEV/vm-status" 2>/dev/null)
}
setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "mkdir '$ucg/boxcar-leaf' && echo '+memory +pids +cpu' > '$ucg/cgroup.subtree_control'" &&
  ok "[nobody] the delegated subtree's owner makes its leaf and enables the controllers" || not_ok "[nobody] leaf and controllers"
limit_checks "nobody, boxcar-sandbox" sandbox_run
is "[nobody] no sandbox cgroup is left" "$(sandbox_cgroups "$ucg")" "0"
tap_done
