#!/usr/bin/env bash
# Runs every libFuzzer harness (tests/fuzz/fuzz_*.c) for FUZZ_SECONDS each
# (default 10 here, `make fuzz` passes 60), printing one TAP line per
# harness with its execution count.  Seeds: tests/fuzz/corpus/<name>/ plus
# generated ones (the malformed-spec corpus, the hostile archives).  New
# inputs and crash reproducers go under $BOXCAR_DEV/fuzz/, never into the
# repository.  Last, the SQL/C differential check of the spec validators
# (spec_diff.py) over the spec corpus, against a database of the local
# PostgreSQL (BOXCAR_PG_PORT), which this starts when it is not running
# (and stops again after).  BOXCAR_T (`make fuzz T=fuzz_spec`) picks
# harnesses, and spec_diff, by name (tests/select.sh).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
source "$(dirname "$0")/../lanes.sh"
cd "$BOXCAR_ROOT"
names=()
for f in tests/fuzz/fuzz_*.c; do n=${f##*/}; names+=("${n%.c}"); done
names+=(spec_diff)
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1
: "${FUZZ_SECONDS:=10}"
FB=build-fuzz
work="$BOXCAR_DEV/fuzz"
mkdir -p "$work"
started_pg=0
trap 'cleanup_bg; [[ $started_pg == 0 ]] || scripts/pg.sh stop' EXIT

if ! make --no-print-directory -j2 SAN=fuzz BUILD=$FB fuzz-bins > "$work/build.log" 2>&1; then
  not_ok "build the fuzz harnesses with clang (see $work/build.log)"
  tail -20 "$work/build.log" | sed 's/^/# /'
  tap_done; exit 1
fi

# Generated seeds.
seeds="$work/seeds"; rm -rf "$seeds"; mkdir -p "$seeds/spec" "$seeds/extract/sentinel"
python3 - tests/data/bad_specs.tsv "$seeds/spec" <<'PY'
import sys, os
for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
    if line.startswith("#") or "\t" not in line:
        continue
    open(os.path.join(sys.argv[2], "bad%03d.json" % i), "w", encoding="utf-8").write(line.split("\t", 1)[1].rstrip("\n"))
PY
echo orig > "$seeds/extract/sentinel/file"
python3 tests/storage/gen_hostile.py "$seeds/extract" "$seeds/extract/sentinel" > /dev/null
rm -rf "$seeds/extract/sentinel"
mkdir -p "$seeds/extract/ok/d"; echo hello > "$seeds/extract/ok/d/f"
tar -C "$seeds/extract/ok" -czf "$seeds/extract/ok.tgz" . && rm -rf "$seeds/extract/ok"

# One harness per CPU at once (each runs on one thread), FUZZ_LANES to
# change it; the results are read in order once all have run.
fuzz_one() {  # fuzz_one HARNESS: its log in $work/NAME.log, status in $work/NAME.rc
  local h=$1 name=${1#fuzz_} corpus crashes dirs
  corpus="$work/corpus/$name"; crashes="$work/crashes/$name"
  mkdir -p "$corpus" "$crashes"
  dirs=("$corpus")
  [[ -d tests/fuzz/corpus/$name ]] && dirs+=("tests/fuzz/corpus/$name")
  [[ -d $seeds/$name ]] && dirs+=("$seeds/$name")
  ASAN_OPTIONS=detect_leaks=1 "$FB/fuzz/$h" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" "${dirs[@]}" > "$work/$name.log" 2>&1
  echo $? > "$work/$name.rc"
}
harnesses=()
for h in $picked; do [[ $h == spec_diff ]] || harnesses+=("$h"); done
in_lanes "${FUZZ_LANES:-$(nproc)}" fuzz_one "${harnesses[@]}"
for h in "${harnesses[@]}"; do
  name=${h#fuzz_}
  log="$work/$name.log" crashes="$work/crashes/$name"
  rc=$(cat "$work/$name.rc" 2>/dev/null || echo "none")
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  if [[ $rc == 0 ]]; then
    ok "fuzz $name: ${runs:-0} executions in ${FUZZ_SECONDS}s, no crash"
  else
    not_ok "fuzz $name: crashed (exit $rc); reproducer in $crashes, log $log"
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 | sed 's/^/# /'
  fi
done

# The spec corpus as it grew above, through both validators: the SQL one
# on a migrated database ($BOXCAR, the plain build, migrates it).
grep -qx spec_diff <<<"$picked" || { tap_done; exit; }
if ! scripts/pg.sh status >/dev/null 2>&1; then
  started_pg=1
  scripts/pg.sh start || { not_ok "start PostgreSQL for spec_diff (scripts/pg.sh start)"; tap_done; exit 1; }
fi
build=${BOXCAR_BUILD:-build}
if ! make --no-print-directory -s SAN="${SAN:-0}" BUILD="$build" "$build/boxcar" >> "$work/build.log" 2>&1; then
  not_ok "build $build/boxcar for spec_diff (see $work/build.log)"; tap_done; exit 1
fi
if ! fresh_db fuzz_spec_diff > "$work/spec_diff-db.log" 2>&1; then
  not_ok "a migrated database for spec_diff (see $work/spec_diff-db.log)"; tap_done; exit 1
fi
out=$(python3 tests/fuzz/spec_diff.py "$FB/fuzz/spec-check" "$DATABASE_URL" \
        "$work/corpus/spec" tests/fuzz/corpus/spec "$seeds/spec" 2>&1)
rc=$?
grep '^#' <<<"$out"
desc=$(grep -E '^(not )?ok 1 - ' <<<"$out" | sed -E 's/^(not )?ok 1 - //')
if [[ $rc -eq 0 ]]; then ok "$desc"; else not_ok "${desc:-spec_diff.py failed: $out}"; fi
tap_done
