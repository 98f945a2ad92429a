source "$(dirname "$0")/../lib.sh"
fresh_db e2e_webhooks
tmp=$(mktemp -d)
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
# The receiver holds its scope's secret, not the master key.
recv_secret=$(webhook_secrets_of default)
RECV="$BOXCAR_ROOT/tests/webhooks/receiver.py"
port=$(free_port)
hook="http://127.0.0.1:$port/hook"
receiver=""
start_receiver() {   # MODE
  python3 "$RECV" --port "$port" --secret "$recv_secret" --log "$tmp/recv.log" \
          --per-id --mode "$1" > "$tmp/recv.port" 2>>"$tmp/recv.err" &
  receiver=$!; _bg_pids+=("$receiver")
  wait_for "receiver up" 10 test -s "$tmp/recv.port"
}
stop_receiver() { [[ -n $receiver ]] && kill "$receiver" 2>/dev/null; wait "$receiver" 2>/dev/null; receiver=""; rm -f "$tmp/recv.port"; }
set_mode() { curl -sf -X POST --data "$1" "http://127.0.0.1:$port/_admin/mode" >/dev/null; }
delivered_count() { sql "select count(*) from boxcar.webhook_deliveries where status = 'delivered'"; }
all_delivered() { [[ $(sql "select count(*) from boxcar.webhook_deliveries where status <> 'delivered'") == 0 && $(delivered_count) -ge $1 ]]; }
# recv_ids JOB: distinct webhook-ids the receiver got for a job
recv() { python3 - "$tmp/recv.log" "$@" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
what = sys.argv[2]
if what == "invalid":
    print(sum(1 for r in rows if not r["valid"]))
elif what == "ids":
    print(len({r["webhook_id"] for r in rows}))
elif what == "jobs":
    print(len({r["body"]["data"]["job_id"] for r in rows if isinstance(r["body"], dict)}))
elif what == "ids-per-job":   # most distinct ids seen for one job
    per = {}
    for r in rows:
        if isinstance(r["body"], dict):
            per.setdefault(r["body"]["data"]["job_id"], set()).add(r["webhook_id"])
    print(max((len(v) for v in per.values()), default=0))
elif what == "count-id":
    print(sum(1 for r in rows if r["webhook_id"] == sys.argv[3]))
PY
}

# The schedule outlasts the 120 s the first scenario may take to run its
# 200 jobs (a slow sanitizer build), never waiting more than 10 s a try.
W=(--concurrency 4 --lease 5s --poll-interval 500ms --sandbox "$E2E_SANDBOX" --webhook-timeout 1s
   --webhook-retry-schedule 1s,1s,1s,2s,2s,2s,5s,10s,10s,10s,10s,10s,10s,10s,10s,10s,10s,10s,10s,10s)

# 1. Receiver down while 200 jobs finish; back up later: all delivered, one id per event.
start_worker wh-a "${W[@]}"; wa=$WORKER_PID
start_worker wh-b "${W[@]}"; wb=$WORKER_PID
sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}', webhook_url => '$hook')) from generate_series(1, 200)" >/dev/null
check "200 jobs finish with the receiver down" wait_for "jobs" 120 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.jobs where status = 'succeeded'\") == 200 ]]"
is "every job has exactly one delivery row" "$(sql "select count(distinct job_id) || ' ' || count(*) from boxcar.webhook_deliveries")" "200 200"
check "deliveries were tried and are pending" wait_for "tried" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.webhook_deliveries where attempts >= 1 and status = 'pending'\") == 200 ]]"
start_receiver 200
check "once the receiver is back every event is delivered" wait_for "delivered" 60 all_delivered 200
is "the receiver got 200 distinct webhook-ids" "$(recv ids)" "200"
is "for 200 distinct jobs" "$(recv jobs)" "200"
is "never two ids for one event" "$(recv ids-per-job)" "1"
is "every signature verified independently" "$(recv invalid)" "0"

# 2. 500 then 200: retried, same id.
set_mode "500;200"
j=$("$BOXCAR" enqueue --webhook-url "$hook" -- true)
check "a 500 then 200 delivery ends delivered" wait_for "delivered" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.webhook_deliveries where job_id = '$j'\") == delivered ]]"
id=$(sql "select id from boxcar.webhook_deliveries where job_id = '$j'")
is "after 2 attempts" "$(sql "select attempts from boxcar.webhook_deliveries where id = '$id'")" "2"
is "the receiver saw the same webhook-id twice" "$(recv count-id "$id")" "2"

# 3. Slow receiver beyond the timeout: retried.
set_mode "sleep:3;200"
j=$("$BOXCAR" enqueue --webhook-url "$hook" -- true)
check "a receiver slower than the timeout gets a retry and the event" wait_for "delivered" 30 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.webhook_deliveries where job_id = '$j'\") == delivered ]]"
is "it took 2 attempts" "$(sql "select attempts from boxcar.webhook_deliveries where job_id = '$j'")" "2"

# 4. 410 Gone stops at once; webhooks retry redrives it.
set_mode "410;200"
j=$("$BOXCAR" enqueue --webhook-url "$hook" -- true)
check "410 fails the delivery" wait_for "failed" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.webhook_deliveries where job_id = '$j'\") == failed ]]"
id=$(sql "select id from boxcar.webhook_deliveries where job_id = '$j'")
is "after one attempt, keeping the last status" "$(sql "select attempts || ' ' || last_status from boxcar.webhook_deliveries where id = '$id'")" "1 410"
check "webhooks ls --failed lists it" bash -c "'$BOXCAR' webhooks ls --failed | grep -q '$id'"
"$BOXCAR" webhooks retry "$id" >/dev/null
check "webhooks retry delivers it with the same id" wait_for "redriven" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.webhook_deliveries where id = '$id'\") == delivered ]]"

# 5. kill -9 of the worker holding a delivery: another worker delivers it.
kill -TERM "$wb"; wait "$wb"
set_mode "sleep:30"
j=$("$BOXCAR" enqueue --webhook-url "$hook" -- true)
check "worker a holds the delivery" wait_for "held" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select worker_id from boxcar.webhook_deliveries where job_id = '$j' and lease_expires_at > now()\") == wh-a ]]"
kill -9 "$wa"; { wait "$wa"; } 2>/dev/null
set_mode 200
start_worker wh-c "${W[@]}"
check "another worker delivers it after the lease" wait_for "delivered" 30 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status || ' ' || worker_id from boxcar.webhook_deliveries where job_id = '$j'\") == 'delivered wh-c' ]]"
id=$(sql "select id from boxcar.webhook_deliveries where job_id = '$j'")
check "with the same webhook-id the dead worker used" bash -c "[[ \$(grep -c '$id' '$tmp/recv.log') -ge 2 ]]"

# 6. PostgreSQL restarts during delivery.
stop_receiver
sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}', webhook_url => '$hook')) from generate_series(1, 50)" >/dev/null
check "50 more jobs finish" wait_for "jobs" 60 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.jobs where status = 'succeeded'\") == 254 ]]"
start_receiver 200
sleep 0.5
"$BOXCAR_ROOT/scripts/pg.sh" stop; sleep 1; "$BOXCAR_ROOT/scripts/pg.sh" start
check "all deliveries complete after the restart" wait_for "delivered" 60 all_delivered 254
is "still never two ids for one event" "$(recv ids-per-job)" "1"
is "and every signature valid" "$(recv invalid)" "0"
tap_done
