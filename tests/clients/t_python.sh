#!/usr/bin/env bash
# The Python client (clients/python, boxcar_client) against a real
# PostgreSQL, a real worker and S3 (sessions), with a webhook receiver that
# keeps each request: every API call including its errors, wait across a
# killed connection, logs streamed while the job runs, webhook
# verification against the worker's own deliveries, the README's example
# as written, and the wheel built offline and installed into an empty venv.
# The scenarios are clients/python/tests/*.py, printing TAP; they run with
# /usr/bin/python3, which has Debian's psycopg (a pyenv python on PATH may not).
source "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
PKG="$BOXCAR_ROOT/clients/python"
if ! $PY -c 'import psycopg' 2>/dev/null; then
  not_ok "the Python client's tests need python3-psycopg for $PY (scripts/deps.sh installs it)"; tap_done; exit
fi
sessions=0
if [[ $E2E_SANDBOX == namespace && $(id -u) -eq 0 ]] && grep -qw overlay /proc/filesystems; then
  eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
  export BOXCAR_S3_PREFIX="clients-python-$$"
  sessions=1
fi
fresh_db clients_python
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
mkdir -p "$tmp/saved"
python3 "$BOXCAR_ROOT/tests/webhooks/receiver.py" --port 0 --port-file "$tmp/port" \
    --secret "$(webhook_secrets_of default)" --log "$tmp/recv.log" --save "$tmp/saved" >/dev/null 2>"$tmp/recv.err" &
_bg_pids+=($!)
wait_for "receiver up" 10 test -s "$tmp/port"
start_worker py-client --concurrency 4 --lease 5s --poll-interval 1s --sandbox "$E2E_SANDBOX" \
    --queues default,default/other
# The scenarios number their own TAP lines: the schema check first, then
# the rest continuing its count.
cd "$PKG"
export PYTHONPATH="$PKG:$PKG/tests" BOXCAR_ROOT BOXCAR DATABASE_URL SESSIONS=$sessions \
       RECEIVER_PORT=$(cat "$tmp/port") RECEIVER_SAVE="$tmp/saved"
$PY tests/test_spec_schema.py | grep -v '^1\.\.' > "$tmp/schema.tap"
rc_schema=${PIPESTATUS[0]}
cat "$tmp/schema.tap"
TAP_START=$(grep -cE '^(not )?ok ' "$tmp/schema.tap") $PY tests/t_client.py
rc=$?
exit $(( rc || rc_schema ))
