# Four replicas, each in its own network namespace (scripts/replicas-net.sh),
# reach PostgreSQL over their veths and share 800 jobs: every job is claimed
# once and runs once.  (bench/replicas.sh measures 1 to 16.)
source "$(dirname "$0")/../lib.sh"
netns_hosts e2e_replicas 4
url=$NETNS_URL
ns_psql() { rn_exec 1 psql -X -qtA "$url" -c "select 1" >/dev/null; }
check "a namespace reaches PostgreSQL on the bridge's address" ns_psql
check "and not over the host's loopback (its own is empty)" \
      bash -c "! ip netns exec $(rn_ns 1) psql -X -qtA '$(db_url e2e_replicas)' -c 'select 1' >/dev/null 2>&1"
mkdir -p "$BOXCAR_DEV/work"
wpids=()
for i in 1 2 3 4; do
  DATABASE_URL=$url nsenter --net="$(rn_netns "$i")" -- "$BOXCAR" worker --worker-id "ns-$i" --work-dir "$BOXCAR_DEV/work/ns-$i" \
      --concurrency 4 --sandbox none --poll-interval 1s >"$BOXCAR_DEV/test-logs/ns-$i.log" 2>&1 &
  _bg_pids+=($!) wpids+=($!)
done
registered() { [[ $(sql "select count(*) from boxcar.workers where state = 'running'") == 4 ]]; }
check "the four replicas register" wait_for "registered" 30 registered
sql "select count(boxcar.enqueue('default', '{\"command\": [\"echo\", \"x\"]}')) from generate_series(1, 800)" >/dev/null
conns=$(sql "select count(*) from pg_stat_activity where datname = 'e2e_replicas' and client_addr << '$RN_CIDR'")
done_all() { [[ $(sql "select count(*) from boxcar.jobs where status = 'succeeded'") == 800 ]]; }
check "800 jobs succeed" wait_for "done" 180 done_all
check "the replicas' connections come over the veths ($conns)" test "$conns" -ge 4
is "each replica's own address" \
   "$(sql "select count(distinct client_addr) from pg_stat_activity where datname = 'e2e_replicas' and client_addr << '$RN_CIDR'")" 4
is "no job claimed twice" "$(sql "select count(*) from (select job_id from boxcar.job_events where kind = 'claimed' group by 1 having count(*) > 1) x")" 0
is "one claimed event per job" "$(sql "select count(*) from boxcar.job_events where kind = 'claimed'")" 800
is "every job on its first attempt" "$(sql "select count(*) from boxcar.jobs where attempts <> 1")" 0
is "all four replicas took jobs" "$(sql "select count(distinct worker_id) from boxcar.jobs")" 4
for p in "${wpids[@]}"; do kill -TERM "$p"; done
rcs=""
for p in "${wpids[@]}"; do wait "$p"; rcs+="$? "; done
is "the four replicas drain and exit 0 on SIGTERM" "$rcs" "0 0 0 0 "
tap_done
