# --json on every command that reads or changes the database: each output
# parses with jq and holds the expected fields and values, checked against
# the database (enqueue, status, cancel, events, logs, webhooks ls/retry,
# storage push/pull/ls/url, workers, worker drain, migrate).
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-json-$$"
fresh_db e2e_cli_json
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT

# jqis DESC JSON FILTER WANT: the filter's output (jq -r; -e fails on
# unparsable input) is WANT.
jqis() { is "$1" "$(jq -er "$3" <<<"$2" 2>&1)" "$4"; }
# One JSON value per line, each parsing.
lines_parse() { [[ -n $1 ]] && while IFS= read -r l; do jq -e . >/dev/null <<<"$l" || return 1; done <<<"$1"; }

# ---- migrate -------------------------------------------------------------------------
n_mig=$(ls "$BOXCAR_ROOT"/migrations/*.sql | wc -l)
out=$("$BOXCAR" migrate --json)
jqis "migrate --json on a migrated database: nothing applied, all already" "$out" \
  '"\(.applied) \(.already_applied) \(.migrations | length) \(.api_files > 0)"' "0 $n_mig $n_mig true"
jqis "its migrations are those of boxcar.schema_migrations, in order" "$out" \
  '[.migrations[].version] | join(" ")' "$(sql "select string_agg(version, ' ' order by version) from boxcar.schema_migrations")"
"$BOXCAR_ROOT/scripts/pg.sh" dropdb e2e_cli_json_empty
"$BOXCAR_ROOT/scripts/pg.sh" createdb e2e_cli_json_empty
out=$("$BOXCAR" migrate --json --database-url "$(db_url e2e_cli_json_empty)")
jqis "migrate --json on an empty database: every migration applied now" "$out" \
  '"\(.applied) \(.already_applied) \(.migrations | length) \(.migrations[0].applied_at != null)"' "$n_mig 0 $n_mig true"
"$BOXCAR_ROOT/scripts/pg.sh" dropdb e2e_cli_json_empty

# ---- enqueue, status, events, cancel on a queue nobody serves ----------------------------
out=$("$BOXCAR" enqueue --json --queue idle --priority 5 --idempotency-key k1 -- echo hi)
id=$(jq -r .id <<<"$out")
check "enqueue --json prints one line" test "$(wc -l <<<"$out")" -eq 1
jqis "enqueue --json prints the job" "$out" '"\(.queue) \(.status) \(.priority) \(.spec.command | join(","))"' "idle queued 5 echo,hi"
is "the job is in the database" "$(job_field "$id" "queue || ' ' || status")" "idle queued"
again=$("$BOXCAR" enqueue --json --queue idle --priority 5 --idempotency-key k1 -- echo hi)
jqis "enqueue --json with the same idempotency key: the same job" "$again" .id "$id"
plain=$("$BOXCAR" enqueue --queue idle -- true)
check "enqueue without --json still prints the id alone" grep -qE '^[0-9a-f-]{36}$' <<<"$plain"
"$BOXCAR" enqueue --queue idle -- echo --json >/dev/null
is "a --json after -- belongs to the command" \
   "$(sql "select spec->>'command' from boxcar.jobs where queue = 'idle' order by created_at desc limit 1")" '["echo", "--json"]'

is "status --json prints what status prints" "$("$BOXCAR" status --json "$id")" "$("$BOXCAR" status "$id")"
jqis "status --json parses, the job's id" "$("$BOXCAR" status --json "$id")" .id "$id"
out=$("$BOXCAR" cancel --json "$id")
jqis "cancel --json on a queued job: cancelled" "$out" '"\(.id) \(.status)"' "$id cancelled"
is "it is cancelled in the database" "$(job_field "$id" status)" "cancelled"
ev=$("$BOXCAR" events --json "$id")
is "events --json prints what events prints" "$ev" "$("$BOXCAR" events "$id")"
check "events --json: one JSON object per line" lines_parse "$ev"
jqis "and shows the cancel" "$(jq -s . <<<"$ev")" '[.[].kind] | join(" ")' "cancelled"
"$BOXCAR" cancel --json 00000000-0000-0000-0000-000000000000 >"$tmp/out" 2>/dev/null
is "cancel --json of no job exits 1" "$?" "1"
is "and prints nothing on stdout" "$(cat "$tmp/out")" ""

# ---- with a worker: logs, cancel of a running job, webhooks, drain -------------------------
start_worker json-w --concurrency 2 --poll-interval 500ms --sandbox "$E2E_SANDBOX"

txt=$("$BOXCAR" enqueue -- sh -c 'echo hello; echo oops >&2; echo "é ✓"')
"$BOXCAR" status --wait --timeout 60s "$txt" >/dev/null
logs=$("$BOXCAR" logs --json "$txt")
check "logs --json: one JSON object per line" lines_parse "$logs"
is "its stdout chunks hold the job's stdout as text" \
   "$(jq -j 'select(.stream == "stdout") | .data' <<<"$logs")" "$(printf 'hello\né ✓')"
is "its stderr chunks hold the job's stderr" "$(jq -j 'select(.stream == "stderr") | .data' <<<"$logs")" "oops"
jqis "each chunk has attempt 1 and a seq" "$(jq -s . <<<"$logs")" \
  'all(.[]; .attempt == 1 and (.seq | type) == "number")' "true"
is "chunks come in order, as the database has them" "$(jq -r .seq <<<"$logs" | tr '\n' ' ')" \
   "$(sql "select string_agg(seq::text, ' ' order by attempt, seq) from boxcar.job_logs where job_id = '$txt'") "
is "logs --json writes nothing on stderr" "$("$BOXCAR" logs --json "$txt" 2>&1 >/dev/null)" ""

bin=$("$BOXCAR" enqueue -- sh -c 'printf "a\377b\000c"')
"$BOXCAR" status --wait --timeout 60s "$bin" >/dev/null
logs=$("$BOXCAR" logs --json "$bin")
check "a binary chunk comes as data_base64" bash -c 'jq -e -s "any(.[]; has(\"data_base64\") and (has(\"data\") | not))" <<<"$1" >/dev/null' _ "$logs"
is "which decodes to the bytes written" \
   "$(jq -r 'select(.stream == "stdout") | .data_base64 // (.data | @base64)' <<<"$logs" | base64 -d | od -An -tx1 | tr -d ' \n')" \
   "61ff6200"'63'
"$BOXCAR" logs --json --follow "$bin" >/dev/null
is "logs --json --follow of a finished job exits with its exit code (0)" "$?" "0"
fail=$("$BOXCAR" enqueue -- sh -c 'echo bye; exit 3')
out=$("$BOXCAR" logs -f --json "$fail")
is "logs -f --json follows to the end and exits with the job's code" "$?" "3"
is "and printed the job's output as JSON" "$(jq -j .data <<<"$out" | od -An -c | tr -s ' ')" " b y e \\n"
out=$("$BOXCAR" cancel --json "$fail")
jqis "cancel --json of a finished job: how it ended" "$out" '"\(.id) \(.status)"' "$fail failed"

run=$("$BOXCAR" enqueue -- sleep 30)
wait_for "the job runs" 30 bash -c "[[ \$(psql -X -qtA '$DATABASE_URL' -c \"select status from boxcar.jobs where id = '$run'\") == running ]]"
out=$("$BOXCAR" cancel --json "$run")
jqis "cancel --json on a running job: still running, its worker stops it" "$out" '"\(.id) \(.status)"' "$run running"
"$BOXCAR" status --wait --timeout 30s "$run" >/dev/null
is "and the worker stops it" "$(job_field "$run" status)" "cancelled"

hook=$("$BOXCAR" enqueue --webhook-url http://127.0.0.1:1/hook -- true)
"$BOXCAR" status --wait --timeout 60s "$hook" >/dev/null
wait_for "its delivery is written" 10 bash -c "[[ -n \$(psql -X -qtA '$DATABASE_URL' -c \"select id from boxcar.webhook_deliveries where job_id = '$hook'\") ]]"
did=$(sql "select id from boxcar.webhook_deliveries where job_id = '$hook'")
ls_out=$("$BOXCAR" webhooks ls --json)
is "webhooks ls --json prints what webhooks ls prints" "$ls_out" "$("$BOXCAR" webhooks ls)"
check "webhooks ls --json: one JSON object per line" lines_parse "$ls_out"
jqis "and lists the delivery" "$(jq -s . <<<"$ls_out")" "[.[] | select(.id == \"$did\") | .job_id] | join(\" \")" "$hook"
sql "update boxcar.webhook_deliveries set status = 'failed' where id = '$did'"
out=$("$BOXCAR" webhooks retry --json "$did")
jqis "webhooks retry --json of a failed delivery: queued" "$out" '"\(.id) \(.status) \(.queued)"' "$did pending true"
is "it is pending again in the database" "$(sql "select status from boxcar.webhook_deliveries where id = '$did'")" "pending"
sql "update boxcar.webhook_deliveries set status = 'delivered' where id = '$did'"
out=$("$BOXCAR" webhooks retry --json "$did")
jqis "webhooks retry --json of a delivered one: not queued, and its status" "$out" '"\(.status) \(.queued)"' "delivered false"

start_worker json-drain --poll-interval 500ms --sandbox "$E2E_SANDBOX"
drain_pid=$WORKER_PID
wait_for "the second worker registers" 30 bash -c "[[ \$(psql -X -qtA '$DATABASE_URL' -c \"select count(*) from boxcar.workers where id = 'json-drain' and state <> 'stopped'\") == 1 ]]"
ws=$("$BOXCAR" workers --json)
check "workers --json: one JSON object per line" lines_parse "$ws"
is "one per worker in boxcar.worker_status, by id" "$(jq -r .id <<<"$ws" | tr '\n' ' ')" \
   "$(sql "select string_agg(id, ' ' order by id) from boxcar.worker_status") "
jqis "with its state, concurrency and queues" "$(jq -s . <<<"$ws")" \
  '.[] | select(.id == "json-drain") | "\(.state) \(.concurrency) \(.queues | join(","))"' "running 4 default"
is "workers (the table) has a header and a row per worker" "$("$BOXCAR" workers | wc -l)" "3"
out=$("$BOXCAR" worker drain --json json-drain)
jqis "worker drain --json" "$out" '"\(.worker_id) \(.drain_requested)"' "json-drain true"
check "the drained worker exits" wait_for "it exits" 30 bash -c "! kill -0 $drain_pid 2>/dev/null"
jqis "workers --json then shows it stopped, its drain requested" "$("$BOXCAR" workers --json | jq -s .)" \
  '.[] | select(.id == "json-drain") | "\(.state) \(.drain_requested_at != null)"' "stopped true"
"$BOXCAR" worker drain --json no-such-worker >"$tmp/out" 2>/dev/null
is "worker drain --json of no worker exits 1" "$?" "1"
is "with nothing on stdout" "$(cat "$tmp/out")" ""

# ---- storage ---------------------------------------------------------------------------
mkdir -p "$tmp/src"; echo "hello" > "$tmp/src/a.txt"
out=$("$BOXCAR" storage push --json repo "$tmp/src" 2>/dev/null)
sha=$(jq -r .sha256 <<<"$out")
check "storage push --json: a sha256" grep -qE '^[0-9a-f]{64}$' <<<"$sha"
jqis "the new version, uploaded, the head" "$out" '"\(.name) \(.kind) \(.uploaded) \(.is_head) \(.file_count) \(.size > 0)"' \
  "repo artifact true true 1 true"
is "it is the head in the database" "$(sql "select head_version from boxcar.storages where name = 'repo'")" "$sha"
out=$("$BOXCAR" storage push --kind volume --json vol "$tmp/src" 2>/dev/null)
jqis "push --kind volume --json: its kind" "$out" '"\(.name) \(.kind) \(.sha256)"' "vol volume $sha"
out=$("$BOXCAR" storage push --json repo "$tmp/src" 2>/dev/null)
jqis "pushing the same tree again: the same version, nothing uploaded" "$out" '"\(.sha256) \(.uploaded)"' "$sha false"
ls_out=$("$BOXCAR" storage ls --json repo)
is "storage ls --json prints what storage ls prints" "$ls_out" "$("$BOXCAR" storage ls repo)"
check "storage ls --json: one JSON object per line" lines_parse "$ls_out"
"$BOXCAR" storage ls --bogus >/dev/null 2>&1
is "storage ls takes no unknown option as NAME (usage error)" "$?" "2"
out=$("$BOXCAR" storage url --json --expires 5m repo)
jqis "storage url --json: name, version, expiry" "$out" '"\(.name) \(.sha256) \(.expires_in_s)"' "repo $sha 300"
curl -sf "$(jq -r .url <<<"$out")" -o "$tmp/obj"
is "its url downloads the version (its one layer, the whole tree)" "$(sha256sum < "$tmp/obj" | cut -d' ' -f1)" "$(stack_of "$sha")"
out=$("$BOXCAR" storage pull --json "repo@$sha" "$tmp/pulled" 2>/dev/null)
jqis "storage pull --json: name, version, directory" "$out" '"\(.name) \(.sha256) \(.dir)"' "repo $sha $tmp/pulled"
check "and the tree is there" diff -r "$tmp/src" "$tmp/pulled"

tap_done
