#!/usr/bin/env bash
# Webhooks end to end: real workers deliver to a real HTTP receiver
# (receiver.py) that checks every signature with its own code.  BOXCAR_T
# (`make test SUITES=webhooks T=t_load`) picks scripts by name
# (tests/select.sh); --list prints the names.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
cd "$BOXCAR_ROOT"
names=(test_receiver_selftest t_delivery t_recorded t_scopes t_load)
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1
for t in $picked; do
  s0=$SECONDS
  bash "tests/webhooks/$t.sh"
  echo "# $t: $((SECONDS - s0)) s"
done
