#!/usr/bin/env bash
# Proves the test receiver can fail: requests are signed here with the
# openssl command line (a third implementation, neither boxcar's nor the
# receiver's), and the receiver must accept the good ones, the Standard
# Webhooks test vector included, and reject a changed body, a wrong secret,
# a stale timestamp and a missing header.  Then its modes: a sequence,
# Retry-After, 410, sleep, close, the control file, --per-id.  TAP output.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT

n=0 failed=0
ok()     { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
is() { if [[ "$2" == "$3" ]]; then ok "$1"; else not_ok "$1"; echo "#   got: '$2'"; echo "#  want: '$3'"; fi; }

SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
OTHER=whsec_QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkI=

# sign SECRET ID TS BODY -> "v1,<b64>"
sign() {
  local hex
  hex=$(printf '%s' "${1#whsec_}" | base64 -d | xxd -p -c 256)
  printf 'v1,%s' "$(printf '%s.%s.%s' "$2" "$3" "$4" |
    openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hex" -binary | base64 -w0)"
}

# start NAME ARGS...: a receiver; its port in PORT_<NAME>
start() {
  local name=$1; shift
  python3 "$here/receiver.py" --secret "$SECRET" --port-file "$tmp/$name.port" \
    --log "$tmp/$name.log" "$@" >"$tmp/$name.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [[ -s $tmp/$name.port ]] && break; sleep 0.05; done
  printf -v "PORT_$name" '%s' "$(cat "$tmp/$name.port" 2>/dev/null)"
}

# post PORT ID TS SIG BODY [CURL ARGS] -> prints the HTTP status (000 on no answer)
post() {
  local port=$1 id=$2 ts=$3 sig=$4 body=$5; shift 5
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" \
    -H 'Content-Type: application/json' -H "webhook-id: $id" \
    -H "webhook-timestamp: $ts" -H "webhook-signature: $sig" \
    --data-binary "$body" "http://127.0.0.1:$port/hook"
}

# last NAME FIELD -> that field of the last log line
last() { tail -n 1 "$tmp/$1.log" | python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)['$2']))"; }

# The signer here must itself reproduce the spec's test vector.
is "openssl signer reproduces the test vector" \
  "$(sign "$SECRET" msg_p5jXN8AQM9LWM0D4loKWxJek 1614265330 '{"test": 2432232314}')" \
  "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

start main
[[ -n $PORT_main ]] && ok "receiver started on port $PORT_main" || { not_ok "receiver started"; cat "$tmp/main.out"; exit 1; }
is "stdout has the port" "$(head -n 1 "$tmp/main.out")" "$PORT_main"

now=$(date +%s)
body='{"type": "job.succeeded", "data": {"job_id": "j1"}}'
good=$(sign "$SECRET" msg_1 "$now" "$body")
is "valid signature: 200" "$(post "$PORT_main" msg_1 "$now" "$good" "$body")" 200
is "  recorded valid" "$(last main valid)" true
is "  recorded the id" "$(last main webhook_id)" '"msg_1"'
is "  recorded the body as JSON" "$(last main body)" '{"data": {"job_id": "j1"}, "type": "job.succeeded"}'

is "changed body: 401" "$(post "$PORT_main" msg_1 "$now" "$good" "${body/j1/j2}")" 401
is "  recorded signature_valid false" "$(last main signature_valid)" false
is "  reason" "$(last main reason)" '"no matching signature"'

is "changed id: 401" "$(post "$PORT_main" msg_2 "$now" "$good" "$body")" 401
is "wrong secret: 401" \
  "$(post "$PORT_main" msg_1 "$now" "$(sign "$OTHER" msg_1 "$now" "$body")" "$body")" 401
old=$((now - 1000))
is "stale timestamp: 401" \
  "$(post "$PORT_main" msg_1 "$old" "$(sign "$SECRET" msg_1 "$old" "$body")" "$body")" 401
is "  signature itself valid" "$(last main signature_valid)" true
is "  timestamp_ok false" "$(last main timestamp_ok)" false
is "no signature header: 401" "$(post "$PORT_main" msg_1 "$now" "" "$body")" 401
is "rotation: a second, unknown signature beside the good one: 200" \
  "$(post "$PORT_main" msg_1 "$now" "$(sign "$OTHER" msg_1 "$now" "$body") $good" "$body")" 200

# The spec's vector, checked by the receiver's own code (timestamp check off).
start vec --tolerance -1
vbody='{"test": 2432232314}'
vsig="v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
is "test vector accepted by the receiver" \
  "$(post "$PORT_vec" msg_p5jXN8AQM9LWM0D4loKWxJek 1614265330 "$vsig" "$vbody")" 200
is "test vector with one byte changed rejected" \
  "$(post "$PORT_vec" msg_p5jXN8AQM9LWM0D4loKWxJek 1614265330 "$vsig" '{"test": 2432232315}')" 401

# Modes, through the admin endpoint.
mode() { curl -s -o /dev/null -w '%{http_code}' --data-binary "$2" "http://127.0.0.1:$1/_admin/mode"; }
send() { local t; t=$(date +%s); post "$PORT_main" "$1" "$t" "$(sign "$SECRET" "$1" "$t" "$body")" "$body" "${@:2}"; }
is "admin sets a mode" "$(mode "$PORT_main" '500;500;200')" 200
is "sequence: 500" "$(send msg_s)" 500
is "sequence: 500 again" "$(send msg_s)" 500
is "sequence: then 200" "$(send msg_s)" 200
is "sequence: last answer repeats" "$(send msg_s)" 200
is "bad mode refused" "$(mode "$PORT_main" 'teapot')" 400
mode "$PORT_main" 410 >/dev/null
is "410" "$(send msg_g)" 410
mode "$PORT_main" 'retry-after:7' >/dev/null
ra=$(t=$(date +%s); curl -s -D - -o /dev/null -H "webhook-id: msg_r" -H "webhook-timestamp: $t" \
  -H "webhook-signature: $(sign "$SECRET" msg_r "$t" "$body")" --data-binary "$body" \
  "http://127.0.0.1:$PORT_main/hook" | tr -d '\r' | awk -F': ' 'tolower($1)=="retry-after"{print $2}')
is "Retry-After sent" "$ra" 7
mode "$PORT_main" 'sleep:1.2' >/dev/null
start_ms=$(date +%s%3N); st=$(send msg_z); took=$(( $(date +%s%3N) - start_ms ))
is "sleep: answered 200" "$st" 200
(( took >= 1100 )) && ok "sleep: took ${took} ms" || not_ok "sleep: took only ${took} ms"
is "sleep beyond the client's timeout: no answer" "$(send msg_z2 --max-time 0.3)" 000
is "  still recorded" "$(last main webhook_id)" '"msg_z2"'
mode "$PORT_main" close >/dev/null
is "close: no answer" "$(send msg_c)" 000
mode "$PORT_main" '302,location=http://127.0.0.1:1/' >/dev/null
is "redirect answer" "$(send msg_l)" 302

# Control file and per-id sequences.
start ctl --control "$tmp/ctl.mode" --per-id --mode '500;200'
sendc() { local t; t=$(date +%s); post "$PORT_ctl" "$1" "$t" "$(sign "$SECRET" "$1" "$t" "$body")" "$body"; }
is "per-id: a first 500" "$(sendc a)" 500
is "per-id: b first 500" "$(sendc b)" 500
is "per-id: a then 200" "$(sendc a)" 200
echo 410 >"$tmp/ctl.mode"
is "control file switches the mode" "$(sendc a)" 410
is "stats count requests" \
  "$(curl -s "http://127.0.0.1:$PORT_ctl/_admin/stats" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["requests"], d["ids"], d["valid"])')" "4 2 4"
is "every log line is JSON" "$(cat "$tmp"/*.log | python3 -c 'import json,sys; print(all(json.loads(l) for l in sys.stdin))')" True

echo "1..$n"
[[ $failed -eq 0 ]]
