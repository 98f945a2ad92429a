#!/usr/bin/env bash
# Local S3 for development and tests: s3rver (npm, pinned in package.json)
# on 127.0.0.1:$BOXCAR_S3_PORT (default 54569), data under $BOXCAR_DEV/s3,
# bucket $BOXCAR_S3_BUCKET (default boxcar) created at start.
#
#   scripts/s3.sh start    start if not running (idempotent); prints the
#                          environment for boxcar:  eval "$(scripts/s3.sh start)"
#   scripts/s3.sh env      print that environment only
#   scripts/s3.sh stop     stop it (idempotent)
#   scripts/s3.sh status   exit 0 when it answers
#   scripts/s3.sh log      path of its request log
#
# s3rver accepts the fixed key pair S3RVER/S3RVER.  It checks presigned
# URLs' expiry but not SigV4 signatures, and ignores If-None-Match: the
# unit tests pin the signer (AWS and botocore vectors), and the storage
# suite also runs through tests/storage/sigv4_proxy.py, which verifies
# every signature and honours If-None-Match in front of it.
set -euo pipefail
source "$(dirname "$0")/env.sh"

: "${BOXCAR_S3_PORT:=54569}"
: "${BOXCAR_S3_BUCKET:=boxcar}"
S3_DIR="$BOXCAR_DEV/s3"
PIDFILE="$S3_DIR/s3rver.pid"
LOG="$S3_DIR/s3rver.log"
S3RVER="$BOXCAR_ROOT/node_modules/.bin/s3rver"

print_env() {
  cat <<ENV
export AWS_ACCESS_KEY_ID=S3RVER
export AWS_SECRET_ACCESS_KEY=S3RVER
export AWS_REGION=us-east-1
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$BOXCAR_S3_PORT
export BOXCAR_S3_BUCKET=$BOXCAR_S3_BUCKET
export BOXCAR_S3_PREFIX=\${BOXCAR_S3_PREFIX:-}
ENV
}

answers() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$BOXCAR_S3_PORT/"; }

running_pid() {
  [[ -f $PIDFILE ]] || return 1
  local pid; pid=$(cat "$PIDFILE")
  kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

start() {
  mkdir -p "$S3_DIR/data"
  # One start at a time: tests running side by side call this together,
  # and a second s3rver would fail to bind yet leave its pid behind.
  exec 9>"$S3_DIR/start.lock"
  flock 9
  local pid
  if pid=$(running_pid); then
    # Ours and alive: busy with another test's upload it may take a
    # while to answer, which does not make it someone else's.
    for _ in $(seq 150); do
      if answers; then print_env; return 0; fi
      sleep 0.1
    done
    echo "s3.sh: s3rver (pid $pid) does not answer on port $BOXCAR_S3_PORT; see $LOG" >&2
    return 1
  fi
  if answers; then
    echo "s3.sh: port $BOXCAR_S3_PORT is taken by something else" >&2; return 1
  fi
  [[ -x $S3RVER ]] || "$BOXCAR_ROOT/scripts/deps.sh" all
  # setsid: its own session, so a test's job control or Ctrl-C does not
  # take it down; 9>&-: it must not hold the start lock.
  setsid "$S3RVER" -d "$S3_DIR/data" -a 127.0.0.1 -p "$BOXCAR_S3_PORT" \
    --configure-bucket "$BOXCAR_S3_BUCKET" >>"$LOG" 2>&1 < /dev/null 9>&- &
  pid=$!
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "s3.sh: s3rver exited at start; see $LOG" >&2; return 1
    fi
    # The pid is recorded once it answers: a start that failed leaves none.
    if answers; then echo "$pid" > "$PIDFILE"; print_env; return 0; fi
    sleep 0.1
  done
  kill "$pid" 2>/dev/null
  echo "s3.sh: s3rver did not come up; see $LOG" >&2
  return 1
}

stop() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  status) running_pid >/dev/null && answers ;;
  log) echo "$LOG" ;;
  *) echo "usage: $0 start|stop|env|status|log" >&2; exit 2 ;;
esac
