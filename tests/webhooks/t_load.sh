#!/usr/bin/env bash
# Webhook delivery keeps pace with a job load (issue 18: about 23
# deliveries/s while jobs ran, a backlog of 12,000).  4 workers x 8 no-op
# slots saturate the machine's CPUs, as in the chaos run; the receiver runs
# beside them.  While the jobs run, no event waits long: the oldest pending
# delivery stays young, and little is left to deliver when the last job is
# done.  On the old code (one new connection per delivery) the backlog grew
# with the load: the oldest pending delivery reached 23-66 s, and 60-80%
# of the events were still pending when the jobs were done.
source "$(dirname "$0")/../lib.sh"
N=${T_LOAD_JOBS:-2500}
AGE_MAX=10          # seconds; the oldest pending delivery at any sample
# Pending deliveries when the last job has finished: 0-115 of 2500 alone,
# once 503 in a whole `make test` on a busy host; the old code left
# 1500-2000.
LEFT_MAX=$((N / 4))
fresh_db e2e_webhooks_load
tmp=$(mktemp -d)
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port 0 --port-file "$tmp/port" \
    --secret "$(webhook_secrets_of default)" >/dev/null 2>"$tmp/recv.err" &
_bg_pids+=($!)
wait_for "receiver" 10 test -s "$tmp/port"
hook="http://127.0.0.1:$(cat "$tmp/port")/hook"

sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}', webhook_url => '$hook')) from generate_series(1, $N)" >/dev/null
for w in 1 2 3 4; do
  start_worker "wh-load-$w" --concurrency 8 --sandbox none --poll-interval 500ms \
      --webhook-retry-schedule 1s,1s,1s
done
# finished | pending | age of the oldest pending delivery (s), once a second
sample() {
  sql "select (select count(*) from boxcar.jobs where status in ('succeeded', 'failed')),
              (select count(*) from boxcar.webhook_deliveries where status = 'pending'),
              coalesce((select extract(epoch from clock_timestamp() - min(created_at))::int
                          from boxcar.webhook_deliveries where status = 'pending'), 0)"
}
max_age=0 left=-1 deadline=$(( $(date +%s) + 600 ))
while (( $(date +%s) < deadline )); do
  IFS='|' read -r fin pend age <<<"$(sample)"
  (( age > max_age )) && max_age=$age
  if (( fin >= N )); then left=$pend; break; fi
  sleep 1
done
diag "oldest pending delivery: max ${max_age}s; pending when the jobs were done: $left of $N"
check "all $N jobs finished" test "$left" -ge 0
check "while the jobs ran, no delivery waited more than ${AGE_MAX}s (max ${max_age}s)" \
    test "$max_age" -le "$AGE_MAX"
check "when the last job finished at most $LEFT_MAX deliveries were pending ($left)" \
    test "$left" -le "$LEFT_MAX"
all_delivered() { [[ $(sql "select count(*) from boxcar.webhook_deliveries where status = 'delivered'") == "$N" ]]; }
check "then every event is delivered" wait_for "delivered" 120 all_delivered
tap_done
