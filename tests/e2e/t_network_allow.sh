# Network allow-lists on the worker: the queue caps of --network-allow
# (a rule beyond the cap is BAD_SPEC naming it, a queue without a cap lets
# nothing through), and, while the sandbox cannot enforce allow-lists, a
# job within its cap refused rather than run with another network.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_network_allow
start_worker netallow --concurrency 2 --poll-interval 1s --sandbox "$E2E_SANDBOX" \
  --queues ci,db,plain \
  --network-allow 'ci=pypi.org:443, *.pythonhosted.org:443' \
  --network-allow 'db=10.2.0.0/16:5432;ci=files.example.com:443'

enq() { echo "$2" | "$BOXCAR" enqueue --queue "$1" --spec -; }
over_port=$(enq ci '{"command": ["true"], "network": {"allow": ["pypi.org:443", "pypi.org:80"]}}')
over_name=$(enq ci '{"command": ["true"], "network": {"allow": ["evil.pythonhosted.org.attacker.net:443"]}}')
apex=$(enq ci '{"command": ["true"], "network": {"allow": ["pythonhosted.org:443"]}}')
wide=$(enq db '{"command": ["true"], "network": {"allow": ["10.0.0.0/8:5432"]}}')
uncapped=$(enq plain '{"command": ["true"], "network": {"allow": ["pypi.org:443"]}}')
within=$(enq ci '{"command": ["true"], "network": {"allow": ["pypi.org:443", "a.b.pythonhosted.org:443", "*.pythonhosted.org:443", "files.example.com:443"]}}')
within_db=$(enq db '{"command": ["true"], "network": {"allow": ["10.2.3.0/24:5432"]}}')
none=$(enq plain '{"command": ["true"], "network": "none"}')
for id in $over_port $over_name $apex $wide $uncapped $within $within_db $none; do
  "$BOXCAR" status --wait "$id" >/dev/null
done

beyond() { echo "failed BAD_SPEC network.allow[$1]: \"$2\" is not allowed for this queue on this worker (see boxcar worker --network-allow)"; }
row() { job_field "$1" "status || ' ' || (error->>'code') || ' ' || (error->>'message')"; }
is "a port beyond the cap is BAD_SPEC naming the rule" "$(row $over_port)" "$(beyond 1 pypi.org:80)"
is "a name that only contains an allowed suffix is beyond the cap" "$(row $over_name)" \
   "$(beyond 0 evil.pythonhosted.org.attacker.net:443)"
is "a wildcard cap does not cover its apex" "$(row $apex)" "$(beyond 0 pythonhosted.org:443)"
is "a network wider than the CIDR cap is beyond it" "$(row $wide)" "$(beyond 0 10.0.0.0/8:5432)"
is "a queue without a cap lets its jobs ask for nothing" "$(row $uncapped)" "$(beyond 0 pypi.org:443)"
unenforced='failed BAD_SPEC network.allow: this worker does not enforce allow-lists yet (use "none" or "host")'
is "rules within the cap (names, names under a wildcard, a wildcard, a second --network-allow) pass it, and the job is refused, not run, while allow-lists are not enforced" \
   "$(row $within)" "$unenforced"
is "so does a smaller network inside a CIDR cap" "$(row $within_db)" "$unenforced"
is "a job asking for no network still runs" "$(job_field $none "status")" "succeeded"
is "BAD_SPEC is not retried" "$(job_field $within "attempts")" "1"

# The worker refuses a malformed cap at start, naming the flag and the rule.
out=$("$BOXCAR" worker --network-allow 'ci=pypi.org' 2>&1); rc=$?
is "a malformed cap is a usage error (exit 2)" "$rc" "2"
check "which names the flag and the rule" grep -q "^.*--network-allow: 'pypi.org': must be \"name:port\"" <<<"$out"
tap_done
