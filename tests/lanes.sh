# Sourced by the suites that run their tests side by side (e2e, valgrind,
# fuzz).
#
# in_lanes N FUNC ITEM...: FUNC ITEM in the background for each ITEM, at
# most N at once, in the order given; returns once all have ended.  With
# LANE_DONE set to a function's name, that function is called with the
# ITEM in this shell as soon as each one ends (the e2e suite prints its
# log then).
in_lanes() {
  local n=$1 func=$2 item done_pid
  shift 2
  local -A item_of=()
  for item in "$@"; do
    while (( ${#item_of[@]} >= n )); do
      wait -n -p done_pid "${!item_of[@]}"
      ${LANE_DONE:-:} "${item_of[$done_pid]}"
      unset "item_of[$done_pid]"
    done
    "$func" "$item" &
    item_of[$!]=$item
  done
  while (( ${#item_of[@]} > 0 )); do
    wait -n -p done_pid "${!item_of[@]}"
    ${LANE_DONE:-:} "${item_of[$done_pid]}"
    unset "item_of[$done_pid]"
  done
}
