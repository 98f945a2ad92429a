# Sourced by tests/ops/run.sh: `make deb` builds a package lintian accepts
# (warnings included; overrides in deploy/debian/lintian-overrides, each
# with its reason), `dpkg -i` installs it on this machine, the installed
# binaries run a job (workspace, limits, an artifact in S3) against the test
# PostgreSQL and S3 with settings from a configuration file, the installed
# unit passes `systemd-analyze verify` with nothing filtered, and
# `dpkg --purge` leaves nothing behind.  Root only; skipped when a boxcar
# package or /etc/boxcar is already there (not ours to replace).
# dpkg_locked CMD...: CMD (a dpkg call), retried while another dpkg or apt
# on this shared machine holds the lock (up to 10 minutes).
dpkg_locked() {
  local i out
  for ((i = 0; i < 600; i++)); do
    out=$(DEBIAN_FRONTEND=noninteractive "$@" 2>&1) && return 0
    grep -q 'lock' <<<"$out" || { printf '%s\n' "$out"; return 1; }
    sleep 1
  done
  printf '%s\n' "$out"; return 1
}

deb_test() {
  if [[ $(id -u) -ne 0 ]]; then skip "deb install test (not root)"; return; fi
  if dpkg-query -W -f='${Status}' boxcar 2>/dev/null | grep -q 'installed\|unpacked\|config-files'; then
    skip "deb install test (a boxcar package is already on this machine)"; return
  fi
  if [[ -e /etc/boxcar || -e /var/lib/boxcar || -e /usr/bin/boxcar ]]; then
    skip "deb install test (/etc/boxcar, /var/lib/boxcar or /usr/bin/boxcar exists)"; return
  fi
  local deb out
  deb=$(make --no-print-directory -s deb BUILD="$BUILD" 2>"$W/deb.err" | tail -1)
  if [[ ! -f $deb ]]; then not_ok "make deb builds a package"; diag "$(tail -5 "$W/deb.err")"; return; fi
  ok "make deb builds $(basename "$deb")"
  if command -v lintian >/dev/null; then
    out=$(lintian --fail-on warning "$deb" 2>&1 | grep -v 'running with root privileges')
    is "lintian: no errors or warnings" "$(grep -E '^[EW]:' <<<"$out")" ""
  else
    not_ok "lintian is installed (scripts/deps.sh)"
  fi
  local contents; contents=$(dpkg-deb -c "$deb" | awk '{print $1, $NF}')
  for f in usr/bin/boxcar usr/bin/boxcar-sandbox usr/bin/boxcar-session-agent usr/bin/boxcar-guard \
           lib/systemd/system/boxcar-worker.service usr/share/man/man1/boxcar.1.gz \
           usr/lib/modules-load.d/boxcar.conf; do
    check "the package ships /$f" grep -q " \./$f\$" <<<"$contents"
  done
  check "worker.env is root's only (0600)" grep -q '^-rw------- \./etc/boxcar/worker.env$' <<<"$contents"
  is "conffiles" "$(dpkg-deb -f "$deb" Package >/dev/null; dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" \
    "/etc/boxcar/worker.conf
/etc/boxcar/worker.env"

  # One installer at a time on this machine.
  exec {lockfd}>/run/lock/boxcar-deb-test.lock
  flock "$lockfd"
  if ! out=$(dpkg_locked dpkg -i "$deb"); then
    not_ok "dpkg -i installs the package"; diag "$out"
    dpkg_locked dpkg --purge boxcar >/dev/null; flock -u "$lockfd"; return
  fi
  ok "dpkg -i installs the package"
  is "the installed boxcar is this build" "$(/usr/bin/boxcar version)" "$("$BOXCAR" version)"
  check "the installed configuration sets nothing (all comments)" \
    bash -c "! grep -qvE '^[[:space:]]*(#|$)' /etc/boxcar/worker.conf"
  is "systemd-analyze verify on the installed unit: nothing at all" \
    "$(systemd-analyze verify /lib/systemd/system/boxcar-worker.service 2>&1)" ""
  check "man boxcar finds the page" bash -c "man -w boxcar >/dev/null"

  # A job with the installed binaries (boxcar finds boxcar-sandbox beside
  # it in /usr/bin), S3 settings from a configuration file, secrets from
  # the environment.
  eval "$("$BOXCAR_ROOT/scripts/s3.sh" env)"
  fresh_db ops_deb >/dev/null 2>&1
  cat > "$W/deb-worker.conf" <<CONF
# written by tests/ops/t_deb.sh
queues = debq
concurrency = 1
poll-interval = 500ms
s3-bucket = $BOXCAR_S3_BUCKET
s3-prefix = deb-$$
aws-endpoint-url-s3 = $AWS_ENDPOINT_URL_S3
aws-region = $AWS_REGION
CONF
  is "boxcar migrate (installed) is a no-op on a migrated database" \
    "$(/usr/bin/boxcar migrate >/dev/null 2>&1; echo $?)" 0
  mkdir -p "$BOXCAR_DEV/test-logs"
  env -u BOXCAR_S3_BUCKET -u BOXCAR_S3_PREFIX -u AWS_ENDPOINT_URL_S3 -u AWS_REGION \
    /usr/bin/boxcar worker --config "$W/deb-worker.conf" --worker-id deb-w \
    --work-dir "$BOXCAR_DEV/work/deb-w" > "$BOXCAR_DEV/test-logs/deb-w.log" 2>&1 &
  local wpid=$!
  _bg_pids+=("$wpid")
  local id
  id=$(/usr/bin/boxcar enqueue --queue debq --spec - <<<'{"script": "echo from-deb > out.txt; cat out.txt", "limits": {"memory_mb": 128, "disk_mb": 32, "timeout_s": 30}, "artifact": {"storage": "deb-art"}}')
  /usr/bin/boxcar status --wait --timeout 60s "$id" >/dev/null 2>&1
  is "the installed worker runs a job with a workspace, limits and an artifact" \
    "$(sql "select status || ' ' || (result->>'stdout') from boxcar.jobs where id = '$id'")" "succeeded from-deb"
  check "the artifact is in S3 (s3-bucket and endpoint from the file)" \
    bash -c "BOXCAR_S3_PREFIX=deb-$$ /usr/bin/boxcar storage ls deb-art | grep -q '\"is_head\": true'"
  kill -TERM "$wpid"; wait "$wpid" 2>/dev/null
  is "the installed worker drains and exits 0 on SIGTERM" "$?" 0
  # An unknown key stops the worker before it connects, naming file:line.
  printf 'concurrency = 2\nfrobnicate = 1\n' > "$W/bad.conf"
  out=$(/usr/bin/boxcar worker --config "$W/bad.conf" 2>&1); local rc=$?
  is "an unknown key: exit 2" "$rc" 2
  check "naming the file, the line and the key" grep -qF "$W/bad.conf:2: unknown key 'frobnicate'" <<<"$out"

  out=$(dpkg_locked dpkg --purge boxcar) || { not_ok "dpkg --purge boxcar"; diag "$out"; }
  local left=""
  for p in /usr/bin/boxcar /usr/bin/boxcar-sandbox /usr/bin/boxcar-guard /etc/boxcar /var/lib/boxcar \
           /lib/systemd/system/boxcar-worker.service /usr/lib/modules-load.d/boxcar.conf; do
    [[ -e $p ]] && left+="$p "
  done
  is "dpkg --purge leaves nothing behind" "$left" ""
  check "dpkg no longer knows the package" bash -c "! dpkg-query -W boxcar >/dev/null 2>&1"
  flock -u "$lockfd"
}
deb_test
