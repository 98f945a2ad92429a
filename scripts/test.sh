#!/usr/bin/env bash
# Runs every test suite (or the ones named), even when one fails, and ends
# with one line over all of them: "N passed, N failed, N skipped".
# A suite is tests/<name>/run.sh printing TAP lines ("ok", "not ok",
# "# SKIP"); a suite that dies without reporting counts as one failure.
# BOXCAR_T (make's T=) names single tests: each suite runs only those of
# its own it names (tests/select.sh), a suite it names none of is not run,
# and a name that is no test of any suite asked for is a failure.
set -uo pipefail
source "$(dirname "$0")/env.sh"
cd "$BOXCAR_ROOT"
source tests/select.sh

ALL_SUITES=(unit sql e2e security storage webhooks clients valgrind chaos ops docs lint fuzz vm)
# Suites that never touch PostgreSQL: asked for alone, no server is started.
NO_PG_SUITES=" unit lint "
suites=("$@")
[[ ${#suites[@]} -eq 0 ]] && suites=("${ALL_SUITES[@]}")

passed=0 failed=0 skipped=0
read -ra t_words <<<"${BOXCAR_T:-}"
export BOXCAR_T="${t_words[*]}"
if [[ -n $BOXCAR_T ]]; then
  # A suite's test names come from `run.sh --list`; a runner that does not
  # take --list has none to pick (and must not be run to ask).
  declare -A named=()
  picked=()
  for s in "${suites[@]}"; do
    runner="tests/$s/run.sh"
    [[ -x $runner ]] || { picked+=("$s"); continue; }   # reported missing below
    grep -q -- '--list' "$runner" || continue
    hit=0
    for n in $("$runner" --list); do
      for w in $BOXCAR_T; do
        t_names_test "$w" "$n" && { named[$w]=1; hit=1; }
      done
    done
    [[ $hit == 1 ]] && picked+=("$s")
  done
  for w in $BOXCAR_T; do
    [[ -n ${named[$w]:-} ]] && continue
    echo "not ok - T=$w names no test of suite(s) ${suites[*]} (tests/<suite>/run.sh --list prints their names)"
    failed=$((failed + 1))
  done
  suites=("${picked[@]}")
fi

suite_limit=${BOXCAR_SUITE_TIMEOUT:-1800}
logdir="$BOXCAR_DEV/test-logs"
mkdir -p "$logdir"
# Under SAN=1 every sanitizer report goes to a file of its own, and a
# suite during which one was written fails: most processes a test starts
# are stopped by it without their exit status read (a worker's
# LeakSanitizer report at exit was only a line in its log).
san_dir=""
if [[ ${SAN:-0} == 1 ]]; then
  san_dir="$logdir/sanitizer"
  rm -rf "$san_dir"
  # Any uid may write there: a test's worker or helper may run as another.
  mkdir -p "$san_dir/new" && chmod 1777 "$san_dir/new"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$san_dir/new/asan"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$san_dir/new/ubsan:print_stacktrace=1"
fi
# sanitizer_reports SUITE: prints the reports written during SUITE (files
# that say only a warning are not reports), keeps them under the suite's
# name and prints how many there were.
sanitizer_reports() {
  local n=0 f
  mkdir -p "$san_dir/$1"
  for f in "$san_dir"/new/*; do
    [[ -e $f ]] || continue
    if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Leak|UndefinedBehavior)Sanitizer' "$f"; then
      n=$((n + 1))
      echo "# sanitizer report $f:" >&2
      head -40 "$f" | sed 's/^/#   /' >&2
    fi
    mv "$f" "$san_dir/$1/"
  done
  echo "$n"
}
for s in "${suites[@]}"; do
  if [[ $NO_PG_SUITES != *" $s "* ]]; then
    scripts/pg.sh start || { echo "$passed passed, $((failed + 1)) failed"; exit 1; }
    break
  fi
done

# The ops suite's container images take minutes to build on a machine
# without them (mmdebstrap, apt, a compile: mostly waiting on the mirror),
# so the build starts now, beside the suites before ops; t_compose's own
# scripts/image.sh stack waits for it (a lock) and finds them built.
prefetch=""
if [[ " ${suites[*]} " == *" ops "* && ( -z $BOXCAR_T || " $BOXCAR_T " == *" t_compose "* ) && $(id -u) == 0 ]] &&
   command -v podman >/dev/null && command -v mmdebstrap >/dev/null; then
  scripts/image.sh stack > "$logdir/image-prefetch.log" 2>&1 < /dev/null &
  prefetch=$!
fi

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
  # A suite that hangs is stopped (its process group) and counted as a
  # failure, so the suites after it still run and the summary still comes.
  timeout -k 30 "$suite_limit" "$runner" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # Count TAP results from every level of nesting (pg_prove indents).
  p=$(grep -cE '^[[:space:]]*ok [0-9]+' "$log" | head -1)
  sk=$(grep -cE '^[[:space:]]*ok [0-9]+.*# ?[Ss][Kk][Ii][Pp]' "$log" | head -1)
  f=$(grep -cE '^[[:space:]]*not ok [0-9]+' "$log" | head -1)
  p=$((p - sk))
  if [[ $rc -ne 0 && $(( $(date +%s) - start )) -ge $suite_limit ]]; then
    echo "not ok - suite $s did not finish within BOXCAR_SUITE_TIMEOUT=${suite_limit}s: stopped"
    f=$((f + 1))
  elif [[ $rc -ne 0 && $f -eq 0 ]]; then
    echo "not ok - suite $s exited with status $rc without reporting a failure"
    f=1
  fi
  if [[ -n $san_dir ]]; then
    reports=$(sanitizer_reports "$s")
    if [[ $reports -gt 0 ]]; then
      echo "not ok - suite $s: $reports sanitizer report(s), kept in $san_dir/$s"
      f=$((f + 1))
    fi
  fi
  echo "=== suite $s: $p passed, $f failed, $sk skipped ($(( $(date +%s) - start ))s)"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + sk))
done

# A build still running (ops failed to start, say) is not left behind.
[[ -n $prefetch ]] && wait "$prefetch"
echo
if [[ $skipped -gt 0 ]]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[[ $failed -eq 0 ]]
