# Job secrets (spec.secrets, docs/tenants.md "## Secrets"): the job sees
# the value as an environment variable; nothing stored or sent shows it
# (logs, status, the dashboard, the webhook, a pg_dump, the worker's log);
# a tampered value fails the job with SECRET_UNAVAILABLE; the private key
# is not visible inside the sandbox; key rotation K1 -> K2.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_secrets
# S3: the session job's checkpoint at the end.
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-secrets-$$"
tmp=$(mktemp -d)
keys="$tmp/keys"; mkdir -m 700 "$keys"
VALUE="sk-live-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"

# The scripts check the value by its hash: the spec never holds it.
SHA=$(printf %s "$VALUE" | sha256sum | cut -c1-64)
SEES='test "$(printf %s "$API_KEY" | sha256sum | cut -c1-64)" = '"$SHA"
spec() { # SCRIPT [VALUE]: a spec with the secret API_KEY
  python3 -c 'import json,sys; print(json.dumps({"script": sys.argv[1], "secrets": {"API_KEY": sys.argv[2]}}))' "$1" "${2:-$VALUE}"
}

out=$(spec 'true' | "$BOXCAR" enqueue --spec - 2>&1)
check "no key registered: enqueue fails naming the fix" grep -q 'run boxcar secrets keygen' <<<"$out"

k1=$("$BOXCAR" secrets keygen --out "$keys" | sed -n 's/^registered key \([0-9a-f]*\) .*/\1/p')
check "keygen writes the private key 0600 and registers it ($k1)" \
  test "$(stat -c %a "$keys/$k1.pem")" = 600
check "keygen refuses to overwrite a key file" bash -c "! '$BOXCAR' secrets keygen --out '$keys' --no-register 2>/dev/null | grep -q x; test \$(ls '$keys' | wc -l) -ge 1"

port=$(free_port)
python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port "$port" --secret "$BOXCAR_WEBHOOK_SECRET" \
        --log "$tmp/recv.log" --mode ok > "$tmp/recv.port" 2>>"$tmp/recv.err" &
_bg_pids+=($!)
wait_for "receiver up" 10 test -s "$tmp/recv.port"

chmod 644 "$keys/$k1.pem"
"$BOXCAR" worker --worker-id sec-bad --secret-keys "$keys" --sandbox "$E2E_SANDBOX" >"$tmp/bad.log" 2>&1
check "a worker refuses a private key others may read" grep -q 'chmod 600' "$tmp/bad.log"
chmod 600 "$keys/$k1.pem"

start_worker sec-w1 --concurrency 2 --poll-interval 500ms --sandbox "$E2E_SANDBOX" --secret-keys "$keys"
W1_PID=$WORKER_PID
wlog="$BOXCAR_DEV/test-logs/sec-w1.log"

# The job also looks for any private key where a host's could be (and
# finds the one it wrote itself: the search works).
a=$(spec 'echo "key=$API_KEY"; echo "err $API_KEY" >&2; '"$SEES"'; test ! -e "'"$keys"'"; echo "-----BEGIN PRIVATE"" KEY-----" > /tmp/probe.pem; f=$(grep -rlsE "BEGIN [A-Z ]*PRIVATE KEY" /etc /tmp /var /opt /home /root /srv /run 2>/dev/null); if [ "$f" != /tmp/probe.pem ]; then echo "found: $f"; exit 1; fi' |
    "$BOXCAR" enqueue --spec - --webhook-url "http://127.0.0.1:$port/hook")
"$BOXCAR" status --wait --timeout 60s "$a" >/dev/null
is "the job sees its secret as API_KEY and sees no private key file" "$(job_field "$a" status)" "succeeded"
[[ $(job_field "$a" status) == succeeded ]] || diag "$(job_field "$a" "result->>'stdout'")"
is "boxcar logs shows the value masked" "$("$BOXCAR" logs "$a" 2>&1 | tr '\n' '|')" "key=***|err ***|"
is "the result's stdout is masked" "$(job_field "$a" "result->>'stdout'")" "key=***"
status=$("$BOXCAR" status --json "$a")
check "boxcar status --json shows no value" bash -c "! grep -qF '$VALUE' <<<'$status'"
is "boxcar status shows the secret by name" "$(jq -c '.spec.secrets' <<<"$status")" '{"API_KEY":"(sealed)"}'
wait_for "webhook delivered" 30 grep -q "$a" "$tmp/recv.log"
check "the webhook body carries the masked output" grep -qF 'key=***' "$tmp/recv.log"
check "and not the value" bash -c "! grep -qF '$VALUE' '$tmp/recv.log'"
check "no stored log chunk holds the value" sql_true "select not exists (select from boxcar.job_logs where position('$VALUE'::bytea in data) > 0)"
pg_dump "$DATABASE_URL" > "$tmp/dump.sql"
check "a pg_dump of the database holds the job ($a)" grep -q "$a" "$tmp/dump.sql"
check "but not the value" bash -c "! grep -qF '$VALUE' '$tmp/dump.sql'"
check "the worker's log does not hold the value" bash -c "! grep -qF '$VALUE' '$wlog'"

# The dashboard's job page.
"$BOXCAR" ui --listen 127.0.0.1:0 --no-auth >"$tmp/ui.log" 2>&1 &
_bg_pids+=($!)
wait_for "ui listens" 10 grep -q 'event=ui.listening' "$tmp/ui.log"
ui="http://127.0.0.1:$(sed -n 's/.*event=ui.listening.* port=\([0-9]*\).*/\1/p' "$tmp/ui.log")"
page=$(curl -s "$ui/jobs/$a"; curl -s "$ui/api/jobs/$a"; curl -s "$ui/api/jobs/$a/logs")
check "the dashboard shows the job" grep -q "API_KEY" <<<"$page"
check "but not the value" bash -c "! grep -qF '$VALUE' <<<\"\$0\"" "$page"

# While a job runs in a cold sandbox (--warm-sandboxes 0), no process's
# command line (world-readable) holds the value: the helper takes it from
# its environment.
"$BOXCAR" queue pause cold >/dev/null
start_worker sec-cold --poll-interval 500ms --sandbox "$E2E_SANDBOX" --secret-keys "$keys" --queues cold --warm-sandboxes 0
slow=$(spec "$SEES; touch /workspace/started; sleep 4" | "$BOXCAR" enqueue --queue cold --spec -)
"$BOXCAR" queue resume cold >/dev/null
wait_for "the slow job runs" 30 sql_true "select status = 'running' from boxcar.jobs where id = '$slow'"
sleep 1
# (The value reaches the checker in its environment: in its argv it would
# match itself.)
cmdlines_with() { # the number of processes whose argv holds the bytes $VH (hex)
  python3 -c '
import glob, os
v = bytes.fromhex(os.environ["VH"])
hits = []
for p in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        if v in open(p, "rb").read():
            hits.append(p)
    except OSError:
        pass
print(len(hits))'
}
helpers=$(VH=$(printf -- '--env\0API_KEY\0' | od -An -tx1 | tr -d ' \n') cmdlines_with)
check "the cold helper runs, asking for API_KEY from its environment ($helpers processes)" test "$helpers" -ge 1
is "no command line on the host holds the value while it runs" "$(VH=$(printf %s "$VALUE" | od -An -tx1 | tr -d ' \n') cmdlines_with)" "0"
"$BOXCAR" status --wait --timeout 60s "$slow" >/dev/null
is "the job in a cold sandbox sees its secret" "$(job_field "$slow" status)" "succeeded"

# A tampered sealed value: the message's integrity check fails.
sealed=$(sql "select spec #>> '{secrets,API_KEY,sealed}' from boxcar.jobs where id = '$a'")
n=${#sealed}; c=${sealed:n-12:1}; [[ $c == A ]] && r=B || r=A
tampered="${sealed:0:n-12}$r${sealed:n-11}"
t=$(python3 -c 'import json,sys; print(json.dumps({"command": ["true"], "secrets": {"API_KEY": {"sealed": sys.argv[1]}}}))' "$tampered" |
    "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait --timeout 60s "$t" >/dev/null
is "a tampered value fails the job with SECRET_UNAVAILABLE" "$(job_field "$t" "error->>'code'")" "SECRET_UNAVAILABLE"
check "naming the secret and its key: $(job_field "$t" "error->>'message'")" \
  bash -c "grep -q 'secrets.API_KEY (key $k1)' <<<\"\$0\"" "$(job_field "$t" "error->>'message'")"

# Rotation: 1) K2's private key to every worker (restart), 2) register K2,
# 3) wait until nothing holds K1, 4) retire K1, delete its file.
"$BOXCAR" queue pause rot >/dev/null
r1=$(spec "$SEES" | "$BOXCAR" enqueue --queue rot --spec -)
is "r1 is sealed with K1" "$(job_field "$r1" "spec #>> '{secrets,API_KEY,key}'")" "$k1"
k2=$("$BOXCAR" secrets keygen --out "$keys" --no-register | sed -n 's|^wrote private key .*/\([0-9a-f]*\)\.pem$|\1|p')
# A worker left with K1 alone, on a queue of its own.
mkdir -m 700 "$tmp/k1only"; cp -p "$keys/$k1.pem" "$tmp/k1only/"
kill "$W1_PID"; wait "$W1_PID" 2>/dev/null
start_worker sec-old --poll-interval 500ms --sandbox "$E2E_SANDBOX" --secret-keys "$tmp/k1only" --queues old
start_worker sec-w2 --concurrency 2 --poll-interval 500ms --sandbox "$E2E_SANDBOX" --secret-keys "$keys" --queues rot,default,evil/q
"$BOXCAR" secrets add-key "$keys/$k2.pem" >/dev/null
# Another tenant copies job a's sealed value (default's) into its own job.
stolen=$(python3 -c 'import json,sys; print(json.dumps({"command": ["sh", "-c", "echo $API_KEY"], "secrets": {"API_KEY": {"sealed": sys.argv[1]}}}))' "$sealed" |
         "$BOXCAR" enqueue --queue evil/q --spec -)
"$BOXCAR" status --wait --timeout 60s "$stolen" >/dev/null
is "a sealed value copied into another scope's job opens nowhere" \
  "$(job_field "$stolen" "error->>'code'") $(job_field "$stolen" "error->>'message' like '%sealed for another scope or name%'")" "SECRET_UNAVAILABLE t"
check "and nothing of it was printed" bash -c "! '$BOXCAR' logs '$stolen' 2>&1 | grep -q ."
r2=$(spec "$SEES" | "$BOXCAR" enqueue --queue rot --spec -)
is "once K2 is registered it seals new jobs" "$(job_field "$r2" "spec #>> '{secrets,API_KEY,key}'")" "$k2"
o=$(spec "$SEES" | "$BOXCAR" enqueue --queue old --spec -)
"$BOXCAR" status --wait --timeout 60s "$o" >/dev/null
is "a worker without K2 fails a job sealed with it: $(job_field "$o" "error->>'message'")" \
  "$(job_field "$o" "error->>'code'") $(job_field "$o" "error->>'message' like '%key $k2, which this worker does not hold%'")" "SECRET_UNAVAILABLE t"
out=$("$BOXCAR" secrets retire "$k1" 2>&1)
check "K1 does not retire while r1 is queued: $out" grep -q 'still sealing 1 queued or running job' <<<"$out"
"$BOXCAR" queue resume rot >/dev/null
"$BOXCAR" status --wait --timeout 60s "$r1" >/dev/null; "$BOXCAR" status --wait --timeout 60s "$r2" >/dev/null
is "r1 (K1) and r2 (K2) both run" "$(job_field "$r1" status) $(job_field "$r2" status)" "succeeded succeeded"
check "then K1 retires" "$BOXCAR" secrets retire "$k1"
is "boxcar secrets keys lists K2 active and K1 retired" \
  "$("$BOXCAR" secrets keys | awk 'NR > 1 {print $1, $2}' | sort | tr '\n' '|')" "$(printf '%s\n' "$k1 retired" "$k2 active" | sort | tr '\n' '|')"
# A session's job gets its secrets too, masked alike.
sj=$(python3 -c 'import json,sys; print(json.dumps({"command": ["sh", "-c", "echo s=$API_KEY; " + sys.argv[1]], "session": {"id": "sec"}, "secrets": {"API_KEY": sys.argv[2]}}))' "$SEES" "$VALUE" |
     "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait --timeout 90s "$sj" >/dev/null
is "a session job sees its secret, its output masked" "$(job_field "$sj" status) $(job_field "$sj" "result->>'stdout'")" "succeeded s=***"
is "in the live log too" "$("$BOXCAR" logs "$sj" 2>&1)" "s=***"
tap_done
