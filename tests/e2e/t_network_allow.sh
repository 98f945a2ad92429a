# Network allow-lists, end to end.  The queue caps of --network-allow (a
# rule beyond the cap is BAD_SPEC naming it, a queue without a cap lets
# nothing through), then the enforcement against a "remote host" made here:
# a network namespace behind a veth pair, with HTTP on 8080 and 8081, a
# UDP listener and an IPv6 address.  Its name is in an /etc/hosts that only
# the workers see (their own mount namespace), and the egress proxy
# resolves names with getaddrinfo on the worker's side.  Each enforcement
# check has a control: the same command with network "host" gets through.
source "$(dirname "$0")/../lib.sh"
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1 || [[ $E2E_SANDBOX != namespace ]]; then
  skip "allow-lists need root, ip netns and the namespace sandbox"; tap_done; exit
fi
fresh_db e2e_network_allow
tmp=$(mktemp -d)
v6="fd00:bc:$((RANDOM % 9000 + 1000))"
alt=172.31.$((RANDOM % 250))  # the remote's second address: outside every rule
cleanup() { cleanup_bg; remote_host_down; rm -rf "$tmp"; }
trap cleanup EXIT

remote_host bcna
ip addr add "$alt.1/24" dev "$va"
ip -6 addr add "$v6::1/64" dev "$va" nodad
ip -n "$ns" addr add "$alt.2/24" dev "$vb"
ip -n "$ns" -6 addr add "$v6::2/64" dev "$vb" nodad
mkdir -p "$tmp/www"
echo "hello from the remote host" > "$tmp/www/hello.txt"
echo "the other port" > "$tmp/www/other.txt"
inns() { ip netns exec "$ns" "$@"; }
# 8080 on every address (IPv4 and IPv6: "::" is dual-stack), 8081 on one.
bg inns python3 -m http.server 8080 --bind :: --directory "$tmp/www" >/dev/null 2>&1
bg inns python3 -m http.server 8081 --bind "$remote" --directory "$tmp/www" >/dev/null 2>&1
# UDP: every datagram that arrives on 9999, one line each.
bg inns python3 -u -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9999))
while True:
    d, a = s.recvfrom(2048)
    print(d.decode(errors="replace"), flush=True)
' "$remote" >"$tmp/udp.log" 2>&1
wait_for "the remote host's servers" 20 bash -c "curl -sf http://$remote:8080/hello.txt && curl -sf http://$remote:8081/hello.txt && curl -sf -g 'http://[$v6::2]:8080/hello.txt'" >/dev/null

# The workers' /etc/hosts: allowed names for the remote (a private
# address: reached only through --allow-private-egress), one for the cloud
# metadata address.
printf '127.0.0.1 localhost\n%s remote.boxcar.test\n169.254.169.254 metadata.boxcar.test\n' \
  "$remote" > "$tmp/hosts"
printf '%s uncapped.boxcar.test\n%s x.wild.boxcar.test\n' "$remote" "$remote" >> "$tmp/hosts"
# A resolver for one of them: an address on the remote's network where
# nobody answers, so that a name outside /etc/hosts takes seconds to fail.
printf 'nameserver %s.3\noptions timeout:3 attempts:2\n' "$net" > "$tmp/resolv.conf"
# ns_worker NAME ARGS...: start_worker in a mount namespace with that file
# as /etc/hosts, and $RESOLV (default: the host's) as /etc/resolv.conf.
ns_worker() {
  local name=$1; shift
  mkdir -p "$BOXCAR_DEV/test-logs" "$BOXCAR_DEV/work"
  unshare -m sh -c 'mount --bind "$0" /etc/hosts && mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' \
    "$tmp/hosts" "${RESOLV:-/etc/resolv.conf}" \
    "$BOXCAR" worker --worker-id "$name" --work-dir "$BOXCAR_DEV/work/$name" "$@" \
    >"$BOXCAR_DEV/test-logs/$name.log" 2>&1 &
  WORKER_PID=$!
  _bg_pids+=($!)
}
caps="net=remote.boxcar.test:8080,slow.boxcar.test:8080,other.boxcar.test:8081,$net.0/24:8080,metadata.boxcar.test:80,uncapped.boxcar.test:8080,*.wild.boxcar.test:8080"
# The names the operator lets reach the remote's private address.
pcaps="net=remote.boxcar.test:8080,slow.boxcar.test:8080,other.boxcar.test:8081"
# Worker 1: lib.sh's opt-in (BOXCAR_ALLOW_PRIVATE_URLS=1), warm sandboxes.
mport=$(free_port)
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
ns_worker netallow --concurrency 2 --poll-interval 1s --sandbox namespace \
  --metrics-addr "127.0.0.1:$mport" \
  --queues ci,db,plain,net,hostnet --allow-host-network hostnet \
  --network-allow 'ci=pypi.org:443, *.pythonhosted.org:443' \
  --network-allow "db=10.2.0.0/16:5432;ci=files.example.com:443;$caps" --allow-private-egress "$pcaps"

enq() { echo "$2" | "$BOXCAR" enqueue --queue "$1" --max-attempts 1 --spec -; }
waitall() { for id in "$@"; do "$BOXCAR" status --wait "$id" >/dev/null; done; }
over_port=$(enq ci '{"command": ["true"], "network": {"allow": ["pypi.org:443", "pypi.org:80"]}}')
over_name=$(enq ci '{"command": ["true"], "network": {"allow": ["evil.pythonhosted.org.attacker.net:443"]}}')
apex=$(enq ci '{"command": ["true"], "network": {"allow": ["pythonhosted.org:443"]}}')
wide=$(enq db '{"command": ["true"], "network": {"allow": ["10.0.0.0/8:5432"]}}')
uncapped=$(enq plain '{"command": ["true"], "network": {"allow": ["pypi.org:443"]}}')
within=$(enq ci '{"command": ["true"], "network": {"allow": ["pypi.org:443", "a.b.pythonhosted.org:443", "*.pythonhosted.org:443", "files.example.com:443"]}}')
within_db=$(enq db '{"command": ["true"], "network": {"allow": ["10.2.3.0/24:5432"]}}')
none=$(enq plain '{"command": ["true"], "network": "none"}')
waitall $over_port $over_name $apex $wide $uncapped $within $within_db $none

beyond() { echo "failed BAD_SPEC network.allow[$1]: \"$2\" is not allowed for this queue on this worker (see boxcar worker --network-allow)"; }
row() { job_field "$1" "status || ' ' || (error->>'code') || ' ' || (error->>'message')"; }
is "a port beyond the cap is BAD_SPEC naming the rule" "$(row $over_port)" "$(beyond 1 pypi.org:80)"
is "a name that only contains an allowed suffix is beyond the cap" "$(row $over_name)" \
   "$(beyond 0 evil.pythonhosted.org.attacker.net:443)"
is "a wildcard cap does not cover its apex" "$(row $apex)" "$(beyond 0 pythonhosted.org:443)"
is "a network wider than the CIDR cap is beyond it" "$(row $wide)" "$(beyond 0 10.0.0.0/8:5432)"
is "a queue without a cap lets its jobs ask for nothing" "$(row $uncapped)" "$(beyond 0 pypi.org:443)"
is "BAD_SPEC is not retried" "$(job_field $over_port "attempts")" "1"
is "rules within the cap (names, names under a wildcard, a wildcard, a second --network-allow) run" \
   "$(job_field $within "status")" "succeeded"
is "so does a smaller network inside a CIDR cap" "$(job_field $within_db "status")" "succeeded"
is "a job asking for no network still runs" "$(job_field $none "status")" "succeeded"

# The probes: one line each, "name: what happened".
probe='
p() { n=$1; shift; if out=$("$@" 2>/dev/null); then echo "$n: ok $out"; else echo "$n: refused"; fi; }
get() { curl -sS -m 5 "$@"; }
p name_allowed get http://remote.boxcar.test:8080/hello.txt
p name_other_port get http://remote.boxcar.test:8081/other.txt
p cidr_allowed get http://'$remote':8080/hello.txt
p cidr_other_port get http://'$remote':8081/other.txt
p raw_ip_outside get http://'$alt'.2:8080/hello.txt
p loopback_on_allowed_port get http://127.0.0.1:8080/
p ipv6 get -g "http://['$v6'::2]:8080/hello.txt"
p uncapped_private get http://uncapped.boxcar.test:8080/hello.txt
p wildcard_private get http://x.wild.boxcar.test:8080/hello.txt
p dns_allowed getent ahostsv4 remote.boxcar.test
p dns_forbidden getent hosts forbidden.example.org
p dns_aaaa python3 -c "import socket; print(socket.getaddrinfo(\"remote.boxcar.test\", 8080, socket.AF_INET6))"
p udp python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"leak-$0\", (\"'$remote'\", 9999)); s.sendto(b\"leak-$0\", (\"'$remote'\", 9999))"
p udp_elsewhere python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"q\", (\"'$alt'.2\", 53))"
'
spec() { # NETWORK TAG
  jq -cn --arg s "$probe" --arg tag "$2" --argjson net "$1" '{command: ["sh", "-c", $s, $tag], network: $net}'
}
allow='{"allow": ["remote.boxcar.test:8080", "other.boxcar.test:8081", "'$net'.0/24:8080", "uncapped.boxcar.test:8080", "*.wild.boxcar.test:8080"]}'
# The allow-list job alone, once a warm sandbox is ready: it takes one.
wait_for "a ready warm sandbox" 30 bash -c "curl -s http://127.0.0.1:$mport/metrics | grep -q '^boxcar_warm_sandboxes{state=\"ready\"} [1-9]'"
warm_before=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
allowed=$(enq net "$(spec "$allow" allowlist)")
waitall $allowed
is "the allow-list job ran in a warm sandbox (its rules set up at handoff)" \
   "$(metric 'boxcar_sandbox_starts_total{path="warm"}')" "$((${warm_before:-0} + 1))"
control=$(enq hostnet "$(spec '"host"' host)")
waitall $control
line() { job_field "$1" "result->>'stdout'" | grep "^$2: " | head -1 | cut -d' ' -f2-; }
diag "allow-list: $(job_field $allowed "result->>'stdout'" | tr '\n' '|')"
diag "host: $(job_field $control "result->>'stdout'" | tr '\n' '|')"
is "allow-list: an allowed name:port is reached, content and all" "$(line $allowed name_allowed)" \
   "ok hello from the remote host"
is "allow-list: an allowed CIDR:port is reached" "$(line $allowed cidr_allowed)" "ok hello from the remote host"
for c in name_other_port cidr_other_port raw_ip_outside loopback_on_allowed_port ipv6 udp_elsewhere; do
  is "allow-list: $c is refused" "$(line $allowed $c)" "refused"
done
# --allow-private-urls (on here) is about the specs' URLs: an allow-list's
# name reaches a private address only through --allow-private-egress.
is "with --allow-private-urls, a capped name not in --allow-private-egress does not reach its private address" \
   "$(line $allowed uncapped_private)" "refused"
is "nor does a name under a wildcard rule (a public rule never reaches private addresses)" \
   "$(line $allowed wildcard_private)" "refused"
check "allow-list: an allowed name resolves (to a synthetic address)" \
  grep -q '^ok 100\.127\.' <<<"$(line $allowed dns_allowed)"
is "allow-list: a forbidden name gets no answer" "$(line $allowed dns_forbidden)" "refused"
is "allow-list: no IPv6 address for an allowed name" "$(line $allowed dns_aaaa)" "refused"
is "control (host): the other port is reached" "$(line $control cidr_other_port)" "ok the other port"
is "control (host): IPv6 is reached" "$(line $control ipv6)" "ok hello from the remote host"
is "control (host): the address outside the rules is reached" "$(line $control raw_ip_outside)" \
   "ok hello from the remote host"
is "control (host): UDP elsewhere is sent" "$(line $control udp_elsewhere)" "ok "
sleep 1
is "UDP from the allow-list job reaches nothing, from the host job it arrives" \
   "$(sort -u "$tmp/udp.log" | tr '\n' ' ')" "leak-host "

# Accounting: bytes and connections in the result, refusals in the events.
res() { job_field "$allowed" "result->'network'->>'$1'"; }
check "the result counts bytes in ($(res bytes_in)) and out ($(res bytes_out))" \
  test "$(res bytes_in)" -gt 200 -a "$(res bytes_out)" -gt 100
check "the result counts the two proxied connections ($(res connections))" test "$(res connections)" -eq 2
check "and the refused attempts ($(res refused))" test "$(res refused)" -ge 3
events=$(sql "select details from boxcar.job_events where job_id = '$allowed' and kind = 'network_refused'")
diag "events: $events"
for t in 'remote.boxcar.test:8081' '127.0.0.1:8080' 'forbidden.example.org (DNS)'; do
  check "the refused $t is in the job's events" grep -qF "\"$t\"" <<<"$events"
done
is "/metrics counts the bytes in" "$(metric 'boxcar_egress_bytes_total{direction="in"}')" "$(res bytes_in)"
is "/metrics counts the refused attempts" "$(metric 'boxcar_egress_connections_total{result="refused"}')" \
   "$(res refused)"
is "a job without an allow-list has no network accounting" "$(job_field $control "result ? 'network'")" "f"

# A name whose resolution hangs (the resolver does not answer) stalls
# neither the job's other connections nor its timeout: the worker's side
# resolves it in a process of its own.
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
RESOLV=$tmp/resolv.conf ns_worker slowdns --concurrency 1 --poll-interval 1s --sandbox namespace \
  --queues net --network-allow "$caps" --allow-private-egress "$pcaps"
slow_probe='
t0=$(date +%s%N)
curl -sS -m 30 http://slow.boxcar.test:8080/hello.txt >/dev/null 2>&1 &
sleep 0.5
out=$(curl -sS -m 10 http://'$remote':8080/hello.txt)
echo "fast: $out $(( ($(date +%s%N) - t0) / 1000000 ))"
sleep 60'
slow=$(enq net "$(jq -cn --arg s "$slow_probe" '{command: ["sh", "-c", $s], limits: {timeout_s: 4}, network: {allow: ["slow.boxcar.test:8080", "'$net'.0/24:8080"]}}')")
waitall $slow
fast=$(job_field $slow "result->>'stdout'")
diag "while resolving: $fast, wall $(job_field $slow "result->>'wall_ms'") ms"
check "a connection to an allowed address goes through while a name is being resolved" \
  bash -c '[[ $1 =~ ^fast:\ hello\ from\ the\ remote\ host\ ([0-9]+)$ ]] && (( BASH_REMATCH[1] < 2500 ))' _ "$fast"
slow_wall=$(job_field $slow "result->>'wall_ms'")
is "and the job is killed at its timeout" "$(job_field $slow "error->>'code'")" "TIMEOUT"
check "at it, not after the resolver's seconds ($slow_wall ms)" test "$slow_wall" -lt 5500

# Worker 2: no opt-in for private URLs, no warm sandboxes (the cold
# path).  An allowed name that resolves to a private address is refused
# unless --allow-private-egress names it for the queue; the metadata
# address never; an operator-capped CIDR is connected as written.
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
unset BOXCAR_ALLOW_PRIVATE_URLS
ns_worker strict --concurrency 1 --poll-interval 1s --sandbox namespace \
  --warm-sandboxes 0 --queues net --network-allow "$caps" \
  --allow-private-egress "net=remote.boxcar.test:8080,metadata.boxcar.test:80"
guard_probe='
p() { n=$1; shift; if out=$("$@" 2>/dev/null); then echo "$n: ok $out"; else echo "$n: refused"; fi; }
p private_name curl -sS -m 5 http://remote.boxcar.test:8080/hello.txt
p uncapped_name curl -sS -m 5 http://uncapped.boxcar.test:8080/hello.txt
p wildcard_name curl -sS -m 5 http://x.wild.boxcar.test:8080/hello.txt
p metadata_name curl -sS -m 5 http://metadata.boxcar.test/
p cidr curl -sS -m 5 http://'$remote':8080/hello.txt
'
guarded=$(enq net "$(jq -cn --arg s "$guard_probe" '{command: ["sh", "-c", $s], network: {allow: ["remote.boxcar.test:8080", "uncapped.boxcar.test:8080", "*.wild.boxcar.test:8080", "metadata.boxcar.test:80", "'$net'.0/24:8080"]}}')")
waitall $guarded
diag "guarded: $(job_field $guarded "result->>'stdout'" | tr '\n' '|')"
is "a name the queue's --allow-private-egress names reaches its private address" \
   "$(line $guarded private_name)" "ok hello from the remote host"
is "SSRF guard: another allowed name resolving to the same private address is refused" \
   "$(line $guarded uncapped_name)" "refused"
is "SSRF guard: and a name under a wildcard rule" "$(line $guarded wildcard_name)" "refused"
is "SSRF guard: the metadata address is refused, even named in --allow-private-egress" \
   "$(line $guarded metadata_name)" "refused"
is "an operator-capped CIDR is reached as written" "$(line $guarded cidr)" "ok hello from the remote host"
events=$(sql "select details from boxcar.job_events where job_id = '$guarded' and kind = 'network_refused'")
check "the event names the name, the address and the range" \
  grep -qF "uncapped.boxcar.test:8080 (resolves to $remote, private 10.0.0.0/8)" <<<"$events"
check "and the metadata one" grep -qF "metadata.boxcar.test:80 (resolves to 169.254.169.254, the cloud metadata service" <<<"$events"

# Plain processes (--sandbox none) have the host's network: an allow-list
# cannot be enforced there, so it is refused.
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
start_worker plain --concurrency 1 --poll-interval 1s --sandbox none --queues net --network-allow "$caps"
dev=$(enq net '{"command": ["true"], "network": {"allow": ["remote.boxcar.test:8080"]}}')
waitall $dev
is "--sandbox none: an allow-list job is BAD_SPEC" "$(row $dev)" \
   "failed BAD_SPEC network.allow: needs the isolating backend (this worker runs --sandbox none)"

# The worker refuses a malformed cap at start, naming the flag and the rule.
out=$("$BOXCAR" worker --network-allow 'ci=pypi.org' 2>&1); rc=$?
is "a malformed cap is a usage error (exit 2)" "$rc" "2"
check "which names the flag and the rule" grep -q "^.*--network-allow: 'pypi.org': must be \"name:port\"" <<<"$out"
out=$("$BOXCAR" worker --allow-private-egress 'ci=*.corp.internal:5432' 2>&1); rc=$?
is "a wildcard in --allow-private-egress is a usage error (exit 2)" "$rc" "2"
check "which says why" grep -qF "'*.corp.internal:5432': a wildcard cannot reach private addresses" <<<"$out"
out=$("$BOXCAR" worker --allow-private-egress 'ci=0.0.0.0/0:443' 2>&1); rc=$?
check "so is a CIDR wider than one private range ($rc)" \
  bash -c '[[ $1 == 2 ]] && grep -qF "not a private network" <<<"$2"' _ "$rc" "$out"
out=$("$BOXCAR" worker --network-allow 'ci=169.254.169.254:80' 2>&1); rc=$?
check "and a cap naming the metadata address ($rc)" \
  bash -c '[[ $1 == 2 ]] && grep -qF "169.254.169.254 is the cloud metadata service" <<<"$2"' _ "$rc" "$out"
# boxcar.enqueue refuses a rule naming the metadata address.
out=$(echo '{"command": ["true"], "network": {"allow": ["169.254.169.254:80"]}}' | "$BOXCAR" enqueue --queue net --spec - 2>&1); rc=$?
check "enqueue refuses a rule naming the metadata address ($rc)" \
  bash -c '[[ $1 != 0 ]] && grep -qF "network.allow[0]: 169.254.169.254 is the cloud metadata service, which no rule reaches" <<<"$2"' _ "$rc" "$out"
tap_done
