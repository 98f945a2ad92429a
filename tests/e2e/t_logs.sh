# Live logs: lines reach `boxcar logs -f` while the job runs; stdout and
# stderr stay apart; the stored log is capped; -f exits with the job.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_logs
tmp=$(mktemp -d)
start_worker logs-w --concurrency 2 --lease 10s --poll-interval 500ms --sandbox "$E2E_SANDBOX" --max-log-bytes 3000

id=$(echo '{"script": "for i in 1 2 3 4; do echo line $i; echo err $i >&2; sleep 0.5; done; exit 3"}' | "$BOXCAR" enqueue --spec -)
( "$BOXCAR" logs -f "$id" 2>"$tmp/err" | while IFS= read -r line; do echo "$(date +%s%N) $line"; done > "$tmp/out"; echo "${PIPESTATUS[0]}" > "$tmp/rc" ) &
follower=$!
wait_for "follower ends" 30 test -s "$tmp/rc"
is "logs -f prints every stdout line in order" "$(cut -d' ' -f2- "$tmp/out" | tr '\n' '|')" "line 1|line 2|line 3|line 4|"
is "and stderr on stderr" "$(tr '\n' '|' < "$tmp/err")" "err 1|err 2|err 3|err 4|"
is "logs -f exits with the job's exit code" "$(cat "$tmp/rc")" "3"
first=$(head -1 "$tmp/out" | cut -d' ' -f1); last=$(tail -1 "$tmp/out" | cut -d' ' -f1)
gap_ms=$(( (last - first) / 1000000 ))
check "the first line arrived while the job ran (${gap_ms} ms before the last)" test "$gap_ms" -ge 1000
is "logs without -f prints the stored log" "$("$BOXCAR" logs "$id" 2>/dev/null | tr '\n' '|')" "line 1|line 2|line 3|line 4|"
is "one NOTIFY-sized batch per flush, not one row per line" "$(sql "select count(*) <= 8 from boxcar.job_logs where job_id = '$id'")" "t"

big=$(echo '{"command": ["sh", "-c", "head -c 10000 /dev/zero | tr \"\\\\0\" y; echo; echo TAIL"]}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$big" >/dev/null
stored=$(sql "select coalesce(sum(length(data)) filter (where stream = 1), 0) from boxcar.job_logs where job_id = '$big'")
check "the stored log is capped (${stored} bytes of stdout for --max-log-bytes 3000)" test "$stored" -le 3000
check "with a marker saying so" bash -c "'$BOXCAR' logs '$big' 2>&1 >/dev/null | grep -q 'log limit reached'"
is "while the result's tail still has the end" "$(job_field $big "right(result->>'stdout', 5) = e'TAIL\\n'")" "t"
tap_done
