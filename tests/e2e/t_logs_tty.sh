# A job's output is hostile to terminals: `boxcar logs` on a tty shows its
# control sequences (ESC, a lone CR, C1 controls, bytes that are not
# UTF-8) instead of obeying them, stdout and stderr alike; piped, the bytes
# pass exactly; --raw and --safe choose either way.  The JSON that status,
# events and jobs print keeps no DEL or C1 character raw.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_logs_tty
T=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$T"' EXIT
start_worker logs-tty-w --poll-interval 500ms --sandbox "$E2E_SANDBOX"
tty_run() { python3 "$(dirname "$0")/on_tty.py" "$T/tty.out" "$T/tty.err" "$@"; }
hex() { od -An -tx1 -v | tr -d ' \n'; }

# ESC sequences (clear screen, set the title), a lone CR, CRLF, BEL, DEL,
# U+009B (C1 CSI) as UTF-8, a raw 0x9b byte, a cut character, kept UTF-8.
script='printf "A\033[2J\033]0;pwned\007B\rC\r\nD\302\2331mE\233F\177G \303\251\n"; printf "err\033[31m\342\234\n" >&2'
id=$(python3 -c 'import json,sys; print(json.dumps({"script": sys.argv[1]}))' "$script" | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait --timeout 60s "$id" >/dev/null
want_out='A^[[2J^[]0;pwned^GB^MC'$'\r\n''D\u009b1mE\x9bF^?G '$'\xc3\xa9\n'
want_err='err^[[31m\xe2\x9c'$'\n'

tty_run "$BOXCAR" logs "$id"
is "on a terminal, stdout's controls are shown (^[, ^M, ^G, ^?, \\u009b, \\xNN), UTF-8 kept" \
   "$(hex < "$T/tty.out")" "$(printf '%s' "$want_out" | hex)"
is "and so are stderr's (a character cut short: \\xNN)" "$(hex < "$T/tty.err")" "$(printf '%s' "$want_err" | hex)"
check "no ESC reaches the terminal" bash -c "! grep -q $'\x1b' '$T/tty.out' '$T/tty.err'"

"$BOXCAR" logs "$id" >"$T/pipe.out" 2>"$T/pipe.err"
printf 'A\033[2J\033]0;pwned\007B\rC\r\nD\302\2331mE\233F\177G \303\251\n' >"$T/job.out"
printf 'err\033[31m\342\234\n' >"$T/job.err"
check "piped, stdout passes byte for byte" cmp -s "$T/pipe.out" "$T/job.out"
check "and stderr too" cmp -s "$T/pipe.err" "$T/job.err"

tty_run "$BOXCAR" logs --raw "$id"
check "--raw on a terminal: the exact bytes" cmp -s "$T/tty.out" "$T/job.out"
"$BOXCAR" logs --safe "$id" >"$T/safe.out" 2>/dev/null
is "--safe when piped: shown as on a terminal" "$(hex < "$T/safe.out")" "$(printf '%s' "$want_out" | hex)"
"$BOXCAR" logs --raw --safe "$id" >/dev/null 2>&1
is "--raw with --safe is a usage error" "$?" 2

tty_run "$BOXCAR" logs -f "$id"
is "logs -f on a terminal shows them the same way" "$(hex < "$T/tty.out")" "$(printf '%s' "$want_out" | hex)"

c1=$'\xc2\x9b'; del=$'\x7f'
for cmd in "status $id" "status --json $id"; do
  tty_run "$BOXCAR" $cmd
  check "boxcar $cmd on a terminal: no raw C1 or DEL of the job's text" \
    bash -c "! grep -qF -e '$c1' -e '$del' '$T/tty.out'"
done
check "the status JSON escapes them instead (\\u009b)" grep -qF '\u009b' "$T/tty.out"
"$BOXCAR" status "$id" | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; sys.exit(0 if "\x9b1m" in r["stdout"] else 1)'
is "and parses back to the same text" "$?" 0

# A row the table shows is the database's: whatever wrote its error code.
sql "insert into boxcar.jobs (queue, spec, status, error) values ('web', '{\"command\":[\"x\"]}', 'failed',
  jsonb_build_object('code', e'X\\u001b]0;pwned\\u0007\\u001b[2J'))" >/dev/null
tty_run "$BOXCAR" jobs ls
check "boxcar jobs ls on a terminal: a hostile error code is shown, not obeyed" \
  bash -c "grep -qF 'X^[]0;pwned^G^[[2J' '$T/tty.out' && ! grep -q $'\x1b' '$T/tty.out'"
tap_done
