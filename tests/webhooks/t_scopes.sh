#!/usr/bin/env bash
# Webhook secrets per scope (issue 48): each tenant's receiver verifies its
# own deliveries with its own secret and nobody else's; the master key
# (BOXCAR_WEBHOOK_SECRET) verifies nothing; rotation with an overlap signs
# with both secrets, then with the new one only; an endpoint's own secret
# signs that endpoint's deliveries only; `boxcar webhooks verify` with the
# right and the wrong secret.  Receivers check signatures with their own
# code (receiver.py), and keep each request to be checked again later.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_webhook_scopes
tmp=$(mktemp -d)
master="whsec_$(head -c 32 /dev/urandom | base64)"
export BOXCAR_WEBHOOK_SECRET=$master
RECV="$BOXCAR_ROOT/tests/webhooks/receiver.py"

# secrets_of SCOPE [URL]: the secrets that sign now, space-separated.
secrets_of() { "$BOXCAR" webhooks secret --scope "$1" ${2:+--endpoint "$2"} | awk '/^whsec_/ { print $1 }' | paste -sd' '; }
# derive SCOPE ENDPOINT GEN: the derivation, written here again from its
# definition (worker/webhook/webhook_derive.h), not with boxcar's code.
derive() { python3 - "$master" "$@" <<'PY'
import base64, hashlib, hmac, sys
key = base64.b64decode(sys.argv[1][len("whsec_"):])
msg = b"boxcar webhook secret v1\0" + sys.argv[2].encode() + b"\0" + sys.argv[3].encode() + b"\0" + sys.argv[4].encode()
print("whsec_" + base64.b64encode(hmac.new(key, msg, hashlib.sha256).digest()).decode())
PY
}
# start_recv NAME SECRET: a receiver that answers 200 to any request and
# records whether its own check of the signature passed.
start_recv() {
  mkdir -p "$tmp/$1"
  python3 "$RECV" --port 0 --port-file "$tmp/$1.port" --secret "$2" --log "$tmp/$1.log" \
      --save "$tmp/$1" --accept-invalid >/dev/null 2>"$tmp/$1.err" &
  _bg_pids+=($!)
  wait_for "receiver $1" 10 test -s "$tmp/$1.port"
}
# last JOB LOG FIELD: a field of the last request the receiver got for JOB.
last() { python3 - "$@" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
rows = [r for r in rows if isinstance(r["body"], dict) and r["body"]["data"]["job_id"] == sys.argv[1]]
v = rows[-1][sys.argv[3]] if rows else ""
print(str(v).lower() if isinstance(v, bool) else v)
PY
}
# run_job QUEUE URL: enqueues a job and waits for its delivery to be done.
run_job() {
  local j; j=$("$BOXCAR" enqueue --queue "$1" --webhook-url "$2" -- true)
  wait_for "delivered" 30 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.webhook_deliveries where job_id = '$j'\") == delivered ]]" >&2 || true
  echo "$j"
}
# verify SECRET SAVED: `boxcar webhooks verify` of a kept request.
verify() { "$BOXCAR" webhooks verify --secret "$1" --headers "$2.headers" --body "$2.body" --tolerance none; }
nsig() { wc -w <<<"$1" | tr -d ' '; }

sa=$(secrets_of acme); sb=$(secrets_of beta)
is "a scope's secret is the derivation of (master, scope, '', 1)" "$sa" "$(derive acme '' 1)"
check "each scope has its own secret" test "$sa" != "$sb"
check "and neither is the master" test "$sa" != "$master" -a "$sb" != "$master"

start_recv a "$sa"; hook_a="http://127.0.0.1:$(cat "$tmp/a.port")/a"
start_recv b "$sb"; hook_b="http://127.0.0.1:$(cat "$tmp/b.port")/b"
start_worker wh-scopes --queues acme/q,beta/q --sandbox none --poll-interval 200ms \
    --webhook-timeout 2s --webhook-retry-schedule 1s,1s,1s,1s,1s

# 1. Each receiver verifies its own scope's deliveries.
ja=$(run_job acme/q "$hook_a"); jb=$(run_job beta/q "$hook_b")
is "scope acme's receiver verifies acme's delivery with acme's secret" "$(last "$ja" "$tmp/a.log" signature_valid)" "true"
is "scope beta's receiver verifies beta's delivery with beta's secret" "$(last "$jb" "$tmp/b.log" signature_valid)" "true"
is "one signature per delivery" "$(nsig "$(last "$ja" "$tmp/a.log" signature)")" "1"
saved_a=$(last "$ja" "$tmp/a.log" saved); saved_b=$(last "$jb" "$tmp/b.log" saved)
out=$(verify "$sa" "$saved_a"); st=$?
is "webhooks verify with the scope's own secret: valid, exit 0" "$st $out" "0 valid"
out=$(verify "$sb" "$saved_a"); st=$?
is "webhooks verify of acme's delivery with beta's secret: exit 1" "$st" "1"
check "  saying no signature matches" grep -q '^invalid: no matching signature' <<<"$out"
out=$(verify "$master" "$saved_a"); st=$?
is "the master key verifies no delivery (acme's)" "$st" "1"
out=$(verify "$master" "$saved_b"); st=$?
is "the master key verifies no delivery (beta's)" "$st" "1"

# 2. Forgery: acme's receiver knows acme's secret; what it signs for beta
# is refused by beta's receiver.
forged=$(python3 - "$sa" "$saved_a.body" "$jb" <<'PY'
import base64, hashlib, hmac, json, sys, time
key = base64.b64decode(sys.argv[1][len("whsec_"):])
body = json.load(open(sys.argv[2]))
body["data"].update(job_id=sys.argv[3], queue="beta/q", status="failed")
raw = json.dumps(body).encode()
mid, ts = "msg_forged0001", str(int(time.time()))
sig = base64.b64encode(hmac.new(key, mid.encode() + b"." + ts.encode() + b"." + raw, hashlib.sha256).digest()).decode()
print(json.dumps({"id": mid, "ts": ts, "sig": "v1," + sig, "body": raw.decode()}))
PY
)
code=$(python3 -c 'import json,sys; f=json.loads(sys.argv[1]); print(f["body"])' "$forged" > "$tmp/forged.body"
       curl -s -o /dev/null -w '%{http_code}' -X POST "$hook_b" -H 'content-type: application/json' \
            -H "webhook-id: $(jq -r .id <<<"$forged")" -H "webhook-timestamp: $(jq -r .ts <<<"$forged")" \
            -H "webhook-signature: $(jq -r .sig <<<"$forged")" --data-binary @"$tmp/forged.body")
is "an event for beta signed with acme's secret reaches beta's receiver" "$code" "200"
is "  which finds its signature invalid" "$(tail -n1 "$tmp/b.log" | jq -r '.webhook_id + " " + (.signature_valid|tostring)')" "msg_forged0001 false"
out=$("$BOXCAR" webhooks verify --secret "$sb" --id "$(jq -r .id <<<"$forged")" --timestamp "$(jq -r .ts <<<"$forged")" \
      --signature "$(jq -r .sig <<<"$forged")" --body "$tmp/forged.body"); st=$?
is "  and so does webhooks verify with beta's secret" "$st" "1"

# 3. Rotation with a short overlap: both secrets sign, then only the new one.
"$BOXCAR" webhooks rotate --scope acme --overlap 5s >"$tmp/rotate.out"
check "webhooks rotate says which generation signs now" grep -q '^rotated: generation 2 of scope acme' "$tmp/rotate.out"
sa_all=$(secrets_of acme); sa2=${sa_all%% *}
is "during the overlap the scope has two valid secrets, the new one first" "$sa_all" "$sa2 $sa"
is "the new one is generation 2's derivation" "$sa2" "$(derive acme '' 2)"
j=$(run_job acme/q "$hook_a"); saved=$(last "$j" "$tmp/a.log" saved)
is "a delivery during the overlap carries two signatures" "$(nsig "$(last "$j" "$tmp/a.log" signature)")" "2"
is "  the receiver still holding the old secret verifies it" "$(last "$j" "$tmp/a.log" signature_valid)" "true"
out=$(verify "$sa" "$saved"); is "  webhooks verify with the old secret: valid" "$out" "valid"
out=$(verify "$sa2" "$saved"); is "  webhooks verify with the new secret: valid" "$out" "valid"
check "the overlap ends" wait_for "overlap" 10 sql_true "select now() > max(valid_until) from boxcar.webhook_secret_generations where scope = 'acme'"
is "after the overlap only the new secret is listed" "$(secrets_of acme)" "$sa2"
j=$(run_job acme/q "$hook_a"); saved=$(last "$j" "$tmp/a.log" saved)
is "a delivery after the overlap carries one signature" "$(nsig "$(last "$j" "$tmp/a.log" signature)")" "1"
is "  the old secret no longer verifies it" "$(last "$j" "$tmp/a.log" signature_valid)" "false"
out=$(verify "$sa2" "$saved"); is "  the new one does" "$out" "valid"
j=$(run_job beta/q "$hook_b")
is "beta's deliveries are untouched by acme's rotation" "$(last "$j" "$tmp/b.log" signature_valid)" "true"

# 4. An endpoint's own secret: signs that endpoint's deliveries only.
hook_b2="http://127.0.0.1:$(cat "$tmp/b.port")/b2"
"$BOXCAR" webhooks rotate --scope beta --endpoint "$hook_b2" --overlap 0 >/dev/null
se=$(secrets_of beta "$hook_b2")
is "the endpoint's secret is the derivation of (master, scope, URL, 1)" "$se" "$(derive beta "$hook_b2" 1)"
check "and differs from the scope's" test "$se" != "$sb"
is "the scope's secret is unchanged" "$(secrets_of beta)" "$sb"
j=$(run_job beta/q "$hook_b2"); saved=$(last "$j" "$tmp/b.log" saved)
out=$(verify "$se" "$saved"); is "a delivery to the endpoint verifies with its own secret" "$out" "valid"
is "  and not with the scope's (overlap 0)" "$(last "$j" "$tmp/b.log" signature_valid)" "false"
j=$(run_job beta/q "$hook_b"); saved=$(last "$j" "$tmp/b.log" saved)
is "a delivery to another endpoint of the scope verifies with the scope's secret" "$(last "$j" "$tmp/b.log" signature_valid)" "true"
out=$(verify "$se" "$saved"); st=$?
is "  and not with the endpoint's" "$st" "1"
j=$(run_job acme/q "$hook_b2"); saved=$(last "$j" "$tmp/b.log" saved)
out=$(verify "$sa2" "$saved"); is "another scope's delivery to that URL is signed with that scope's secret" "$out" "valid"
out=$(verify "$se" "$saved"); st=$?
is "  not with the endpoint's, which is beta's" "$st" "1"

# 5. webhooks verify needs no master and no database; bad input is named.
out=$(env -u BOXCAR_WEBHOOK_SECRET DATABASE_URL=postgresql://nowhere.invalid/x "$BOXCAR" webhooks verify \
      --secret "$sa2" --headers "$saved.headers" --body "$saved.body" --tolerance none); st=$?
is "webhooks verify needs neither the master nor a database" "$st $out" "0 valid"
out=$("$BOXCAR" webhooks secret 2>&1); st=$?
is "webhooks secret without --scope: usage error" "$st" "2"
out=$("$BOXCAR" webhooks rotate --scope acme/q 2>&1); st=$?
check "webhooks rotate with a queue for a scope is refused, naming the scope" grep -q 'scope must be a queue scope' <<<"$out"
out=$(env -u BOXCAR_WEBHOOK_SECRET "$BOXCAR" webhooks secret --scope acme 2>&1); st=$?
is "webhooks secret without the master key fails" "$st" "1"
check "  naming BOXCAR_WEBHOOK_SECRET" grep -q 'BOXCAR_WEBHOOK_SECRET' <<<"$out"
check "no webhook was left unsigned" bash -c "! grep -q webhook.unsigned '$BOXCAR_DEV/test-logs/wh-scopes.log'"
check "the worker's log holds no secret" bash -c "! grep -qF -e '${master#whsec_}' -e '${sa#whsec_}' -e '${sb#whsec_}' '$BOXCAR_DEV/test-logs/wh-scopes.log'"
tap_done
