# Picking single tests: `make test SUITES=e2e T=t_drain` runs one script.
# Sourced by scripts/test.sh and by each tests/<suite>/run.sh; sets no
# trap and runs nothing.
#
# BOXCAR_T holds the names asked for (make's T=, space-separated).  A
# suite's tests have names (`tests/<suite>/run.sh --list` prints them: a
# file's base name without extension, e.g. t_drain, 01_enqueue,
# worker/exec/test_proc); a word of BOXCAR_T names a test when it is that
# name, its last component (test_proc), or either with the file's
# extension or a leading tests/<suite>/ (tests/e2e/t_drain.sh).  A run.sh
# runs the tests BOXCAR_T names (all when it is empty) and ignores words
# that name none of its own: they may be another suite's.  scripts/test.sh
# fails a word that names no test of the suites asked for.

# t_names_test WORD NAME: WORD names the test NAME.
t_names_test() {
  local w=$1 name=$2
  [[ $w == tests/*/* ]] && w=${w#tests/*/}
  w=${w%.sh}; w=${w%.sql}; w=${w%.c}; w=${w%.py}
  [[ $w == "$name" || $w == "${name##*/}" || ( $w == */* && $name == */"$w" ) ]]
}

# t_selected NAME: NAME is to run (BOXCAR_T is empty or names it).
t_selected() {
  [[ -z ${BOXCAR_T:-} ]] && return 0
  local w
  for w in $BOXCAR_T; do
    t_names_test "$w" "$1" && return 0
  done
  return 1
}

# t_pick NAME...: prints the NAMEs BOXCAR_T selects, one a line (all of
# them when it is empty).  With BOXCAR_T set and none of them named, says
# so as a failed TAP line and returns 1: a suite run with a T= that
# matches nothing must not pass silently (the line goes to stderr, out
# of the caller's $(...)).
t_pick() {
  local n picked=0
  for n in "$@"; do
    if t_selected "$n"; then printf '%s\n' "$n"; picked=1; fi
  done
  [[ $picked == 1 || -z ${BOXCAR_T:-} ]] && return 0
  echo "not ok 1 - T='$BOXCAR_T' names no test of this suite ($0 --list shows them)" >&2
  return 1
}
