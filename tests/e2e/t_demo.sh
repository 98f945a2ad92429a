# `make run` on a fresh clone: scripts/demo.sh from an empty dev directory
# (its own PostgreSQL cluster, S3 data and work dir made from nothing, on
# ports of its own), then again with a worker that cannot start: the demo
# must stop at once with the worker's reason instead of waiting forever.
# Its PostgreSQL and S3 are stopped and the directory removed however it
# ends.
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"

dev=$(mktemp -d /tmp/boxcar-demo.XXXXXX)
chmod 755 "$dev"   # initdb runs as postgres
pg_port=$(free_port)
s3_port=$(free_port)
while [[ $s3_port == "$pg_port" ]]; do s3_port=$(free_port); done
in_demo_env() { env BOXCAR_DEV="$dev" BOXCAR_PG_PORT="$pg_port" BOXCAR_S3_PORT="$s3_port" "$@"; }
stop_services() {
  in_demo_env scripts/s3.sh stop
  in_demo_env scripts/pg.sh stop
  rm -rf "$dev"
}
trap 'stop_services; cleanup_bg' EXIT

log=$BOXCAR_DEV/test-logs/demo.log
mkdir -p "$(dirname "$log")"
start=$(date +%s)
# timeout(1) signals the demo's whole process group: its worker too.
in_demo_env BOXCAR_DEMO_TIMEOUT=240 timeout 300 scripts/demo.sh >"$log" 2>&1
rc=$?
el=$(( $(date +%s) - start ))
is "the demo exits 0 from an empty dev directory (${el} s)" "$rc" "0"
[[ $rc -eq 0 ]] || sed 's/^/# /' "$log" | tail -n 30
check "it made its own cluster in that directory" test -f "$dev/pg/data/PG_VERSION"
is "the worker made its work dir and parents, 0700" "$(stat -c %a "$dev/work" "$dev/work/demo" 2>&1 | tr '\n' ' ')" "700 700 "
check "it shows the result: succeeded, exit code 0" grep -q "status succeeded, exit code 0" "$log"
check "it shows the report from the artifact" grep -q "Best region: \*\*west\*\*" "$log"
check "it shows the webhook with a valid signature" grep -q "job.succeeded .* signature valid: True" "$log"

# A worker that cannot start (its work dir's parent is a file): the demo
# stops within seconds and shows why.
rm -rf "$dev/work" && touch "$dev/work"
start=$(date +%s)
in_demo_env BOXCAR_DEMO_TIMEOUT=240 timeout 300 scripts/demo.sh >"$log.fail" 2>&1
rc=$?
el=$(( $(date +%s) - start ))
is "a worker that dies: the demo exits 1" "$rc" "1"
check "it stopped at once (${el} s), not at the deadline" test "$el" -lt 60
check "it says the worker exited and shows the worker's reason" \
  bash -c 'grep -q "demo failed: the worker exited (status 1)" "$1" && grep -q "work: exists and is not a directory" "$1"' _ "$log.fail"

stop_services
check "its directory is removed" test ! -e "$dev"
check "its PostgreSQL is stopped" bash -c '! pg_isready -q -h 127.0.0.1 -p "$1" && ! pgrep -f "postgres -D $2" >/dev/null' _ "$pg_port" "$dev"
check "its S3 is stopped" bash -c '! curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/"' _ "$s3_port"
tap_done
