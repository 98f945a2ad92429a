# What a user sees: a database not migrated yet, a schema newer than the
# binary, SQL errors without PL/pgSQL noise or doubled prefixes, not-found
# and --help exit codes, the version with its commit, and libpq's own
# conventions (PG* variables, ~/.pgpass) when DATABASE_URL is unset.
source "$(dirname "$0")/../lib.sh"
"$BOXCAR_ROOT/scripts/pg.sh" dropdb e2e_messages
"$BOXCAR_ROOT/scripts/pg.sh" createdb e2e_messages
export DATABASE_URL; DATABASE_URL=$(db_url e2e_messages)
url=$DATABASE_URL
tmp=$(mktemp -d)
zero=00000000-0000-0000-0000-000000000000
errors="$tmp/errors"   # every error message shown below, for the doubled-prefix check

# Before `boxcar migrate`: said once, plainly, by the CLI and the worker.
out=$("$BOXCAR" status "$zero" 2>&1); rc=$?
is "the CLI before migrate exits 1" "$rc" "1"
is "and says to run migrate" "$out" "boxcar status: schema boxcar not found: run boxcar migrate"
mkdir -p "$tmp/w"
timeout 30 "$BOXCAR" worker --sandbox none --work-dir "$tmp/w" >"$tmp/w0.log" 2>&1; rc=$?
is "a worker before migrate exits 1 instead of retrying" "$rc" "1"
is "saying so once" "$(grep -c 'schema boxcar not found: run boxcar migrate' "$tmp/w0.log")" "1"
check "without the raw SQL error" bash -c "! grep -q 'does not exist' '$tmp/w0.log'"
"$BOXCAR" migrate >/dev/null

# The version names the commit it was built from (in a git checkout).
v=$("$BOXCAR" version)
root_top=$(git -C "$BOXCAR_ROOT" rev-parse --show-toplevel 2>/dev/null)
if [[ -n $root_top && $root_top == "$(cd "$BOXCAR_ROOT" && pwd -P)" ]]; then
  check "the version is VERSION+g<commit>" grep -Eq "^boxcar $(sed 's/\./\\./g' "$BOXCAR_ROOT/VERSION")\+g[0-9a-f]{7}\$" <<<"$v"
  check "a commit of this repository" git -C "$BOXCAR_ROOT" cat-file -e "${v##*+g}^{commit}"
else
  is "outside git the version is VERSION" "$v" "boxcar $(cat "$BOXCAR_ROOT/VERSION")"
fi

# A schema newer than the binary: the worker refuses to start.
sql "insert into boxcar.schema_migrations (version, checksum) values ('9999_future', 'x')"
timeout 30 "$BOXCAR" worker --sandbox none --work-dir "$tmp/w" >"$tmp/w1.log" 2>&1; rc=$?
is "a worker older than the schema exits 1" "$rc" "1"
check "saying the schema is newer and to upgrade the worker" \
  grep -q 'the database schema is newer than this boxcar (.*9999_future.*): upgrade the worker' "$tmp/w1.log"
sql "delete from boxcar.schema_migrations where version = '9999_future'"

# SQL errors: message and hint, no CONTEXT, no DETAIL row dump.
out=$(echo '{"command": []}' | "$BOXCAR" enqueue --spec - 2>&1); rc=$?; echo "$out" >>"$errors"
is "a bad spec exits 1" "$rc" "1"
is "on one line" "$(wc -l <<<"$out")" "1"
check "with the message and its hint" grep -q '^boxcar enqueue: BAD_SPEC: command: must be a non-empty array of strings (hint: ' <<<"$out"
check "without PL/pgSQL CONTEXT" bash -c "! grep -qiE 'context|pl/pgsql|line [0-9]' <<<'$out'"

# Idempotency keys through the CLI.
k1=$("$BOXCAR" enqueue --queue msg-idle --idempotency-key order-7 -- echo a)
is "the same request under a key returns the same job" "$("$BOXCAR" enqueue --queue msg-idle --idempotency-key order-7 -- echo a)" "$k1"
out=$("$BOXCAR" enqueue --queue msg-idle --idempotency-key order-7 -- echo b 2>&1); rc=$?; echo "$out" >>"$errors"
is "a different spec under the key exits 1" "$rc" "1"
check "naming the existing job" grep -q "^boxcar enqueue: idempotency_key: already used by job $k1 with a different spec" <<<"$out"
out=$("$BOXCAR" enqueue --queue msg-idle --idempotency-key '' -- echo a 2>&1); rc=$?; echo "$out" >>"$errors"
is "an empty key exits 1" "$rc" "1"
is "with a clear message" "$out" "boxcar enqueue: idempotency_key: must be 1 to 256 characters"
out=$("$BOXCAR" enqueue --queue msg-idle --idempotency-key "$(printf 'k%.0s' {1..300})" -- echo a 2>&1); rc=$?
is "a key of 300 characters too, without the row" "$rc $out" "1 boxcar enqueue: idempotency_key: must be 1 to 256 characters"

# A schema older than the CLI (a function of the SQL API missing) says so.
sql "drop function boxcar.job_events_json(uuid)"
out=$("$BOXCAR" events "$k1" 2>&1); rc=$?
is "a missing SQL API function exits 1" "$rc" "1"
check "saying the schema is older: run boxcar migrate" grep -q '^boxcar events: function boxcar.job_events_json(uuid) does not exist: the database schema is older than this boxcar: run boxcar migrate$' <<<"$out"
"$BOXCAR" migrate >/dev/null

# Not found and --help, like the other commands.
out=$("$BOXCAR" events "$zero" 2>&1); rc=$?
is "events of an unknown job exits 1" "$rc" "1"
is "saying not found" "$out" "boxcar events: job $zero not found"
is "events of a job without events yet exits 0" "$("$BOXCAR" events "$k1"; echo "rc=$?")" "rc=0"
for c in "status $zero" "logs $zero" "cancel $zero"; do
  out=$("$BOXCAR" $c 2>&1); rc=$?
  is "$c: exit 1, not found" "$rc ${out##*: }" "1 job $zero not found"
done
check "help --help exits 0 with the usage" bash -c "'$BOXCAR' help --help | grep -q '^usage: boxcar COMMAND'"
check "sandbox detect --help exits 0 with the usage" bash -c "'$BOXCAR' sandbox detect --help | grep -q '^usage: boxcar sandbox detect'"

# Doubled prefixes.
sum=$(sql "select checksum from boxcar.schema_migrations where version = '0001_jobs'")
sql "update boxcar.schema_migrations set checksum = repeat('0', 64) where version = '0001_jobs'"
out=$("$BOXCAR" migrate 2>&1); echo "$out" >>"$errors"
check "migrate names the file once, after its own prefix" grep -q '^boxcar migrate: migrations/0001_jobs.sql was changed' <<<"$out"
sql "update boxcar.schema_migrations set checksum = '$sum' where version = '0001_jobs'"
for addr in bad 192.0.2.1:9; do
  timeout 30 "$BOXCAR" worker --sandbox none --work-dir "$tmp/w" --metrics-addr "$addr" >"$tmp/m.log" 2>&1
  grep 'worker.failed' "$tmp/m.log" >>"$errors"
  check "--metrics-addr $addr: the flag is named once" grep -q 'error="--metrics-addr[^"]*' "$tmp/m.log"
done
out=$("$BOXCAR" status "$zero" --database-url "postgresql://boxcar@127.0.0.1:1/x" 2>&1); echo "$out" >>"$errors"
check "a connection failure is one line with single spaces" bash -c "[[ \$(wc -l <<<'$out') == 1 ]] && ! grep -q '  ' <<<'$out' && grep -q '^boxcar status: connect: connection to server at' <<<'$out'"
check "no error message repeats its prefix (X: X:)" bash -c "! grep -E '(^|[ \"])([^ :\"]+): \\2[: ]' '$errors'"
while IFS= read -r line; do diag "$line"; done <"$errors"

# libpq conventions with DATABASE_URL unset.
noenv=(env -u DATABASE_URL -u PGSERVICE PGHOST=127.0.0.1 PGPORT="$BOXCAR_PG_PORT" PGUSER=boxcar PGDATABASE=e2e_messages)
out=$("${noenv[@]}" PGPASSWORD=boxcar "$BOXCAR" status "$k1" 2>&1); rc=$?
is "PG* variables are used when DATABASE_URL is unset" "$rc" "0"
mkdir -p "$tmp/home"
printf '127.0.0.1:%s:e2e_messages:boxcar:boxcar\n' "$BOXCAR_PG_PORT" >"$tmp/home/.pgpass"
chmod 600 "$tmp/home/.pgpass"
out=$("${noenv[@]}" HOME="$tmp/home" "$BOXCAR" events "$k1" 2>&1); rc=$?
is "and ~/.pgpass" "$rc" "0"
out=$("${noenv[@]}" HOME="$tmp" "$BOXCAR" events "$k1" 2>&1); rc=$?
is "(without a password it fails, so the file was read)" "$rc" "1"
id=$("${noenv[@]}" HOME="$tmp/home" "$BOXCAR" enqueue --queue msg-env -- echo from-env)
bg "${noenv[@]}" HOME="$tmp/home" "$BOXCAR" worker --sandbox none --queues msg-env --worker-id msg-env \
  --work-dir "$tmp/w" --poll-interval 500ms >"$tmp/w2.log" 2>&1
is "a worker runs jobs with PG* variables and ~/.pgpass" \
  "$(timeout 30 "$BOXCAR" status --wait "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" "succeeded"

# `worker drain` with --database-url before the subcommand.
check "the worker registered its version" wait_for "registered" 10 bash -c \
  "[[ \$(psql -XqtA '$url' -c \"select version from boxcar.worker_status where id = 'msg-env'\") == '${v#boxcar }' ]]"
out=$(env -u DATABASE_URL "$BOXCAR" worker --database-url "$url" drain msg-env 2>&1); rc=$?
is "worker --database-url URL drain ID works" "$rc" "0"
check "and the worker stops" wait_for "stopped" 15 bash -c \
  "[[ \$(psql -XqtA '$url' -c \"select state from boxcar.worker_status where id = 'msg-env'\") == stopped ]]"
out=$(env -u DATABASE_URL "$BOXCAR" worker --database-url="$url" drain nobody 2>&1); rc=$?
is "--database-url=URL too, an unknown worker exits 1" "$rc" "1"
rm -rf "$tmp"
tap_done
