#!/usr/bin/env bash
# Chaos at scale (chaos.sh), twice: CHAOS_JOBS jobs (10,000 here; `make
# chaos` runs 100,000) over 4 workers without sandboxes, and 2,000 (or
# CHAOS_SANDBOX_JOBS) over 4 workers running every job in a sandbox; both
# under SIGKILLs every few seconds, a PostgreSQL restart, S3 down for 30 s
# and the webhook receiver down for a minute; nothing lost, nothing run or
# delivered twice, and nothing left by the sandboxes.  The two run at once
# (below), about 4 minutes.
# BOXCAR_T (`make chaos T=namespace`) runs one of the two: none, namespace
# (tests/select.sh).
set -uo pipefail
cd "$(dirname "$0")"
source ../select.sh
[[ ${1:-} == --list ]] && { printf '%s\n' none namespace; exit 0; }
t_pick none namespace >/dev/null || exit 1
label() { sed -u -E "s/^((not )?ok [0-9]+ - )/\1[$1] /"; }
rc=0
namespace_run() { CHAOS_SANDBOX=namespace CHAOS_JOBS=${CHAOS_SANDBOX_JOBS:-2000} bash chaos.sh; }
if t_selected none && t_selected namespace && [[ ${CHAOS_SERIAL:-0} != 1 ]]; then
  # Both at once (each spends most of its time waiting out the webhook
  # receiver's minute down and the retries after it): the sandboxed one
  # against a PostgreSQL cluster and an s3rver of its own, under
  # $BOXCAR_DEV/chaos-namespace, so that each run's restarts, freezes and
  # S3 outage are its own.  CHAOS_SERIAL=1 runs them one after the other.
  source ../../scripts/env.sh
  ns_dev="$BOXCAR_DEV/chaos-namespace"
  mkdir -p "$ns_dev" && chmod 755 "$ns_dev"   # initdb runs as postgres
  ns_log="$ns_dev/chaos.log"
  (
    export BOXCAR_DEV=$ns_dev BOXCAR_PG_PORT BOXCAR_S3_PORT
    BOXCAR_PG_PORT=$(free_port); BOXCAR_S3_PORT=$(free_port)
    while [[ $BOXCAR_S3_PORT == "$BOXCAR_PG_PORT" ]]; do BOXCAR_S3_PORT=$(free_port); done
    if ../../scripts/pg.sh start >/dev/null; then
      namespace_run; st=$?
    else
      echo "not ok 1 - a PostgreSQL cluster of its own on port $BOXCAR_PG_PORT (scripts/pg.sh start)"; st=1
    fi
    ../../scripts/s3.sh stop; ../../scripts/pg.sh stop >/dev/null
    rm -rf "$ns_dev/pg" "$ns_dev/s3"
    exit $st
  ) > "$ns_log" 2>&1 &
  ns_pid=$!
  bash chaos.sh | label none || rc=1
  wait "$ns_pid" || rc=1
  label namespace < "$ns_log"
else
  if t_selected none; then
    bash chaos.sh | label none || rc=1
  fi
  if t_selected namespace; then
    namespace_run | label namespace || rc=1
  fi
fi
exit $rc
