#!/usr/bin/env bash
# The client libraries (clients/node, clients/python) against a real
# PostgreSQL and a real worker.  Each t_*.sh is one client's scenarios,
# printing TAP lines.  BOXCAR_T (`make test SUITES=clients T=t_node`) picks
# scripts by name (tests/select.sh); --list prints the names.
set -uo pipefail
cd "$(dirname "$0")"
source ../select.sh
names=()
for t in t_*.sh; do [[ -e $t ]] && names+=("${t%.sh}"); done
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
