#!/usr/bin/env bash
# Lint suite: the tree keeps its own rules, checked in seconds and without
# PostgreSQL or a build.  One TAP line per rule, each failure listing what
# breaks it:
#   format       the C sources are clang-format clean (scripts/format.sh
#                check; `make format` fixes them)
#   includes     no #include reaches past another library's public header
#                (the layering: common <- sandbox, storage <- worker;
#                common <- agent, which nothing includes)
#   guards       every header guard is named after its path
#   readmes      every room of worker/ has a README.md
#   sizes        no .c/.h over 600 lines unless its first comment says
#                why ("Size: ...")
#   sql_numbers  each tests/sql file has a number of its own (run order)
#   cppcheck     `make cppcheck` finds nothing (about 10 s)
# clang-tidy takes about 5 minutes of a CPU: `make lint` runs it.  BOXCAR_T
# (`make test SUITES=lint T=guards`) picks checks (tests/select.sh).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
cd "$BOXCAR_ROOT"
names=(format includes guards readmes sizes sql_numbers cppcheck)
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1

LIBS=(common sandbox storage worker agent)
# A library's public headers: what the layers above it may include.  Every
# other header of sandbox/ and storage/ says "Internal" (storage/s3.h,
# sigv4.h, http.h, fsutil.h, creds.h, aws_config.h, extract.h, gzpipe.h)
# or is a *-internal.h: the library's own business.
PUBLIC_SANDBOX=(sandbox/sandbox.h)
PUBLIC_STORAGE=(storage/storage.h)

# report DESC VIOLATIONS: ok when VIOLATIONS is empty, else not ok with
# the first 30 of them.
report() {
  if [[ -z $2 ]]; then ok "$1"; return; fi
  not_ok "$1: $(wc -l <<<"$2") to fix"
  head -30 <<<"$2" | sed 's/^/#   /'
  [[ $(wc -l <<<"$2") -le 30 ]] || diag "  ..."
}

c_files() { find "${LIBS[@]}" -name '*.[ch]' -type f | LC_ALL=C sort; }

# ---- format -------------------------------------------------------------------
check_format() {
  local out
  if ! command -v clang-format >/dev/null; then
    not_ok "the C sources are clang-format clean: clang-format is not installed (scripts/deps.sh)"
  elif out=$(scripts/format.sh check 2>&1); then
    ok "the C sources are clang-format clean ($(scripts/format.sh list | wc -l) files)"
  else
    not_ok "the C sources are clang-format clean (.clang-format)"
    sed 's/^/# /' <<<"$out"
  fi
}

# ---- includes -------------------------------------------------------------------
# included FILE...: "file:line: header" for each #include "..." of ours.
included() {
  grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$@" /dev/null |
    sed -E 's/^([^:]+:[0-9]+):.*"([^"]+)".*/\1: \2/'
}
check_includes() {
  local pub_sb pub_st bad
  pub_sb=$(printf '%s|' "${PUBLIC_SANDBOX[@]}"); pub_sb=${pub_sb%|}
  pub_st=$(printf '%s|' "${PUBLIC_STORAGE[@]}"); pub_st=${pub_st%|}
  bad=$( {
    # worker/: the other libraries through their public headers only.
    included $(find worker -name '*.[ch]') |
      grep -E ': (sandbox|storage)/' | grep -vE ": ($pub_sb|$pub_st)$" | sed 's/$/  (not a public header)/'
    # sandbox/ and storage/: never the worker, never each other (the
    # build's generated version.h is everyone's).
    included $(find sandbox -name '*.[ch]') | grep -vE ': (common/|sandbox/|version\.h$)' |
      sed 's/$/  (sandbox\/ includes only common\/ and itself)/'
    included $(find storage -name '*.[ch]') | grep -vE ': (common/|storage/|version\.h$)' |
      sed 's/$/  (storage\/ includes only common\/ and itself)/'
    # agent/: a program of its own, static, in the sandbox: only common/
    # (what links without curl or cJSON) and itself; nothing includes it.
    included $(find agent -name '*.[ch]') | grep -vE ': (common/|agent/)' |
      sed 's/$/  (agent\/ includes only common\/ and itself)/'
    included $(find common sandbox storage worker -name '*.[ch]') | grep -E ': agent/' |
      sed 's/$/  (nothing outside agent\/ includes it)/'
    # common/: only itself.
    included $(find common -name '*.[ch]') | grep -vE ': common/' | sed 's/$/  (common\/ includes only common\/)/'
  } )
  report "no #include reaches past a library's public header (${PUBLIC_SANDBOX[*]} ${PUBLIC_STORAGE[*]}) or up a layer" "$bad"
}

# ---- header guards ----------------------------------------------------------------
# worker/exec/proc.h -> BC_WORKER_EXEC_PROC_H: the first #ifndef, and the
# #define right after it.
check_guards() {
  local h want got bad="" n=0
  while IFS= read -r h; do
    n=$((n + 1))
    want=BC_$(tr 'a-z/.-' 'A-Z___' <<<"$h")
    got=$(awk '/^#[[:space:]]*ifndef[[:space:]]/ { g = $2; getline; if ($1 == "#define" && $2 == g) print g; else print "(no #define " g " after it)"; exit }' "$h")
    [[ $got == "$want" ]] || bad+="$h: guard ${got:-(none)}, want $want"$'\n'
  done < <(c_files | grep '\.h$')
  report "every header guard is named after its path, BC_<PATH>_H ($n headers)" "${bad%$'\n'}"
}

# ---- room READMEs -------------------------------------------------------------------
check_readmes() {
  local d bad="" n=0
  for d in worker/*/; do
    n=$((n + 1))
    [[ -s ${d}README.md ]] || bad+="${d%/}: no README.md (what the room owns and must not touch)"$'\n'
  done
  report "every room of worker/ has a README.md ($n rooms)" "${bad%$'\n'}"
}

# ---- file sizes -------------------------------------------------------------------------
# The first comment block: from the first line holding "/*" to its "*/".
check_sizes() {
  local f n bad=""
  while IFS= read -r f; do
    n=$(wc -l < "$f")
    [[ $n -gt 600 ]] || continue
    awk '/\/\*/ { c = 1 } c { print } c && /\*\// { exit }' "$f" | grep -q 'Size:' && continue
    bad+="$f: $n lines, and its first comment gives no \"Size:\" reason"$'\n'
  done < <(c_files)
  report "no .c/.h over 600 lines without a \"Size:\" reason in its first comment" "${bad%$'\n'}"
}

# ---- tests/sql numbers ------------------------------------------------------------------
check_sql_numbers() {
  local dup
  dup=$(ls tests/sql | grep -oE '^[0-9]+_' | sort | uniq -d | while read -r p; do
          echo "tests/sql: $(cd tests/sql && echo ${p}*.sql) share ${p%_}"; done)
  report "each tests/sql file has a number of its own" "$dup"
}

# ---- cppcheck ----------------------------------------------------------------------------
check_cppcheck() {
  local out
  if ! command -v cppcheck >/dev/null; then
    not_ok "cppcheck finds nothing: cppcheck is not installed (scripts/deps.sh)"
  elif out=$(make --no-print-directory -s cppcheck 2>&1); then
    ok "cppcheck finds nothing (make cppcheck)"
  else
    # Errors and warnings first, then the rest (portability notes).
    local found
    found=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: [a-z]+: ' <<<"$out" | grep -v ': note: ' | awk '{ print ($2 ~ /^(error|warning):$/ ? 0 : 1) "\t" $0 }' |
              sort -s -t$'\t' -k1,1 | cut -f2-)
    report "cppcheck finds nothing (make cppcheck)" "${found:-$out}"
  fi
}

for c in $picked; do
  "check_$c"
done
tap_done
