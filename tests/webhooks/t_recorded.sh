#!/usr/bin/env bash
# A delivery that reached the receiver is recorded as delivered (issue 18:
# rows recorded as failed had in fact reached the receiver).  The cause
# reproduced here: the receiver answers 200, but the delivery thread's
# database connection is gone by then, so the result is not written; the
# row came back after its lease, the next attempt failed, and the schedule
# being used up, the row ended `failed`.  The worker must keep the 200 and
# write it down once it has reconnected.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_webhooks_recorded
tmp=$(mktemp -d)
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port 0 --port-file "$tmp/port" \
    --secret "$(webhook_secrets_of default)" --log "$tmp/recv.log" --per-id \
    --mode "200,sleep=3;500" >/dev/null 2>"$tmp/recv.err" &
_bg_pids+=($!)
wait_for "receiver" 10 test -s "$tmp/port"
hook="http://127.0.0.1:$(cat "$tmp/port")/hook"

# One try after the first (schedule of one): a lost 200 followed by a 500
# would fail the row.
start_worker wh-rec --concurrency 1 --sandbox none --poll-interval 500ms --webhook-concurrency 1 \
    --webhook-timeout 6s --webhook-retry-schedule 1s
j=$("$BOXCAR" enqueue --webhook-url "$hook" -- true)
check "the receiver got the event (and answers 200 in 3 s)" \
    wait_for "received" 30 test -s "$tmp/recv.log"
# While the receiver sleeps, the delivery connection is cut.
n=$(sql "select count(pg_terminate_backend(pid)) from pg_stat_activity
          where application_name = 'boxcar-webhooks' and datname = current_database()")
is "the delivery thread's connection was cut" "$n" "1"
settled() { [[ $(sql "select status from boxcar.webhook_deliveries where job_id = '$j'") != pending ]]; }
# The old code needed the lease (2 x 6 s + 5 s) and one more attempt.
check "the delivery settles" wait_for "settled" 40 settled
is "it is recorded delivered, with the receiver's 200, on the first attempt" \
    "$(sql "select status || ' ' || last_status || ' ' || attempts from boxcar.webhook_deliveries where job_id = '$j'")" \
    "delivered 200 1"
is "the receiver got it once" "$(grep -c . "$tmp/recv.log")" "1"
tap_done
