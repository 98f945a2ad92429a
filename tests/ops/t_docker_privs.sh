# Sourced by tests/ops/run.sh: the compose worker's privileges, reproduced
# without a Docker engine (there is none on the test hosts) and shown to be
# enough: the worker runs as root with only docker-compose.yml's cap_add
# capabilities (setpriv bounding set), under deploy/docker-seccomp.json
# (loaded with libseccomp as the engine would), behind Docker's /proc masks
# (in a mount namespace of its own), and runs a job with memory/pids/cpu
# limits and a workspace, times one out and cancels one.  Then the same with
# pivot_root taken out of the profile (as Docker's default profile has it)
# must fail with SANDBOX_SETUP: the harness can tell the difference.
# Not reproduced: AppArmor (unconfined in the file), the device cgroup
# rules, a read-only cgroup2 mount and its remount (this host's cgroups are
# v1), image pulls; deploy/README.md says so too.
docker_privs_test() {
  if [[ $(id -u) -ne 0 ]] || ! have_yaml || ! command -v setpriv >/dev/null || ! command -v unshare >/dev/null; then
    skip "compose worker privileges reproduced (needs root, python3-yaml, setpriv, unshare)"; return
  fi
  local caps
  caps=$(python3 -c 'import yaml; w = yaml.safe_load(open("docker-compose.yml"))["services"]["worker"]; print(",".join("+" + c.lower() for c in w["cap_add"]))')
  cat > "$W/docker-boxcar" <<WRAP
#!/bin/sh
# boxcar as docker-compose.yml's worker container would run it.
[ "\$1" = worker ] || exec "$BOXCAR" "\$@"
exec unshare -m --propagation private sh -ec '
  for p in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug; do
    [ -e \$p ] && mount --bind /dev/null \$p; done
  for p in /proc/acpi /proc/scsi; do [ -d \$p ] && mount -t tmpfs -o ro tmpfs \$p; done
  for p in /proc/bus /proc/fs /proc/irq /proc/sys /proc/sysrq-trigger; do
    [ -e \$p ] && mount --bind \$p \$p && mount -o remount,bind,ro \$p; done
  exec python3 "$BOXCAR_ROOT/tests/ops/seccomp_exec.py" "\$PROFILE" \
    setpriv --bounding-set=-all,$caps --inh-caps=-all -- "$BOXCAR" "\$@"' sh "\$@"
WRAP
  chmod +x "$W/docker-boxcar"
  python3 -c 'import json; p = json.load(open("deploy/docker-seccomp.json")); p["syscalls"][0]["names"].remove("pivot_root"); json.dump(p, open("'"$W"'/no-pivot.json", "w"))'
  fresh_db ops_docker >/dev/null 2>&1
  local real=$BOXCAR
  local spec='{"command": ["sh", "-c", "echo hi > /workspace/f && cat /workspace/f && id -u"], "limits": {"memory_mb": 256, "pids": 64, "cpus": 1, "disk_mb": 64, "timeout_s": 30}}'
  # Under SAN=1, LeakSanitizer stops the worker's threads with ptrace at
  # exit, which this profile denies (tests/ops/run.sh checks that it does):
  # it would end the worker with a fatal error instead of a leak report.
  # The leak check stays on for every other worker of the suites.
  local asan=${ASAN_OPTIONS-}
  [[ ${SAN:-0} == 1 ]] && asan="${asan:+$asan:}detect_leaks=0"
  local mport; mport=$(free_port)
  ASAN_OPTIONS=$asan BOXCAR="$W/docker-boxcar" PROFILE="$BOXCAR_ROOT/deploy/docker-seccomp.json" \
    start_worker docker-w --concurrency 2 --poll-interval 200ms --metrics-addr "127.0.0.1:$mport" \
      --network-allow default=10.2.0.0/16:5432
  BOXCAR=$real
  # starts PATH: sandbox starts by path (warm, cold) so far.
  starts() { metric_at "$mport" "boxcar_sandbox_starts_total{path=\"$1\"}"; }
  ready() { (( $(metric_at "$mport" 'boxcar_warm_sandboxes{state="ready"}') >= 1 )); }
  wait_for "a warm sandbox" 30 ready
  local a b c d
  a=$("$BOXCAR" enqueue --queue default --spec - <<<"$spec")
  b=$("$BOXCAR" enqueue --spec - <<<'{"command": ["sleep", "30"], "limits": {"timeout_s": 1}}')
  c=$("$BOXCAR" enqueue --spec - <<<'{"command": ["sleep", "30"], "limits": {"timeout_s": 60}}')
  wait_for "c running" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.jobs where id = '$c'\") == running ]]"
  "$BOXCAR" cancel "$c" >/dev/null
  # An allow-list: a DNS responder on port 53 and a proxy listener on the
  # rule's port, in the job's own network namespace.
  local e
  e=$("$BOXCAR" enqueue --spec - <<<'{"command": ["true"], "network": {"allow": ["10.2.0.0/16:5432"]}}')
  for j in "$a" "$b" "$c" "$e"; do "$BOXCAR" status --wait --timeout 60s "$j" >/dev/null 2>&1; done
  is "compose privileges: a job with limits and a workspace runs (uid 65534)" \
    "$(job_field "$a" "status || ' ' || replace(result->>'stdout', E'\n', ' ')")" "succeeded hi 65534 "
  is "compose privileges: a timeout stops its job" "$(job_field "$b" "status || ' ' || (error->>'code')")" "failed TIMEOUT"
  is "compose privileges: a cancel stops its job" "$(job_field "$c" "status")" "cancelled"
  is "compose privileges: a network.allow job gets its DNS responder and proxy" \
    "$(job_field "$e" "status || coalesce(' ' || (error->>'message'), '')")" "succeeded"
  # A job whose warm sandbox fails at handoff still succeeds, on a cold
  # one: only these show that the warm path itself works here.
  check "compose privileges: jobs start in warm sandboxes ($(starts warm) warm, $(starts cold) cold)" \
    test "$(starts warm)" -ge 1
  is "compose privileges: no warm sandbox failed at its handoff" \
    "$(grep -c 'event=sandbox.warm_handoff_failed' "$BOXCAR_DEV/test-logs/docker-w.log")" "0"
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
  is "compose privileges: the worker drains and exits 0" "$?" 0
  check "compose privileges: the profile was loaded" grep -q 'seccomp_exec: loaded' "$BOXCAR_DEV/test-logs/docker-w.log"

  ASAN_OPTIONS=$asan BOXCAR="$W/docker-boxcar" PROFILE="$W/no-pivot.json" start_worker docker-np --concurrency 1 --poll-interval 200ms --warm-sandboxes 0
  BOXCAR=$real
  d=$("$BOXCAR" enqueue --spec - <<<"$spec")
  "$BOXCAR" status --wait --timeout 60s "$d" >/dev/null 2>&1
  is "without pivot_root (Docker's default profile) the sandbox cannot be built" \
    "$(job_field "$d" "status || ' ' || (error->>'code')")" "failed SANDBOX_SETUP"
  check "and the error says pivot_root" bash -c "psql -XqtA '$DATABASE_URL' -c \"select error->>'message' from boxcar.jobs where id = '$d'\" | grep -q pivot_root"
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
}
docker_privs_test
