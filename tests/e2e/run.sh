#!/usr/bin/env bash
# End-to-end: real PostgreSQL, real worker processes, real jobs.  Each
# t_*.sh is one scenario with its own database, printing TAP lines.
# BOXCAR_T (`make test SUITES=e2e T=t_drain`) picks scenarios by name
# (tests/select.sh); --list prints the names.
#
# Most scenarios spend their time waiting (leases, retries, timeouts), so
# E2E_LANES of them (default 3) run at once, each into its own log, which
# is printed whole when it ends.  The ones that stop, freeze or restart the
# shared PostgreSQL, or count every sandbox cgroup on the host, run alone
# afterwards (SERIAL below).  E2E_LANES=1 runs everything one by one.
set -uo pipefail
cd "$(dirname "$0")"
source ../select.sh
source ../lanes.sh
names=()
for t in t_*.sh; do names+=("${t%.sh}"); done
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1
# pg.sh stop/start, SIGSTOP or `pg.sh listen` (a restart) on the shared
# server; the host's network namespaces named after its port; every
# boxcar-sandbox cgroup on the host.
SERIAL=" t_pg_restart t_db_freeze t_report_batch t_db_partition t_replicas_netns t_claim_unseen t_warm "
lanes=${E2E_LANES:-3}
[[ $lanes =~ ^[1-9][0-9]*$ ]] || { echo "not ok - E2E_LANES=$lanes is not a positive number"; exit 1; }

out=$(mktemp -d "${TMPDIR:-/tmp}/boxcar-e2e.XXXXXX")
trap 'rm -rf "$out"' EXIT
# One s3rver for every lane: scenarios that start it at the same moment
# would race to bind its port (RGW too, when the tests use it).
s3s=(s3.sh)
[[ ${BOXCAR_TEST_S3:-} == rgw ]] && s3s+=(rgw.sh)
for s3 in "${s3s[@]}"; do
  ../../scripts/$s3 start >/dev/null || echo "# scripts/$s3 start failed: the scenarios using it will say so"
done

rc=0
report() {  # report NAME: prints a finished scenario's log and time
  local t=$1
  echo "# $t.sh"
  cat "$out/$t.log"
  echo "# $t.sh: $(cat "$out/$t.time") s"
  [[ $(cat "$out/$t.rc") == 0 ]] || rc=1
}
run_one() {  # in the background: its own log, status and time
  local t=$1 s0=$SECONDS st
  bash "$t.sh" > "$out/$t.log" 2>&1; st=$?
  echo $((SECONDS - s0)) > "$out/$t.time"
  echo $st > "$out/$t.rc"
}

# The longest ones first (a few minutes each: images built by mmdebstrap,
# a Ceph cluster started), so that the run does not end waiting on one.
LONG=" t_images t_storage t_disk_budget t_basics t_ws_pool t_layered "
parallel=() alone=() rest=()
for t in $picked; do
  if [[ $SERIAL == *" $t "* || $lanes == 1 ]]; then alone+=("$t")
  elif [[ $LONG == *" $t "* ]]; then parallel+=("$t")
  else rest+=("$t"); fi
done
parallel+=("${rest[@]}")
LANE_DONE=report in_lanes "$lanes" run_one "${parallel[@]}"
for t in "${alone[@]}"; do
  run_one "$t"
  report "$t"
done
exit $rc
