# Warm sandboxes (issue 11), through the worker: jobs start in a sandbox
# made ahead of them; a warm sandbox that dies while it waits is replaced
# and the next job still runs warm; --warm-sandboxes 0 means cold starts;
# the limits and the workspace hold on the warm path; a worker killed with
# -9 leaves no sandbox process, cgroup or mount behind.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]]; then
  skip "warm sandboxes need the namespace backend as root"; tap_done; exit 0
fi
fresh_db e2e_warm
port=$(free_port)
metrics() { curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null; }
# metric NAME{LABELS}: its value, 0 when absent.
metric() { metric_at "$port" "$1"; }
ready_at_least() { (( $(metric 'boxcar_warm_sandboxes{state="ready"}') >= $1 )); }
run_job() { local id; id=$(echo "$1" | "$BOXCAR" enqueue --spec -); "$BOXCAR" status --wait --timeout 60s "$id" >/dev/null; echo "$id"; }
# The warm helpers of a worker: its children running boxcar-sandbox --warm.
warm_pids() { pgrep -P "$1" -f 'boxcar-sandbox --warm' || true; }
# Until the worker has 2 warm sandboxes again.
wait_refilled() { wait_for "pool refilled" 20 bash -c "[[ \$(pgrep -P $WORKER_PID -f 'boxcar-sandbox --warm' | wc -l) -ge 2 ]]"; }

# A sandbox killed from outside under its job (an operator's kill -9, a
# crash; nothing inside can signal its init) is the host's failure, not
# the job's: SANDBOX_SETUP, retried as a new attempt in a fresh workspace,
# never NONZERO_EXIT, and never run again in the same attempt over what
# the job left (a warm one used to be replaced by a cold one there: the
# job ran twice and saw its own first run's files).  kill_under_job WHAT
# (init: the sandbox's pid 1; helper: its supervisor outside) prints
# "status code attempts" and the error's message on the next line.
ppid_of() { ps -o ppid= -p "$1" | tr -d ' '; }
kill_under_job() {
  local id job init helper
  id=$(echo '{"script": "echo run >> /workspace/n; cat /workspace/n; sleep 29.71"}' |
       "$BOXCAR" enqueue --max-attempts 1 --spec -)
  wait_for "job running" 20 pgrep -fx 'sleep 29.71' >/dev/null
  job=$(ppid_of "$(pgrep -fx 'sleep 29.71' | head -1)")   # sh, pid 2 inside
  init=$(ppid_of "$job"); helper=$(ppid_of "$init")
  if [[ $(ppid_of "$helper") == "$WORKER_PID" ]]; then
    if [[ $1 == init ]]; then kill -9 "$init"; else kill -9 "$helper"; fi
  fi
  "$BOXCAR" status --wait --timeout 60s "$id" >/dev/null
  job_field "$id" "status || ' ' || coalesce(error->>'code', '-') || ' ' || attempts || E'\\n' || coalesce(error->>'message', '')"
}

start_worker warm-w --concurrency 2 --poll-interval 300ms --sandbox namespace --metrics-addr "127.0.0.1:$port"
wait_for "warm sandboxes ready" 30 ready_at_least 2
ready=$(metric 'boxcar_warm_sandboxes{state="ready"}')
(( ready >= 2 )) && ok "an idle worker keeps the prefetch ready ($ready warm sandboxes)" ||
  { not_ok "warm sandboxes ready"; diag "$(metrics | grep warm)"; tail -5 "$BOXCAR_DEV/test-logs/warm-w.log"; }
is "each is a boxcar-sandbox --warm child of the worker" "$(warm_pids $WORKER_PID | wc -l)" "$ready"

# Waiting, a warm sandbox holds no privilege: its init and the job's
# process (forked ahead, waiting for its job) are already as locked down
# as the job will be; the supervisor outside attaches the job's trees.
sup=$(warm_pids $WORKER_PID | head -1)
init=$(pgrep -P "$sup" | head -1)
jobp=$(pgrep -P "${init:-1}" | head -1)
# Its uid on the host is the sandbox's own, from the default --uid-range
# (docs/tenants.md, Host identities), which is 65534 (nobody) inside.
locked() {
  awk '/^Uid:/ { u = ($2 >= 1879048192 && $2 <= 1879113727) ? "own-id" : $2 }
       /^CapEff:/ { c = $2 } /^CapBnd:/ { b = $2 } /^NoNewPrivs:/ { n = $2 }
       /^Seccomp:/ { s = $2 } END { print u, c, b, n, s }' "/proc/$1/status" 2>/dev/null
  awk '{ print $1, $3 }' "/proc/$1/uid_map" 2>/dev/null
}
is "a waiting warm sandbox's init: its own host id (nobody inside), no capabilities, no_new_privs, seccomp" \
   "$(locked "${init:-0}" | tr '\n' ' ')" "own-id 0000000000000000 0000000000000000 1 2 65534 1 "
is "its job process, forked ahead: the same" "$(locked "${jobp:-0}" | tr '\n' ' ')" "own-id 0000000000000000 0000000000000000 1 2 65534 1 "

id=$(run_job '{"script": "echo hello > /workspace/f; cat /workspace/f; id -u; cat /proc/self/status | grep -E \"^(NoNewPrivs|Seccomp):\" | tr -s \"\\t \" \" \""}')
out=$(job_field $id "result->>'stdout'")
if [[ $(job_field $id status) == succeeded ]] && grep -q '^hello$' <<<"$out" && grep -q '^65534$' <<<"$out" \
   && grep -q 'NoNewPrivs: 1' <<<"$out" && grep -q 'Seccomp: 2' <<<"$out"; then
  ok "a job runs in a warm sandbox as nobody, with no_new_privs and seccomp, and writes its workspace"
else not_ok "job on the warm path"; diag "$(job_field $id "status || ' ' || coalesce(error::text, '') || ' ' || coalesce(result->>'stdout', '')")"; fi
warm=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
cold=$(metric 'boxcar_sandbox_starts_total{path="cold"}')
is "it was a warm start, not a cold one" "$warm/$cold" "1/0"
handoffs=$(metric 'boxcar_sandbox_handoff_seconds_count')
is "the handoff time is observed" "$handoffs" "1"

# Made ahead as background work, at a lower priority (by the pool's
# thread, whose nice the sandboxes it spawns inherit); once built, a
# sandbox waits at the worker's, so that its handoff is not queued behind
# the next one being made, and the job runs at the worker's, as a cold
# one does.
wnice=$(ps -o ni= -p "$WORKER_PID" | tr -d ' ')
# (Only where a sandbox can be put back: CAP_SYS_NICE, bit 23, in the
# bounding set its helpers are exec'd with.)
if (( 0x$(awk '/^CapBnd:/ { print $2 }' "/proc/$WORKER_PID/status") >> 23 & 1 )); then
  is "the pool's thread, which spawns the sandboxes, runs at the worker's nice + 5" \
     "$(ps -L -o ni= -p "$WORKER_PID" | tr -d ' ' | grep -cx "$(( wnice + 5 > 19 ? 19 : wnice + 5 ))")" "1"
else
  is "without CAP_SYS_NICE every thread runs at the worker's nice" \
     "$(ps -L -o ni= -p "$WORKER_PID" | tr -d ' ' | sort -u)" "$wnice"
fi
# The nice of the first warm sandbox's supervisor, init and job process
# (one value when they agree).
sandbox_nice() {
  local p c j
  p=$(warm_pids "$WORKER_PID" | head -1)
  [[ -n $p ]] && c=$(pgrep -P "$p" | head -1)
  [[ -n ${c:-} ]] && j=$(pgrep -P "$c" | head -1)
  [[ -n ${j:-} ]] || { echo "no sandbox with a job process"; return; }
  ps -o ni= -p "$p" -p "$c" -p "$j" | tr -d ' ' | sort -u | paste -sd,
}
at_worker_nice() { [[ $(sandbox_nice) == "$wnice" ]]; }
wait_refilled
# Being made, it is at + 5 (the pool's); built, at the worker's.
wait_for "a built warm sandbox" 20 at_worker_nice
is "a built warm sandbox waits at the worker's nice, its init and job process too" \
   "$(sandbox_nice)" "$wnice"
warm0=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
id=$(run_job '{"command": ["cut", "-d", " ", "-f19", "/proc/self/stat"]}')
is "a job on the warm path runs at the worker's nice" \
   "$(job_field $id "result->>'stdout'" | tr -d '\n') $(( $(metric 'boxcar_sandbox_starts_total{path="warm"}') - warm0 ))" "$wnice 1"

# Limits on the warm path: the spec's defaults are in a waiting sandbox's
# cgroup already (none is written at the handoff of a job that keeps
# them); other limits are written at handoff, lower or higher.
cg_limits() {
  local pid=$1
  if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
    local d; d=/sys/fs/cgroup$(awk -F: '$1 == 0 { print $3 }' "/proc/$pid/cgroup")
    echo "$(cat "$d/memory.max") $(cat "$d/pids.max") $(cat "$d/cpu.max")"
  else
    v1() { awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$pid/cgroup"; }
    echo "$(cat "/sys/fs/cgroup/memory$(v1 memory)/memory.limit_in_bytes") $(cat "/sys/fs/cgroup/pids$(v1 pids)/pids.max")" \
         "$(cat "/sys/fs/cgroup/cpu$(v1 cpu)/cpu.cfs_quota_us") $(cat "/sys/fs/cgroup/cpu$(v1 cpu)/cpu.cfs_period_us")"
  fi
}
wait_refilled
sup=$(warm_pids $WORKER_PID | head -1)
is "a waiting warm sandbox's cgroup has the default limits: 1 GiB, 256 pids + its init, 1 CPU" \
   "$(cg_limits "$(pgrep -P "$sup" | head -1)")" "1073741824 257 100000 100000"
id=$(run_job '{"script": "python3 -c \"x = bytearray(1200 * 1024 * 1024)\""}')
is "default memory_mb (1024) on the warm path: 1200 MiB is OOM" "$(job_field $id "error->>'code'")" "OOM"
wait_for "a warm sandbox ready" 20 ready_at_least 1
warm0=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
id=$(run_job '{"script": "python3 -c \"x = bytearray(1200 * 1024 * 1024); print(len(x) >> 20)\"", "limits": {"memory_mb": 2048}}')
is "memory_mb raised above the default on the warm path (2048): 1200 MiB fits, a warm start" \
   "$(job_field $id "status || ' ' || (result->>'stdout')" | xargs echo) $(( $(metric 'boxcar_sandbox_starts_total{path="warm"}') - warm0 ))" \
   "succeeded 1200 1"
id=$(run_job '{"script": "python3 -c \"x = bytearray(400 * 1024 * 1024)\"", "limits": {"memory_mb": 64}}')
is "memory_mb applies on the warm path: OOM" "$(job_field $id "error->>'code'")" "OOM"
id=$(run_job '{"script": "for i in $(seq 40); do sleep 5 & done; wait", "limits": {"pids": 8, "timeout_s": 20}}')
err=$(job_field $id "result->>'stderr'")
grep -qiE 'fork|resource temporarily unavailable|cannot' <<<"$err" && ok "pids applies on the warm path: the 9th process is refused" ||
  { not_ok "pids on the warm path"; diag "$(job_field $id "status || ' ' || coalesce(result::text, '')" | head -c 600)"; }

# A warm sandbox that dies while it waits is replaced, and counted.
wait_refilled
victim=$(warm_pids $WORKER_PID | head -1)
fails0=$(metric boxcar_warm_sandbox_failures_total)
kill -9 "$victim"
wait_for "failure counted" 10 bash -c "(( \$(curl -fsS http://127.0.0.1:$port/metrics | awk '\$1 == \"boxcar_warm_sandbox_failures_total\" { print \$2 }') > $fails0 ))" &&
  ok "a warm sandbox killed while waiting is noticed and counted" || not_ok "dead warm sandbox noticed"
wait_for "replaced" 20 bash -c "[[ \$(pgrep -P $WORKER_PID -f 'boxcar-sandbox --warm' | wc -l) -ge 2 ]] && ! kill -0 $victim 2>/dev/null"
# Killed, it could not remove its cgroup: the worker that reaped it does.
victim_cgroups() { find /sys/fs/cgroup -maxdepth 6 -type d -name "boxcar-sandbox-$victim" 2>/dev/null | wc -l; }
wait_for "victim's cgroup removed" 10 bash -c "[[ \$(find /sys/fs/cgroup -maxdepth 6 -type d -name boxcar-sandbox-$victim | wc -l) == 0 ]]"
is "and the cgroup it could not remove is removed by the worker" "$(victim_cgroups)" "0"
warm0=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
id=$(run_job '{"command": ["true"]}')
is "the next job still succeeds, warm" "$(job_field $id status) $(( $(metric 'boxcar_sandbox_starts_total{path="warm"}') - warm0 ))" "succeeded 1"
is "no attempt was spent on it" "$(job_field $id attempts)" "1"

for what in init helper; do
  out=$(kill_under_job $what)
  if [[ $(head -1 <<<"$out") == "failed SANDBOX_SETUP 1" ]] && grep -q 'may have run in part' <<<"$out"; then
    ok "a warm sandbox's $what killed from outside under its job: SANDBOX_SETUP (retried), not run again in the attempt"
  else not_ok "warm sandbox's $what killed under its job"; diag "$out"; fi
done

# Teardown is off the slot's path: a slot is free once the helper's status
# has come; the helper then removes its cgroup, and the worker collects its
# exit later.  Nothing of it may be left: no zombie, no cgroup.
sandbox_cgroups() { find /sys/fs/cgroup -maxdepth 6 -type d -name 'boxcar-sandbox-*' 2>/dev/null | sort; }
cgroups_before=$(mktemp); sandbox_cgroups >"$cgroups_before"
ids=()
for i in $(seq 8); do ids+=("$(echo '{"command": ["true"]}' | "$BOXCAR" enqueue --spec -)"); done
for id in "${ids[@]}"; do "$BOXCAR" status --wait --timeout 60s "$id" >/dev/null; done
zombies() { ps --ppid "$1" -o stat= | grep -c '^Z'; }
# boxcar-sandbox-PID cgroups made since this test began whose helper is
# gone (other runs on this host may have left theirs).
stale_cgroups() {
  sandbox_cgroups | comm -13 "$cgroups_before" - |
    while read -r d; do kill -0 "${d##*-}" 2>/dev/null || echo "$d"; done | wc -l
}
export -f sandbox_cgroups stale_cgroups; export cgroups_before
is "8 more jobs succeeded" "$(sql "select count(*) from boxcar.jobs where status = 'succeeded' and id = any('{$(IFS=,; echo "${ids[*]}")}')")" "8"
wait_for "helpers collected" 10 bash -c "[[ \$(ps --ppid $WORKER_PID -o stat= | grep -c '^Z') == 0 ]]"
is "their helpers' exits are collected: no zombie child of the worker" "$(zombies $WORKER_PID)" "0"
wait_for "cgroups removed" 10 bash -c '[[ $(stale_cgroups) == 0 ]]'
is "and no cgroup outlives its helper" "$(stale_cgroups)" "0"

# kill -9 of the worker: the warm sandboxes go with it (they die with the
# pool's thread), taking their cgroups; nothing is left to clean up.
pids=$(warm_pids $WORKER_PID | tr '\n' ' ')
kill -9 "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
gone() { for p in $pids; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
if [[ -n $pids ]] && wait_for "warm sandboxes gone" 10 gone; then
  ok "kill -9 of the worker: its warm sandboxes ($pids) are gone"
else not_ok "warm sandboxes outlive the worker"; ps -o pid,ppid,cmd -p ${pids:-1} | sed 's/^/# /'; fi
left=0
for p in $pids; do
  [[ -n $(find /sys/fs/cgroup -maxdepth 6 -type d -name "boxcar-sandbox-$p" 2>/dev/null) ]] && left=$((left + 1))
done
is "and no cgroup of theirs is left" "$left" "0"

# A helper that could not tear down (killed with SIGKILL itself, or its
# worker was, before it made its cgroup's removal) leaves its cgroup, and
# a worker killed with SIGKILL reaps none: the next worker on the same
# cgroup removes those of pids that are gone, and nothing else (a live
# pid's, another name).  Where the helpers make them: the parent the worker
# logged, else its own cgroup in each v1 hierarchy (or on v2).
cg_parents() {
  local p; p=$(sed -n 's/.*event=sandbox\.cgroup parent=\([^ ]*\).*/\1/p' "$BOXCAR_DEV/test-logs/warm-w.log" | head -1)
  if [[ -n $p && $p != none ]]; then echo "$p"; return; fi
  local v2; [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] && v2=1 || v2=0
  awk -F: -v v2=$v2 'v2 && $1 == 0 { print "/sys/fs/cgroup" $3 }
           !v2 && $2 ~ /(^|,)(memory|pids|cpu|cpuacct)(,|$)/ { n = split($2, c, ","); for (i = 1; i <= n; i++)
             if (c[i] ~ /^(memory|pids|cpu|cpuacct)$/) print "/sys/fs/cgroup/" c[i] $3 }' /proc/self/cgroup |
    sed 's:/$::' | while read -r d; do [[ -d $d ]] && echo "$d"; done
}
dead=$(sh -c 'echo $$')
stale=() kept=()
for d in $(cg_parents); do
  mkdir "$d/boxcar-sandbox-$dead" "$d/boxcar-sandbox-$$" "$d/boxcar-sandboxed-$dead" 2>/dev/null &&
    stale+=("$d/boxcar-sandbox-$dead") kept+=("$d/boxcar-sandbox-$$" "$d/boxcar-sandboxed-$dead")
done
start_worker warm-sweep --concurrency 1 --poll-interval 300ms --sandbox namespace --warm-sandboxes 0
wait_for "worker up" 20 grep -q 'event=sandbox.pool' "$BOXCAR_DEV/test-logs/warm-sweep.log"
left=0; for d in "${stale[@]}"; do [[ -d $d ]] && left=$((left + 1)); done
there=0; for d in "${kept[@]}"; do [[ -d $d ]] && there=$((there + 1)); done
if (( ${#stale[@]} > 0 && left == 0 && there == ${#kept[@]} )) &&
   grep -q "event=sandbox.cgroup_swept count=${#stale[@]} " "$BOXCAR_DEV/test-logs/warm-sweep.log"; then
  ok "a starting worker removes the cgroups of helpers that are gone (${#stale[@]}), not a live pid's or another name"
else not_ok "stale helper cgroups swept at start"; diag "stale=${stale[*]} left=$left kept=$there/${#kept[@]}"
  grep cgroup "$BOXCAR_DEV/test-logs/warm-sweep.log" | sed 's/^/# /'; fi
for d in "${kept[@]}" "${stale[@]}"; do rmdir "$d" 2>/dev/null; done
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# The least-privilege deployments (deploy/README.md) do not grant
# CAP_SYS_NICE: there the pool makes its sandboxes at the jobs' priority
# (a sandbox made at + 5 could not be put back: its init and job process
# are another uid), and they work.  Under the systemd unit's bounding set,
# jobs used to find every warm sandbox failing at its handoff.
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$BOXCAR_ROOT/deploy/boxcar-worker.service")
bset="-all$(for c in $caps; do printf ',+%s' "$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done)"
wrapper=$(mktemp); chmod 755 "$wrapper"
# capped_worker NAME BOUNDING_SET: a worker under that bounding set.
capped_worker() {
  printf '#!/bin/sh\nexec setpriv --bounding-set %s --inh-caps -all -- %s "$@"\n' "$2" "$BOXCAR" > "$wrapper"
  BOXCAR=$wrapper start_worker "$1" --concurrency 1 --poll-interval 300ms --sandbox namespace \
    --metrics-addr "127.0.0.1:$port"
}
capped_worker warm-capped "$bset"
wait_for "a warm sandbox ready" 20 ready_at_least 1
is "without CAP_SYS_NICE (the unit's bounding set: $caps), the worker says so" \
   "$(grep -c 'event=sandbox.pool_priority reason="no CAP_SYS_NICE' "$BOXCAR_DEV/test-logs/warm-capped.log")" "1"
wnice=$(ps -o ni= -p "$WORKER_PID" | tr -d ' ')
id=$(run_job '{"command": ["cut", "-d", " ", "-f19", "/proc/self/stat"]}')
is "and a job starts warm there, at the worker's nice, after no failed sandbox" \
   "$(job_field $id "status || ' ' || btrim(result->>'stdout', E'\\n')") $(metric 'boxcar_sandbox_starts_total{path="warm"}') $(metric 'boxcar_sandbox_starts_total{path="cold"}') $(metric boxcar_warm_sandbox_failures_total)" \
   "succeeded $wnice 1 0 0"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
# Without CAP_SYS_CHROOT a warm sandbox cannot be entered at its handoff:
# the job still runs, on a cold sandbox, and the log says why.
capped_worker warm-nochroot "${bset/,+sys_chroot/}"
wait_for "a warm sandbox ready" 20 ready_at_least 1
id=$(run_job '{"command": ["true"]}')
is "without CAP_SYS_CHROOT: the job succeeds on a cold sandbox after its warm one failed at handoff" \
   "$(job_field $id status) $(metric 'boxcar_sandbox_starts_total{path="cold"}')" "succeeded 1"
check "and the log names the capability" grep -q \
  'event=sandbox.warm_handoff_failed error=".*mount namespace: Operation not permitted (the worker needs CAP_SYS_CHROOT' \
  "$BOXCAR_DEV/test-logs/warm-nochroot.log"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
rm -f "$wrapper"

# A job that finds no warm sandbox ready, but one being made (a burst
# that outran the pool), waits for that one rather than start a cold
# sandbox, the same build from its first step.  Here every build takes
# 0.4 s more (a helper that sleeps first), and the pool holds one: the
# second job comes while the first one's refill is being made.
slow_helper=$(mktemp "${TMPDIR:-/tmp}/boxcar-slow-helper.XXXXXX"); chmod 755 "$slow_helper"
printf '#!/bin/sh\ncase " $* " in *" --warm "*) sleep 0.4 ;; esac\nexec %s "$@"\n' \
  "$(dirname "$BOXCAR")/boxcar-sandbox" > "$slow_helper"
start_worker warm-wait --concurrency 2 --warm-sandboxes 1 --poll-interval 300ms --sandbox namespace \
  --sandbox-helper "$slow_helper" --metrics-addr "127.0.0.1:$port"
wait_for "a warm sandbox ready" 30 ready_at_least 1
a=$(echo '{"command": ["sleep", "1.93"]}' | "$BOXCAR" enqueue --spec -)
wait_for "the first job running in it" 20 pgrep -fx 'sleep 1.93' >/dev/null
b=$(run_job '{"command": ["true"]}')
"$BOXCAR" status --wait --timeout 60s "$a" >/dev/null
is "a job that finds the pool's sandbox still being made waits for it: both jobs warm, none cold" \
   "$(job_field $a status) $(job_field $b status) $(metric 'boxcar_sandbox_starts_total{path="warm"}')/$(metric 'boxcar_sandbox_starts_total{path="cold"}')" \
   "succeeded succeeded 2/0"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
# The same before the pool has timed a build: a worker just started,
# whose first sandbox is still being made when the first job comes, waits
# for it (up to 1 s) rather than cut it short at its 10 ms guess's bound.
start_worker warm-first --concurrency 1 --warm-sandboxes 1 --poll-interval 300ms --sandbox namespace \
  --sandbox-helper "$slow_helper" --metrics-addr "127.0.0.1:$port"
# This worker's helper sleeping (not one the last worker left to die).
first_build() {
  local h; h=$(pgrep -P "$WORKER_PID" -d, -f boxcar-slow-helper) && pgrep -P "$h" -fx 'sleep 0.4' >/dev/null
}
wait_for "the pool's first sandbox being made" 20 first_build
id=$(run_job '{"command": ["true"]}')
is "a worker's first job waits for the first sandbox being made: warm, none cold, none discarded" \
   "$(job_field $id status) $(metric 'boxcar_sandbox_starts_total{path="warm"}')/$(metric 'boxcar_sandbox_starts_total{path="cold"}') $(grep -c 'event=sandbox.warm_slow' "$BOXCAR_DEV/test-logs/warm-first.log")" \
   "succeeded 1/0 0"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
rm -f "$slow_helper"

# --warm-sandboxes 0: every sandbox is cold.
start_worker warm-off --concurrency 1 --poll-interval 300ms --sandbox namespace --warm-sandboxes 0 --metrics-addr "127.0.0.1:$port"
wait_for "metrics up" 20 bash -c "curl -fsS http://127.0.0.1:$port/metrics >/dev/null"
id=$(run_job '{"command": ["true"]}')
is "--warm-sandboxes 0: the job succeeds on a cold sandbox, none warm" \
   "$(job_field $id status) $(metric 'boxcar_sandbox_starts_total{path="cold"}') $(metric 'boxcar_sandbox_starts_total{path="warm"}') $(warm_pids $WORKER_PID | wc -l)" \
   "succeeded 1 0 0"
out=$(kill_under_job init)
if [[ $(head -1 <<<"$out") == "failed SANDBOX_SETUP 1" ]] && grep -q 'killed from outside' <<<"$out"; then
  ok "a cold sandbox's init killed from outside under its job: SANDBOX_SETUP (retried), not the job's NONZERO_EXIT"
else not_ok "cold sandbox's init killed under its job"; diag "$out"; fi
# A stopped worker waits for its helpers' teardown (their cgroups).
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
is "a stopped worker leaves no helper's cgroup behind" "$(stale_cgroups)" "0"
rm -f "$cgroups_before"
tap_done
