# The SSRF guard on the worker's own requests: volume URLs and webhooks
# from job specs may not reach internal addresses unless the operator
# allows them, judged on the address really connected (a name, an
# IPv4-mapped IPv6 literal, a DNS server that rebinds its answer).
source "$(dirname "$0")/../lib.sh"
# This test checks the default: its workers do NOT get lib.sh's opt-in.
unset BOXCAR_ALLOW_PRIVATE_URLS BOXCAR_ALLOW_URL_CIDRS
fresh_db e2e_url_guard
tmp=$(mktemp -d)
own=""  # the worker host's own public-looking address, added to lo below (root)
trap 'cleanup_bg; [[ -z $own ]] || ip addr del "$own/32" dev lo 2>/dev/null; rm -rf "$tmp"' EXIT
finished() { [[ $(sql "select status from boxcar.jobs where id = '$1'") =~ ^(succeeded|failed|cancelled)$ ]]; }
run_job() { # QUEUE SPEC: enqueue with one attempt, wait, print the id
  local id
  id=$(echo "$2" | "$BOXCAR" enqueue --queue "$1" --max-attempts 1 --spec -) || return 1
  wait_for "job on $1 finished" 60 finished "$id"
  echo "$id"
}
vol_spec() { echo '{"command": ["cat", "/mnt/v/hello.txt"], "volumes": [{"name": "v", "mount": "/mnt/v", "url": "'"$1"'"}]}'; }
stop_worker() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }

# The servers: the same volume on 127.0.0.1 and on 127.0.0.2 (the stand-in
# for a public address in the rebinding check), each with its own log.
mkdir -p "$tmp/vol" "$tmp/www"
echo guarded > "$tmp/vol/hello.txt"
tar czf "$tmp/www/v.tar.gz" -C "$tmp/vol" .
port=$(free_port)
bg python3 -u -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/www" >/dev/null 2>>"$tmp/srv1.log"
bg python3 -u -m http.server "$port" --bind 127.0.0.2 --directory "$tmp/www" >/dev/null 2>>"$tmp/srv2.log"
# On 127.0.0.2 too: a server that redirects every request to 127.0.0.1.
rport=$(free_port 127.0.0.2)
bg python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", sys.argv[2])
        self.end_headers()
http.server.HTTPServer(("127.0.0.2", int(sys.argv[1])), H).serve_forever()
' "$rport" "http://127.0.0.1:$port/v.tar.gz" >/dev/null 2>&1
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
bg python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port 0 --port-file "$tmp/hook.port" \
   --log "$tmp/hooks.log" --secret "$(webhook_secrets_of ug ug-allow ug-rebind ug-op)" >/dev/null
up() { curl -sf "http://127.0.0.1:$port/v.tar.gz" -o /dev/null &&
  curl -sf "http://127.0.0.2:$port/v.tar.gz" -o /dev/null &&
  curl -s "http://127.0.0.2:$rport/" -o /dev/null && test -s "$tmp/hook.port"; }
wait_for "servers up" 30 up || { not_ok "the test servers started"; tap_done; exit 1; }
hook="http://127.0.0.1:$(cat "$tmp/hook.port")/hooks"
: > "$tmp/srv1.log"; : > "$tmp/srv2.log"
got_get() { grep -c 'GET /v.tar.gz' "$1"; }

# ---- the default: refused, with the address and the options named ------------
start_worker ug-default --queues ug --poll-interval 300ms --sandbox "$E2E_SANDBOX"
w=$WORKER_PID
j=$(run_job ug "$(vol_spec "http://127.0.0.1:$port/v.tar.gz")")
is "a volume URL on 127.0.0.1 fails the job" "$(job_field "$j" status)" failed
is "as BAD_SPEC" "$(job_field "$j" "error->>'code'")" BAD_SPEC
msg=$(job_field "$j" "error->>'message'")
check "the message names the address and its range: $msg" grep -q 'refused to connect to 127.0.0.1 (loopback 127.0.0.0/8)' <<<"$msg"
check "and the options that allow it" bash -c 'grep -q -- "--allow-private-urls" <<<"$1" && grep -q -- "--allow-url-cidr" <<<"$1"' _ "$msg"
is "it was not retried" "$(job_field "$j" attempts)" 1
is "the server on 127.0.0.1 got no request" "$(got_get "$tmp/srv1.log")" 0

j=$(run_job ug "$(vol_spec "http://localhost:$port/v.tar.gz")")
msg=$(job_field "$j" "error->>'message'")
check "a name resolving to loopback (localhost) is refused on the resolved address: $msg" \
  grep -qE 'refused to connect to (127\.0\.0\.1|::1) \(loopback' <<<"$msg"
j=$(run_job ug "$(vol_spec "http://[::ffff:127.0.0.1]:$port/v.tar.gz")")
msg=$(job_field "$j" "error->>'message'")
check "an IPv4-mapped IPv6 loopback is refused: $msg" grep -q 'refused to connect to ::ffff:127.0.0.1 (loopback 127' <<<"$msg"
j=$(run_job ug "$(vol_spec "http://169.254.169.254/latest/meta-data/")")
msg=$(job_field "$j" "error->>'message'")
check "the cloud metadata address is refused: $msg" grep -q 'refused to connect to 169.254.169.254 (link-local 169.254.0.0/16 (cloud metadata))' <<<"$msg"
is "no request reached 127.0.0.1 in all that" "$(got_get "$tmp/srv1.log")" 0
# The worker host's own address that no special range covers (a public IP
# on a cloud VM), with the volume server on it: still the worker's own
# services, refused.
cand=11.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
if [[ $(id -u) -eq 0 ]] && ip addr add "$cand/32" dev lo 2>/dev/null; then
  own=$cand
  bg python3 -u -m http.server "$port" --bind "$own" --directory "$tmp/www" >/dev/null 2>>"$tmp/srv3.log"
  wait_for "server on $own" 10 curl -sf "http://$own:$port/v.tar.gz" -o /dev/null
  : > "$tmp/srv3.log"
  j=$(run_job ug "$(vol_spec "http://$own:$port/v.tar.gz")")
  msg=$(job_field "$j" "error->>'message'")
  check "an address of the worker host itself is refused: $msg" \
    grep -q "refused to connect to $own (an address of the worker host)" <<<"$msg"
  is "and its server got no request" "$(got_get "$tmp/srv3.log")" 0
else
  skip "an address of the worker host itself (needs root to add one to lo)"
  skip "and its server got no request"
fi

j=$(run_job ug '{"command": ["true"], "webhook": {"url": "'"$hook"'"}}')
is "a job with a webhook on 127.0.0.1 succeeds" "$(job_field "$j" status)" succeeded
tried() { [[ $(sql "select attempts from boxcar.webhook_deliveries where job_id = '$j'") -ge 1 ]]; }
wait_for "delivery tried" 20 tried
err=$(sql "select last_error from boxcar.webhook_deliveries where job_id = '$j'")
check "its delivery attempt is refused, naming the address: $err" grep -q 'refused to connect to 127.0.0.1 (loopback 127.0.0.0/8).*--allow-private-urls' <<<"$err"
is "the delivery stays pending for a retry" "$(sql "select status from boxcar.webhook_deliveries where job_id = '$j'")" pending
is "the receiver got nothing" "$(cat "$tmp/hooks.log" 2>/dev/null | wc -l)" 0
stop_worker "$w"

# ---- opted in: the same requests go through ----------------------------------------
start_worker ug-allow --queues ug-allow --poll-interval 300ms --sandbox "$E2E_SANDBOX" \
  --allow-url-cidr 127.0.0.0/8
w=$WORKER_PID
j=$(run_job ug-allow "$(vol_spec "http://127.0.0.1:$port/v.tar.gz")")
is "with --allow-url-cidr 127.0.0.0/8 the volume on 127.0.0.1 is fetched" "$(job_field "$j" status)/$(job_field "$j" "result->>'stdout'")" "succeeded/guarded"
is "the server on 127.0.0.1 served it" "$(got_get "$tmp/srv1.log")" 1
j=$(run_job ug-allow '{"command": ["true"], "webhook": {"url": "'"$hook"'"}}')
delivered() { [[ $(sql "select status from boxcar.webhook_deliveries where job_id = '$j'") == delivered ]]; }
check "and its webhook to 127.0.0.1 is delivered" wait_for "delivered" 20 delivered
check "the receiver logged it" grep -q "$j" "$tmp/hooks.log"
stop_worker "$w"
: > "$tmp/srv1.log"

# ---- DNS rebinding: the answer changes between lookups ------------------------------
# A worker in its own mount namespace, whose resolv.conf points at a DNS
# server that answers rebind.boxcar.test with 127.0.0.2 (allowed here, the
# "public" address) once, then with 127.0.0.1.  A check made on the name, or
# on a lookup of its own before libcurl's, would pass the second job; the
# guard judges the address libcurl connects to.
dns=127.53.12.1
echo "nameserver $dns" > "$tmp/resolv.conf"
bg python3 "$BOXCAR_ROOT/tests/e2e/dns_rebind.py" "$dns" rebind.boxcar.test 127.0.0.2 127.0.0.1 \
  "$tmp/dns.log" "$tmp/dns.ready"
wait_for "DNS server up" 10 test -e "$tmp/dns.ready" || not_ok "the test DNS server started"
mkdir -p "$BOXCAR_DEV/work"
bg unshare -m bash -c 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' _ "$tmp/resolv.conf" \
  "$BOXCAR" worker --worker-id ug-rebind --work-dir "$BOXCAR_DEV/work/ug-rebind" --queues ug-rebind \
  --poll-interval 300ms --sandbox "$E2E_SANDBOX" --allow-url-cidr 127.0.0.2/32 \
  >"$BOXCAR_DEV/test-logs/ug-rebind.log" 2>&1
rw=$!
url="http://rebind.boxcar.test:$port/v.tar.gz"
j=$(run_job ug-rebind "$(vol_spec "$url")")
is "first lookup (127.0.0.2, allowed): the volume is fetched" "$(job_field "$j" status)/$(job_field "$j" "result->>'stdout'")" "succeeded/guarded"
is "from 127.0.0.2" "$(got_get "$tmp/srv2.log")" 1
j=$(run_job ug-rebind "$(vol_spec "$url")")
msg=$(job_field "$j" "error->>'message'")
is "second lookup (rebound to 127.0.0.1): BAD_SPEC" "$(job_field "$j" "error->>'code'")" BAD_SPEC
check "naming the rebound address: $msg" grep -q 'refused to connect to 127.0.0.1 (loopback' <<<"$msg"
is "the server on 127.0.0.1 got no request" "$(got_get "$tmp/srv1.log")" 0
is "the DNS server answered 127.0.0.2 then 127.0.0.1" "$(head -2 "$tmp/dns.log" | tr '\n' ' ')" "A 127.0.0.2 A 127.0.0.1 "

# A redirect from an allowed address to a refused one: each hop is judged.
j=$(run_job ug-rebind "$(vol_spec "http://127.0.0.2:$rport/v.tar.gz")")
msg=$(job_field "$j" "error->>'message'")
check "a redirect from 127.0.0.2 (allowed) to 127.0.0.1 is refused at the second hop: $msg" \
  grep -q 'refused to connect to 127.0.0.1 (loopback' <<<"$msg"
is "and 127.0.0.1 got no request" "$(got_get "$tmp/srv1.log")" 0
stop_worker "$rw"

# ---- the operator's own receiver (BOXCAR_WEBHOOK_URL) is trusted -------------------
BOXCAR_WEBHOOK_URL="$hook" start_worker ug-operator --queues ug-op --poll-interval 300ms \
  --sandbox "$E2E_SANDBOX"
j=$(run_job ug-op '{"command": ["true"]}')
check "a job without a URL gets the operator's 127.0.0.1 receiver, delivered without opt-in" \
  wait_for "delivered" 20 delivered
check "the receiver logged it" grep -q "$j" "$tmp/hooks.log"
j=$(run_job ug-op '{"command": ["true"], "webhook": {"url": "http://localhost:'"$(cat "$tmp/hook.port")"'/hooks"}}')
wait_for "delivery tried" 20 tried
err=$(sql "select last_error from boxcar.webhook_deliveries where job_id = '$j'")
check "a spec's URL of another origin (localhost) is still refused: $err" grep -q 'refused to connect to' <<<"$err"

tap_done
