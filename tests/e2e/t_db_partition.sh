# A worker cut off from PostgreSQL without a word (its link down: packets
# dropped, no reset, no refusal, as behind a failed switch or a NAT that
# forgot the connection) notices within seconds and says so (db.lost),
# rather than hanging in a statement for the kernel's retransmissions
# (about 15 minutes); a worker that still reaches the database rescues
# its jobs; once the link is back, the first worker takes jobs again.
# The workers are separate hosts: network namespaces on a bridge
# (scripts/replicas-net.sh).
source "$(dirname "$0")/../lib.sh"
netns_hosts e2e_partition 2
url=$NETNS_URL
log() { echo "$BOXCAR_DEV/test-logs/part-$1.log"; }
mkdir -p "$BOXCAR_DEV/work"
declare -A wpid
for i in 1 2; do
  DATABASE_URL=$url nsenter --net="$(rn_netns "$i")" -- "$BOXCAR" worker --worker-id "part-$i" \
      --work-dir "$BOXCAR_DEV/work/part-$i" --concurrency 2 --lease 3s --poll-interval 500ms \
      --sandbox none >"$(log $i)" 2>&1 &
  _bg_pids+=($!) wpid[$i]=$!
done
registered() { [[ $(sql "select count(*) from boxcar.workers where state = 'running'") == 2 ]]; }
check "both workers register" wait_for "registered" 30 registered
sql "select count(boxcar.enqueue('default', '{\"command\": [\"sleep\", \"3\"]}')) from generate_series(1, 4)" >/dev/null
on_1() { (( $(sql "select count(*) from boxcar.jobs where status = 'running' and worker_id = 'part-1'") > 0 )); }
check "worker 1 runs jobs" wait_for "worker 1 busy" 20 on_1

# The cut: worker 1's veth goes down on the host's side.
ip link set "${_rn_tag}h1" down
cut=$(date +%s)
if wait_for "db.lost" 25 grep -q 'event=db.lost' "$(log 1)"; then
  ok "worker 1 notices the silent cut and says so ($(( $(date +%s) - cut )) s)"
else not_ok "worker 1 notices the silent cut"; tail -3 "$(log 1)" | sed 's/^/# /'; fi
done_all() { [[ $(sql "select count(*) from boxcar.jobs where status = 'succeeded'") == 4 ]]; }
check "its jobs are rescued and finished by worker 2" wait_for "all succeeded" 60 done_all

# Healed: worker 1 reconnects and takes jobs again (worker 2 stopped, so
# that the new jobs can only be worker 1's).
ip link set "${_rn_tag}h1" up
healed() { (( $(grep -c 'event=db.connected' "$(log 1)") >= 2 )); }
check "worker 1 reconnects once the link is back" wait_for "reconnected" 30 healed
kill -TERM "${wpid[2]}"; wait "${wpid[2]}" 2>/dev/null
sql "select count(boxcar.enqueue('default', '{\"command\": [\"true\"]}')) from generate_series(1, 3)" >/dev/null
later() { [[ $(sql "select count(*) from boxcar.jobs where status = 'succeeded' and worker_id = 'part-1'
                      and spec->'command'->>0 = 'true'") == 3 ]]; }
check "and runs new jobs" wait_for "new jobs" 30 later
kill -TERM "${wpid[1]}"; wait "${wpid[1]}" 2>/dev/null
tap_done
