#!/usr/bin/env bash
# Runs every cmocka unit test binary with TAP output.
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
for t in "${BOXCAR_BUILD:-build}"/tests/test_*; do
  [[ -x $t ]] || continue
  echo "# $t"
  CMOCKA_MESSAGE_OUTPUT=TAP "$t" || rc=1
done
exit $rc
