# A claim that commits while its answer is lost: the worker is cut off
# from PostgreSQL (its link down, packets dropped) while the server
# commits the claim.  The worker cannot know whether the claim held, so
# it starts none of its jobs; the database says the worker holds the job.
# Once the link is back, the worker's next heartbeat hands the job back
# to the queue, its attempt not counted, and it runs once.  Without that,
# every heartbeat renewed the job's lease: it stayed "running" for as long
# as the worker lived.  The worker is a separate host: a network namespace
# on a bridge (scripts/replicas-net.sh).
source "$(dirname "$0")/../lib.sh"
netns_hosts e2e_claim_unseen 1
url=$NETNS_URL
log="$BOXCAR_DEV/test-logs/unseen-1.log"
marks=$(mktemp -d)
chmod 0777 "$marks"
trap 'rm -rf "$marks"; cleanup_bg; rn_down >/dev/null 2>&1' EXIT
# The claim's COMMIT of a marked job takes 2 s (a deferred trigger): the
# link is cut meanwhile.
sql "create function public.slow_commit() returns trigger language plpgsql as \$\$
     begin
       if new.spec->'env'->>'AT_COMMIT' = 'sleep' then perform pg_sleep(2); end if;
       return null;
     end \$\$;
     create constraint trigger slow_commit after update on boxcar.jobs
       deferrable initially deferred for each row when (new.status = 'running')
       execute function public.slow_commit();" >/dev/null
mkdir -p "$BOXCAR_DEV/work"
DATABASE_URL=$url nsenter --net="$(rn_netns 1)" -- "$BOXCAR" worker --worker-id unseen-1 \
    --work-dir "$BOXCAR_DEV/work/unseen-1" --concurrency 1 --lease 3s --poll-interval 500ms \
    --sandbox none >"$log" 2>&1 &
_bg_pids+=($!) wpid=$!
registered() { [[ $(sql "select count(*) from boxcar.workers where state = 'running'") == 1 ]]; }
check "the worker registers" wait_for "registered" 30 registered

id=$(echo "{\"command\": [\"sh\", \"-c\", \"echo run >> $marks/ran\"], \"env\": {\"AT_COMMIT\": \"sleep\"}}" |
     "$BOXCAR" enqueue --spec -)
in_commit() { [[ $(sql "select count(*) from pg_stat_activity where query = 'commit' and wait_event = 'PgSleep'") == 1 ]]; }
check "the worker's claim is in its COMMIT" wait_for "in commit" 20 in_commit
ip link set "${_rn_tag}h1" down
committed() { [[ $(job_field "$id" "status || ' ' || worker_id") == "running unseen-1" ]]; }
check "the server commits the claim meanwhile" wait_for "committed" 10 committed
check "the worker loses the connection and says the claim is not known to hold" \
    wait_for "not committed" 30 grep -q 'event=claim.not_committed' "$log"
check "it started nothing of the job" test ! -e "$marks/ran"

ip link set "${_rn_tag}h1" up
"$BOXCAR" status --wait --timeout 60s "$id" >/dev/null
is "once the link is back, the job runs: one attempt counted" \
   "$(job_field "$id" "status || ' ' || attempts")" "succeeded 1"
is "its command ran once" "$(cat "$marks/ran" 2>/dev/null)" "run"
check "the worker said it handed the job back" \
    grep -q "event=job.released_unrun job_id=$id .*committed unseen" "$log"
is "its trail: the unseen claim, handed back, then one run" \
   "$(sql "select string_agg(e ->> 'kind', ',' order by n) from boxcar.job_events_json('$id') with ordinality x(e, n)")" \
   "claimed,released,claimed,started,exited,finished"
kill -TERM "$wpid"; wait "$wpid" 2>/dev/null
tap_done
