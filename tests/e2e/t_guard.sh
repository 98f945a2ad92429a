# --sandbox none: each job runs under build/boxcar-guard, started with
# posix_spawn (no fork of the worker), and ends as its command ended.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_guard
start_worker guard-a --queues guard --concurrency 2 --sandbox none --poll-interval 500ms
enq() { "$BOXCAR" enqueue --queue guard -- "$@"; }
parent_id=$(enq sh -c 'cat /proc/$PPID/comm; echo cwd=$(pwd)')
exit_id=$(enq sh -c 'exit 3')
sig_id=$(enq sh -c 'kill -SEGV $$')
missing_id=$(enq no-such-command-xyz)
fds_id=$(enq ls -l /proc/self/fd)
sigstate_id=$(enq grep -E '^Sig(Blk|Ign):' /proc/self/status)
for id in "$parent_id" "$exit_id" "$sig_id" "$missing_id" "$fds_id" "$sigstate_id"; do
  "$BOXCAR" status --wait "$id" >/dev/null 2>&1 || true
done
is "the job's parent is boxcar-guard" "$(job_field "$parent_id" "split_part(result->>'stdout', e'\n', 1)")" "boxcar-guard"
check "it runs in the job's workspace" bash -c "[[ '$(job_field "$parent_id" "split_part(result->>'stdout', e'\n', 2)")' == cwd=*/workspace* ]]"
is "an exit code comes through the guard" "$(job_field "$exit_id" "status || ':' || (result->>'exit_code')")" "failed:3"
is "a signal comes through the guard" "$(job_field "$sig_id" "(result->>'signal') || ':' || (result->>'exit_code')")" "11:139"
is "a missing command is 127" "$(job_field "$missing_id" "result->>'exit_code'")" "127"
# The command's own descriptors, listed by ls itself (no shell: a shell's
# pipeline holds pipe ends for a moment, which a count would race with).
# Beyond 0-2 only the directory ls opened to list them may be there.
fd_lines=$(job_field "$fds_id" "result->>'stdout'" | grep -- ' -> ')
foreign=$(awk '{ fd = $(NF-2); t = $NF } fd > 2 && t !~ "^/proc/[0-9]+/fd$" { print fd " -> " t }' <<<"$fd_lines")
is "the job has stdin, stdout and stderr" "$(awk '$(NF-2) <= 2' <<<"$fd_lines" | wc -l)" 3
is "the job inherits no descriptor of the worker" "$foreign" ""
is "the job starts with no signal blocked or ignored" \
   "$(job_field "$sigstate_id" "result->>'stdout'" | tr -s '\t\n' '  ')" \
   "SigBlk: 0000000000000000 SigIgn: 0000000000000000 "
# Without boxcar-guard next to the executable, the worker forks a guard of
# its own: slower, the same behaviour.
alone=$(mktemp -d); trap 'cleanup_bg; rm -rf "$alone"' EXIT
cp "$BOXCAR" "$alone/boxcar"
"$alone/boxcar" worker --worker-id guard-b --queues guard-b --sandbox none --poll-interval 500ms \
  --work-dir "$BOXCAR_DEV/work/guard-b" >"$BOXCAR_DEV/test-logs/guard-b.log" 2>&1 &
_bg_pids+=($!)
fb_id=$("$BOXCAR" enqueue --queue guard-b -- sh -c 'cat /proc/$PPID/comm; exit 4')
fb_sig_id=$("$BOXCAR" enqueue --queue guard-b -- grep -E '^Sig(Blk|Ign):' /proc/self/status)
"$BOXCAR" status --wait "$fb_id" >/dev/null 2>&1 || true
"$BOXCAR" status --wait "$fb_sig_id" >/dev/null 2>&1 || true
is "without boxcar-guard the guard is a fork of the worker, and the exit code comes through" \
   "$(job_field "$fb_id" "split_part(result->>'stdout', e'\n', 1) || ':' || (result->>'exit_code')")" "boxcar:4"
is "and the job starts with no signal blocked or ignored there too" \
   "$(job_field "$fb_sig_id" "result->>'stdout'" | tr -s '\t\n' '  ')" \
   "SigBlk: 0000000000000000 SigIgn: 0000000000000000 "
tap_done
