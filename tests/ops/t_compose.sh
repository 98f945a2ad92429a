# Sourced by tests/ops/run.sh: the image and the podman compose stack, run
# for real (root, podman, podman-compose, mmdebstrap, runc, npm; make deps
# installs them).  Nothing is pulled from a registry:
#   - scripts/image.sh stack builds the Debian 12 base with mmdebstrap
#     (cached), the Dockerfile on it, and the stack's PostgreSQL and s3rver
#     images;
#   - deploy/podman/compose.yml's worker has the privileges of
#     docker-compose.yml's (capabilities, devices, seccomp, AppArmor);
#   - the stack comes up with two workers; jobs enqueued from the host
#     through the published PostgreSQL port all succeed, sandboxed
#     (result.sandbox "namespace", uid 65534 in a user namespace, memory,
#     pids and disk limits), on both replicas;
#   - BOXCAR_WORKERS=3 adds a third replica, which registers and runs jobs;
#   - control workers with the same privileges less CAP_SYS_ADMIN, or in
#     the host's cgroup namespace, fail their jobs closed (SANDBOX_SETUP,
#     naming what failed);
#   - teardown leaves no container, volume or network of the stack.
# Prints the image's size and the test's wall time.
compose_test() {
  local missing=() c
  for c in podman podman-compose mmdebstrap runc npm psql; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  if [[ $(id -u) -ne 0 || ${#missing[@]} -gt 0 ]] || ! have_yaml; then
    # CI installs them (make deps): there a missing one is a failure.
    local why="needs root, python3-yaml and: podman podman-compose mmdebstrap runc npm psql; missing: ${missing[*]:-}"
    if [[ ${CI:-} == true ]]; then not_ok "compose stack ($why)"; else skip "compose stack ($why)"; fi
    return
  fi
  local t0=$SECONDS out
  source scripts/podman-env.sh
  if ! out=$(scripts/image.sh stack 2>&1); then
    not_ok "scripts/image.sh stack builds the images"; diag "$out"; return
  fi
  ok "scripts/image.sh stack builds the images with podman from an mmdebstrap base"
  while read -r line; do diag "$line"; done <<<"$out"
  diag "image localhost/boxcar size: $(scripts/image.sh size) bytes; built in $((SECONDS - t0)) s"

  # The podman stack's worker has exactly the Docker stack's privileges.
  if out=$(python3 - <<'PY' 2>&1
import yaml
d = yaml.safe_load(open("docker-compose.yml"))["services"]["worker"]
p = yaml.safe_load(open("deploy/podman/compose.yml"))["services"]["worker"]
for k in ("cap_drop", "cap_add", "devices"):
    assert d[k] == p[k], f"{k}: {d[k]} != {p[k]}"
norm = lambda o: [s.replace("./deploy/", "../") for s in o]
assert norm(d["security_opt"]) == p["security_opt"], (d["security_opt"], p["security_opt"])
assert "privileged" not in p and "privileged" not in d
PY
  ); then ok "deploy/podman/compose.yml's worker has docker-compose.yml's privileges, not privileged"
  else not_ok "deploy/podman/compose.yml's worker has docker-compose.yml's privileges"; diag "$out"; fi

  local project="boxcar-t$$" port url log="$W/compose.log"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  url="postgresql://boxcar:boxcar@127.0.0.1:$port/boxcar"
  # What podman-compose 1.0 cannot say in the file (deploy/README.md).
  local run_args="--cgroupns=private --device-cgroup-rule='b 7:* rwm'"
  pc() {
    (cd deploy/podman && BOXCAR_COMPOSE_PG_PORT=$port podman-compose -p "$project" -f compose.yml "$@") >>"$log" 2>&1
  }
  cq() { psql -XqtA -v ON_ERROR_STOP=1 "$url" -c "$1" 2>/dev/null; }
  workers_are() { [[ $(cq "select count(*) from boxcar.workers where state = 'running' and heartbeat_at > now() - interval '30 seconds'") == "$1" ]]; }
  # enqueue N SECS: N jobs of SECS each, with limits; prints the ids.
  enqueue() {
    local spec='{"command": ["sh", "-c", "sleep '"$2"'; id -u; cat /proc/self/uid_map; cat /proc/self/cgroup"], "limits": {"memory_mb": 128, "pids": 32, "disk_mb": 16, "timeout_s": 60}}'
    cq "select boxcar.enqueue('default', '$spec') from generate_series(1, $1)"
  }
  all_done() { [[ $(cq "select count(*) from boxcar.jobs where id = any('{$(paste -sd, "$1")}'::uuid[]) and status in ('succeeded', 'failed', 'cancelled')") == $(wc -l <"$1") ]]; }
  # The jobs in FILE all succeeded, sandboxed; prints the distinct worker ids.
  sandboxed() {
    cq "select count(*) filter (where status <> 'succeeded' or result->>'sandbox' <> 'namespace'
                                 or split_part(result->>'stdout', E'\n', 1) <> '65534'
                                 or result->>'stdout' !~ E'\n +65534 +[0-9]+ +1\n')
        from boxcar.jobs where id = any('{$(paste -sd, "$1")}'::uuid[])"
  }
  ran_on() { cq "select distinct worker_id from boxcar.jobs where id = any('{$(paste -sd, "$1")}'::uuid[]) order by 1"; }
  teardown() {
    # podman-compose 1.0's down removes the containers but leaves their
    # anonymous volumes (the image's VOLUMEs), the named volumes and the
    # network: the containers go first here, with their volumes.
    local ids; ids=$(podman ps -aq --filter "label=io.podman.compose.project=$project")
    [[ -n $ids ]] && podman rm -f -v -t 5 $ids >/dev/null 2>&1
    podman rm -f -v "$project-nosysadmin" "$project-hostcgns" >/dev/null 2>&1 || true
    pc down || true
    ids=$(podman volume ls -q --filter "label=io.podman.compose.project=$project")
    [[ -n $ids ]] && podman volume rm -f $ids >/dev/null 2>&1
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
  }

  local t1=$SECONDS vols0 imgs0
  vols0=$(podman volume ls -q | sort)
  imgs0=$(podman images -aq | sort)
  pc up -d postgres s3 migrate
  BOXCAR_WORKERS=2 pc --podman-run-args="$run_args" up -d worker
  if wait_for "two workers" 120 workers_are 2; then
    ok "compose up: PostgreSQL, s3rver, migrate and two workers ($((SECONDS - t1)) s)"
  else
    not_ok "compose up: two workers registered"; diag "$(tail -20 "$log")"
    diag "$(podman ps -a --filter "label=io.podman.compose.project=$project" --format '{{.Names}} {{.Status}}')"
    teardown; return
  fi
  enqueue 8 1 >"$W/jobs1"
  wait_for "the first jobs" 120 all_done "$W/jobs1"
  is "8 jobs from the host all succeeded sandboxed (namespace, uid 65534 in a user namespace)" "$(sandboxed "$W/jobs1")" 0
  local ran workers
  ran=$(ran_on "$W/jobs1"); workers=$(cq "select id from boxcar.workers where state = 'running' order by 1")
  if [[ $(wc -l <<<"$ran") == 2 && $ran == "$workers" ]]; then
    ok "both replicas ran jobs: $(paste -sd' ' <<<"$ran")"
  else
    not_ok "both replicas ran jobs"; diag "ran on: $ran; workers: $workers"
  fi
  # Exactly the file's capabilities (the bounding set of the container's
  # processes) and a seccomp filter, in every replica.
  local want_bnd got
  want_bnd=$(python3 - <<'PY'
import yaml
n = {"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5,
     "SETGID": 6, "SETUID": 7, "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_ADMIN": 12,
     "NET_RAW": 13, "SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_ADMIN": 21, "SYS_NICE": 23,
     "SYS_RESOURCE": 24, "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31}
w = yaml.safe_load(open("deploy/podman/compose.yml"))["services"]["worker"]
print("%016x" % sum(1 << n[c] for c in w["cap_add"]))
PY
  )
  got=$(for c in "${project}_worker_1" "${project}_worker_2"; do
          podman exec "$c" sh -c 'grep -E "^(CapBnd|Seccomp):" /proc/1/status' | awk '{printf "%s ", $2}'; done)
  is "the workers run with exactly the file's capabilities and a seccomp filter" "$got" "$want_bnd 2 $want_bnd 2 "
  local limits
  limits=$(podman exec "${project}_worker_1" sh -c 'ls -d /sys/fs/cgroup/memory/boxcar-* 2>/dev/null | head -1')
  check "the workers make per-job cgroups in their own (private) cgroup namespace" test -n "$limits"

  # Scale: podman-compose 1.0 parses `up --scale` and ignores it, so the
  # replica count is deploy.replicas' variable.
  BOXCAR_WORKERS=3 pc --podman-run-args="$run_args" up -d worker
  if wait_for "three workers" 60 workers_are 3; then ok "BOXCAR_WORKERS=3: a third replica registered"
  else not_ok "BOXCAR_WORKERS=3: a third replica registered"; fi
  local third
  third=$(comm -13 <(printf '%s\n' "$workers") <(cq "select id from boxcar.workers where state = 'running' order by 1"))
  # 12 jobs of 2 s on 3 x 2 slots: the new replica gets some.
  enqueue 12 2 >"$W/jobs2"
  wait_for "the second jobs" 120 all_done "$W/jobs2"
  is "12 more jobs all succeeded sandboxed" "$(sandboxed "$W/jobs2")" 0
  ran=$(ran_on "$W/jobs2")
  if [[ -n $third && $(wc -l <<<"$ran") == 3 ]] && grep -qxF "$third" <<<"$ran"; then
    ok "the third replica ($third) ran jobs too"
  else
    not_ok "the third replica ran jobs"; diag "third: $third; ran on: $ran"
  fi

  # Controls: the same worker less one thing it needs fails its job closed.
  #   nosysadmin  the file's privileges less CAP_SYS_ADMIN
  #   hostcgns    all of them, in the host's cgroup namespace (podman's
  #               default on cgroup v1): no writable cgroup for the jobs
  local net="${project}_default" args name drop cgns cj err what
  for what in "nosysadmin SYS_ADMIN private" "hostcgns - host"; do
    read -r name drop cgns <<<"$what"
    args=$(DROP=$drop python3 - <<'PY'
import os, shlex, yaml
w = yaml.safe_load(open("deploy/podman/compose.yml"))["services"]["worker"]
a = ["--cap-drop=" + c for c in w["cap_drop"]]
a += ["--cap-add=" + c for c in w["cap_add"] if c != os.environ["DROP"]]
a += ["--device=" + d for d in w["devices"]]
a += ["--security-opt=" + s.replace("../", "deploy/") for s in w["security_opt"]]
print(shlex.join(a))
PY
    )
    eval "podman run -d --name '$project-$name' --init --cgroupns=$cgns --device-cgroup-rule='b 7:* rwm' \
      --net '$net' -e 'DATABASE_URL=postgresql://boxcar:boxcar@postgres:5432/boxcar' \
      $args localhost/boxcar:$(cat VERSION) boxcar worker --queues '$name' --concurrency 1" >>"$log" 2>&1
    cj=$(cq "select boxcar.enqueue('$name', '{\"command\": [\"true\"]}', max_attempts => 1)")
    echo "$cj" >"$W/jobs-$name"
    wait_for "the $name job" 60 all_done "$W/jobs-$name"
    err=$(cq "select status || ' ' || coalesce(error::text, '') from boxcar.jobs where id = '$cj'")
    if [[ $err == "failed "*SANDBOX_SETUP* ]]; then ok "control $name: the job fails closed: ${err:0:170}"
    else not_ok "control $name: the job fails closed"; diag "$err"; diag "$(podman logs "$project-$name" 2>&1 | tail -5)"; fi
  done

  teardown
  local left
  left="$(podman ps -aq --filter "label=io.podman.compose.project=$project")$(podman volume ls -q --filter "label=io.podman.compose.project=$project")"
  podman network exists "${project}_default" && left+=" network"
  podman container exists "$project-nosysadmin" && left+=" nosysadmin"
  podman container exists "$project-hostcgns" && left+=" hostcgns"
  left+=$(comm -13 <(printf '%s\n' "$vols0") <(podman volume ls -q | sort) | sed 's/^/ volume /')
  is "teardown leaves no container, volume or network of the stack" "$left" ""
  is "running the stack added no image (scripts/image.sh's are the cache)" "$(podman images -aq | sort)" "$imgs0"
  diag "compose test wall time: $((SECONDS - t0)) s (images $((t1 - t0)) s, stack $((SECONDS - t1)) s)"
}
compose_test
