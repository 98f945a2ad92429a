#!/usr/bin/env bash
# Runs the cmocka unit tests with TAP output: each
# tests/unit/<library>/[<room>/]test_<name>.c is the executable
# $BOXCAR_BUILD/tests/unit/<same path> (the Makefile builds them, linked
# against that library's tree).  A test named by its path, e.g.
# worker/exec/test_proc, or its base name (test_proc): BOXCAR_T, `make test
# SUITES=unit T=test_proc` (tests/select.sh); --list prints the names.  A
# test whose executable is missing is a failure, not a skip.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/select.sh
names=()
while IFS= read -r src; do
  n=${src#tests/unit/}; names+=("${n%.c}")
done < <(find tests/unit -mindepth 2 -name 'test_*.c' | LC_ALL=C sort)
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1
rc=0
for n in $picked; do
  t="${BOXCAR_BUILD:-build}/tests/unit/$n"
  echo "# $t"
  if [[ ! -x $t ]]; then
    echo "not ok 1 - $n: $t is not built (make unit-tests)"; rc=1; continue
  fi
  CMOCKA_MESSAGE_OUTPUT=TAP "$t" || rc=1
done
exit $rc
