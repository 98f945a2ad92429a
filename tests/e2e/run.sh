#!/usr/bin/env bash
# End-to-end: real PostgreSQL, real worker processes, real jobs.  Each
# t_*.sh is one scenario with its own database, printing TAP lines.
# BOXCAR_T (`make test SUITES=e2e T=t_drain`) picks scenarios by name
# (tests/select.sh); --list prints the names.
set -uo pipefail
cd "$(dirname "$0")"
source ../select.sh
names=()
for t in t_*.sh; do names+=("${t%.sh}"); done
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1
rc=0
for t in $picked; do
  echo "# $t.sh"
  s0=$SECONDS
  bash "$t.sh" || rc=1
  echo "# $t.sh: $((SECONDS - s0)) s"
done
exit $rc
