#!/usr/bin/env bash
# The C sources clang-format owns (.clang-format), in one list for `make
# format`, `make lint` and the lint suite: every .c and .h under common/,
# sandbox/, storage/, worker/, agent/ and tests/unit/, but generated files.
#
#   scripts/format.sh list    prints them, one a line
#   scripts/format.sh check   clang-format --dry-run -Werror over them;
#                             when some would change, says which, how many
#                             of their lines, and the start of the diff
#   scripts/format.sh fix     formats them in place (`make format`)
set -euo pipefail
cd "$(dirname "$0")/.."

# Generated, rewritten whole by their generator: not formatted by hand.
GENERATED=(tests/unit/storage/sigv4_vectors.h)   # tests/storage/gen_vectors.py

list() {
  find common sandbox storage worker agent tests/unit -name '*.[ch]' -type f | LC_ALL=C sort |
    grep -vxF -f <(printf '%s\n' "${GENERATED[@]}")
}

need_clang_format() {
  command -v clang-format >/dev/null ||
    { echo "format.sh: clang-format is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
}

# changed_lines FILE: how many of FILE's lines clang-format would change.
changed_lines() { clang-format --style=file "$1" | diff "$1" - | grep -c '^<' || true; }

check() {
  need_clang_format
  local files; mapfile -t files < <(list)
  if printf '%s\0' "${files[@]}" |
       xargs -0 -P2 -n 32 clang-format --style=file --dry-run -Werror --ferror-limit=1 >/dev/null 2>&1; then
    echo "clang-format: the ${#files[@]} C sources are formatted"
    return 0
  fi
  local f n total=0 nfiles=0 report=""
  for f in "${files[@]}"; do
    n=$(changed_lines "$f")
    [[ $n -gt 0 ]] || continue
    total=$((total + n)) nfiles=$((nfiles + 1))
    report+="$n $f"$'\n'
  done
  echo "clang-format: $total lines in $nfiles of the ${#files[@]} C sources would change (make format changes them):"
  sort -rn <<<"${report%$'\n'}" | head -15 | awk '{printf "  %-50s %5d lines\n", $2, $1}'
  [[ $nfiles -gt 15 ]] && echo "  ... and $((nfiles - 15)) more files"
  f=$(sort -rn <<<"${report%$'\n'}" | head -1 | cut -d' ' -f2)
  echo "the start of the diff for $f:"
  clang-format --style=file "$f" | diff -u "$f" - | sed -n '3,25p' | sed 's/^/  /'
  return 1
}

case "${1:-}" in
  list) list ;;
  check) check ;;
  fix) need_clang_format; list | xargs -d '\n' clang-format --style=file -i ;;
  *) echo "usage: $0 list|check|fix" >&2; exit 2 ;;
esac
