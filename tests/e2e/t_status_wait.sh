# boxcar status --wait --timeout: gives up with its own exit status (124)
# while the job is queued or running, and returns the job as soon as it
# has finished.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_status_wait

ms() { echo $(( $(date +%s%N) / 1000000 )); }

# No worker yet: the job stays queued.
queued=$("$BOXCAR" enqueue --queue status-wait -- sh -c 'sleep 2; echo finished')
t0=$(ms)
"$BOXCAR" status --wait --timeout 1s "$queued" >"$BOXCAR_DEV/test-logs/status.out" 2>"$BOXCAR_DEV/test-logs/status.err"
rc=$? el=$(( $(ms) - t0 ))
is "a queued job: --wait --timeout 1s exits 124" "$rc" "124"
check "it waited the full second, and not much more (${el} ms)" test "$el" -ge 1000 -a "$el" -lt 4000
check "nothing on stdout when it timed out" test ! -s "$BOXCAR_DEV/test-logs/status.out"
is "stderr says the job is still queued" "$(cat "$BOXCAR_DEV/test-logs/status.err")" \
   "boxcar status: job $queued is still queued after --timeout 1s"

"$BOXCAR" status --timeout 1s "$queued" >/dev/null 2>&1
is "--timeout without --wait is a usage error" "$?" "2"
"$BOXCAR" status --wait --timeout soon "$queued" >/dev/null 2>&1
is "--timeout that is not a duration is a usage error" "$?" "2"
"$BOXCAR" status --wait --timeout 1s 00000000-0000-0000-0000-000000000000 >/dev/null 2>&1
is "--wait --timeout on a job that does not exist exits 1" "$?" "1"

start_worker status-wait --queues status-wait --sandbox "$E2E_SANDBOX"
wait_for "job starts" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.jobs where id = '$queued'\") == running ]]"
"$BOXCAR" status --wait --timeout 300ms "$queued" >/dev/null 2>"$BOXCAR_DEV/test-logs/status.err"
rc=$?
is "a running job: --timeout 300ms exits 124, saying it is running" \
   "$rc $(cat "$BOXCAR_DEV/test-logs/status.err")" \
   "124 boxcar status: job $queued is still running after --timeout 300ms"

t0=$(ms)
out=$("$BOXCAR" status --wait --timeout 60s "$queued")
rc=$? el=$(( $(ms) - t0 ))
is "the job finishes within the timeout: exit 0" "$rc" "0"
is "it printed the finished job" "$(jq -r '.status + " " + .result.stdout' <<<"$out")" "succeeded finished"
check "it returned when the job finished, not at the timeout (${el} ms)" test "$el" -lt 20000

# Options may come after the id; a failed job is finished too (exit 0).
failed=$("$BOXCAR" enqueue --queue status-wait -- sh -c 'exit 3')
out=$("$BOXCAR" status "$failed" --timeout 60s --wait)
is "a failed job ends the wait with exit 0 and status failed" "$? $(jq -r .status <<<"$out")" "0 failed"

tap_done
