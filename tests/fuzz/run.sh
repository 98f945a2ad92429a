#!/usr/bin/env bash
# Runs every libFuzzer harness (tests/fuzz/fuzz_*.c) for FUZZ_SECONDS each
# (default 10 here, `make fuzz` passes 60), printing one TAP line per
# harness with its execution count.  Seeds: tests/fuzz/corpus/<name>/ plus
# generated ones (the malformed-spec corpus, the hostile archives).  New
# inputs and crash reproducers go under $BOXCAR_DEV/fuzz/, never into the
# repository.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"
: "${FUZZ_SECONDS:=10}"
FB=build-fuzz
work="$BOXCAR_DEV/fuzz"
mkdir -p "$work"

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

for bin in "$FB"/fuzz/fuzz_*; do
  [[ $bin == *.d || ! -x $bin ]] && continue
  name=${bin##*/fuzz_}
  corpus="$work/corpus/$name"; crashes="$work/crashes/$name"
  mkdir -p "$corpus" "$crashes"
  dirs=("$corpus")
  [[ -d tests/fuzz/corpus/$name ]] && dirs+=("tests/fuzz/corpus/$name")
  [[ -d $seeds/$name ]] && dirs+=("$seeds/$name")
  log="$work/$name.log"
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$crashes/" "${dirs[@]}" > "$log" 2>&1
  rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
  if [[ $rc -eq 0 ]]; then
    ok "fuzz $name: ${runs:-0} executions in ${FUZZ_SECONDS}s, no crash"
  else
    not_ok "fuzz $name: crashed (exit $rc); reproducer in $crashes, log $log"
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 | sed 's/^/# /'
  fi
done

# The spec corpus as it grew above, through both validators.
fresh_db fuzz_spec_diff > /dev/null 2>&1
out=$(python3 tests/fuzz/spec_diff.py "$FB/fuzz/spec-check" "$DATABASE_URL" \
        "$work/corpus/spec" tests/fuzz/corpus/spec "$seeds/spec" 2>&1)
rc=$?
grep '^#' <<<"$out"
desc=$(grep -E '^(not )?ok 1 - ' <<<"$out" | sed -E 's/^(not )?ok 1 - //')
if [[ $rc -eq 0 ]]; then ok "$desc"; else not_ok "${desc:-spec_diff.py failed: $out}"; fi
tap_done
