# A job's notification that reaches the worker while its control
# connection is busy with a query (a heartbeat, the leader's
# schedule_tick) is read by libpq with that query's result: the socket then
# has nothing left for the main loop's poll to see.  The worker must take
# it anyway, not wait for the next notification or its poll interval.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_notify_busy
# A long poll interval: a job started within seconds was notified.
start_worker nb-a --queues nb --concurrency 2 --sandbox none --lease 31s --poll-interval 30s
leader() { [[ $(sql "select count(*) from boxcar.leaders where worker_id = 'nb-a' and expires_at > now()") == 1 ]]; }
check "the worker leads (it runs schedule_tick every second)" wait_for "leader" 20 leader
first=$(sql "select boxcar.enqueue('nb', '{\"command\":[\"true\"]}')")
done_() { [[ $(job_field "$1" status) == succeeded ]]; }
check "a job enqueued while the worker is idle runs" wait_for "first" 10 done_ "$first"

# The leader's next schedule_tick waits on this lock while the job's
# notification comes; both reach the worker together when it is released.
(psql -X -qtA "$DATABASE_URL" -c "begin" -c "lock table boxcar.schedules in access exclusive mode" \
      -c "select pg_sleep(2.5)" -c "commit" >/dev/null 2>&1) &
locker=$!
sleep 1.5
t0=$(date +%s%N)
job=$(sql "select boxcar.enqueue('nb', '{\"command\":[\"true\"]}')")
wait $locker
check "a job notified while the worker's query waited runs within seconds (poll interval 30 s)" \
  wait_for "job" 8 done_ "$job"
diag "started $(( ($(date +%s%N) - t0) / 1000000 )) ms after its enqueue"
tap_done
