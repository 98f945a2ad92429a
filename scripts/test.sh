#!/usr/bin/env bash
# Runs every test suite (or the ones named), even when one fails, and ends
# with one line over all of them: "N passed, N failed, N skipped".
# A suite is tests/<name>/run.sh printing TAP lines ("ok", "not ok",
# "# SKIP"); a suite that dies without reporting counts as one failure.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$BOXCAR_ROOT"

ALL_SUITES=(unit sql e2e security storage webhooks valgrind chaos ops docs fuzz vm)
suites=("$@")
[[ ${#suites[@]} -eq 0 ]] && suites=("${ALL_SUITES[@]}")

logdir="$BOXCAR_DEV/test-logs"
mkdir -p "$logdir"
scripts/pg.sh start || { echo "0 passed, 1 failed"; exit 1; }

passed=0 failed=0 skipped=0
for s in "${suites[@]}"; do
  runner="tests/$s/run.sh"
  if [[ ! -x $runner ]]; then
    # A suite named but missing is a failure, never a silent skip.
    echo "not ok - suite $s: $runner does not exist"
    failed=$((failed + 1))
    continue
  fi
  echo "=== suite $s"
  log="$logdir/$s.log"
  start=$(date +%s)
  "$runner" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # Count TAP results from every level of nesting (pg_prove indents).
  p=$(grep -cE '^[[:space:]]*ok [0-9]+' "$log" | head -1)
  sk=$(grep -cE '^[[:space:]]*ok [0-9]+.*# ?[Ss][Kk][Ii][Pp]' "$log" | head -1)
  f=$(grep -cE '^[[:space:]]*not ok [0-9]+' "$log" | head -1)
  p=$((p - sk))
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    echo "not ok - suite $s exited with status $rc without reporting a failure"
    f=1
  fi
  echo "=== suite $s: $p passed, $f failed, $sk skipped ($(( $(date +%s) - start ))s)"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + sk))
done

echo
if [[ $skipped -gt 0 ]]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[[ $failed -eq 0 ]]
