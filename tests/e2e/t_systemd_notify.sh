# systemd's Type=notify protocol, spoken to a real unix datagram socket that
# stands in for the service manager (systemd is not PID 1 on the test
# machines): READY=1 only once the worker is connected and claiming, STATUS=
# while it waits for the database, WATCHDOG=1 every WATCHDOG_USEC/2 from the
# main loop, nothing of the watchdog without WATCHDOG_USEC, STOPPING=1 on
# SIGTERM.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_notify
W=$(mktemp -d "${TMPDIR:-/tmp}/boxcar-notify.XXXXXX")
trap 'cleanup_bg; rm -rf "$W"' EXIT

# listen NAME: a notification socket $W/NAME.sock logging to $W/NAME.log.
listen() {
  bg python3 "$BOXCAR_ROOT/tests/e2e/notify_listen.py" "$W/$1.sock" "$W/$1.log"
  wait_for "listener" 5 grep -qs '^# listening' "$W/$1.log"
}
got() { grep -c -- "$2" "$W/$1.log"; }

# 1. The database is unreachable: STATUS= says so, READY=1 is not sent.
listen down
NOTIFY_SOCKET=$W/down.sock DATABASE_URL="postgresql://boxcar@127.0.0.1:1/none?connect_timeout=1" \
  start_worker notify-down --sandbox none --config /dev/null
check "STATUS= while the database is unreachable" \
  wait_for "status" 10 grep -q 'STATUS=waiting for the database' "$W/down.log"
sleep 1
is "no READY=1 before the worker is connected" "$(got down READY=1)" 0
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# 2. Connected: READY=1 once, with a STATUS; the watchdog pings at half of
#    WATCHDOG_USEC (1 s: every 500 ms).
listen up
NOTIFY_SOCKET=$W/up.sock WATCHDOG_USEC=1000000 \
  start_worker notify-up --sandbox none --config /dev/null --poll-interval 500ms
check "READY=1 arrives" wait_for "ready" 30 grep -q 'READY=1' "$W/up.log"
is "the worker was registered before READY=1" \
  "$(sql "select count(*) from boxcar.workers where id = 'notify-up' and state = 'running'")" 1
check "READY=1 comes with a STATUS naming the queues" grep -q 'READY=1|STATUS=serving default with 4 slots as notify-up' "$W/up.log"
job=$("$BOXCAR" enqueue -- echo hi)
finished() { "$BOXCAR" status --wait --timeout 15s "$1" >/dev/null; }
check "a job enqueued after READY=1 runs" finished "$job"
sleep 2.5
n=$(got up 'WATCHDOG=1')
check "WATCHDOG=1 repeats (${n} in about 3 s, want >= 4)" test "$n" -ge 4
gap=$(awk -F'\t' '$2 == "WATCHDOG=1" { if (p != "") { d = $1 - p; if (d > m) m = d } p = $1 } END { print m + 0 }' "$W/up.log")
# The gaps between pings stay under WATCHDOG_USEC (1000 ms), and the loop
# does not ping much faster than it was asked to.
check "no gap between pings reaches WATCHDOG_USEC (longest ${gap} ms)" test "$gap" -lt 1000
check "pings are about 500 ms apart (longest gap ${gap} ms)" test "$gap" -ge 450
kill -TERM "$WORKER_PID"
check "STOPPING=1 on SIGTERM" wait_for "stopping" 10 grep -q 'STOPPING=1|STATUS=draining (SIGTERM)' "$W/up.log"
wait "$WORKER_PID"
is "the worker exits 0" "$?" 0
is "READY=1 was sent once" "$(got up READY=1)" 1

# 3. Without WATCHDOG_USEC, or with WATCHDOG_PID naming another process
#    (the variables were meant for a parent), no pings.
listen nowd
NOTIFY_SOCKET=$W/nowd.sock WATCHDOG_USEC=400000 WATCHDOG_PID=1 \
  start_worker notify-nowd --sandbox none --config /dev/null
check "READY=1 without a watchdog" wait_for "ready" 30 grep -q 'READY=1' "$W/nowd.log"
sleep 1
is "no WATCHDOG=1 when WATCHDOG_PID is another process" "$(got nowd WATCHDOG=1)" 0
kill -TERM "$WORKER_PID"; wait "$WORKER_PID"
check "STOPPING=1 again" grep -q 'STOPPING=1' "$W/nowd.log"
tap_done
