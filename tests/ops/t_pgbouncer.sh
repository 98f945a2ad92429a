# Sourced by tests/ops/run.sh: 1,000 jobs through PgBouncer in transaction
# mode; LISTEN over a direct connection, and a poll-only worker.
fresh_db ops_bouncer
pgb_dir=$(mktemp -d /tmp/boxcar-pgb.XXXXXX); chmod 755 "$pgb_dir"
pgb_port=$(free_port)
cat > "$pgb_dir/pgbouncer.ini" <<INI
[databases]
ops_bouncer = host=127.0.0.1 port=$BOXCAR_PG_PORT dbname=ops_bouncer user=boxcar password=boxcar
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgb_port
auth_type = plain
auth_file = $pgb_dir/users.txt
pool_mode = transaction
; DISCARD ALL after every transaction: a session keeps no prepared
; statement from one transaction to the next (see db_prepared.c).
server_reset_query_always = 1
max_client_conn = 200
default_pool_size = 10
unix_socket_dir =
logfile = $pgb_dir/pgbouncer.log
pidfile = $pgb_dir/pgbouncer.pid
INI
echo '"boxcar" "boxcar"' > "$pgb_dir/users.txt"
chown -R postgres "$pgb_dir" 2>/dev/null
# In the foreground, a child of this suite: stopped with it even when the
# suite is (su -c would start it in a session of its own).
# Its log is the logfile; in the foreground it also copies it to the terminal.
if [[ $(id -u) -eq 0 ]]; then
  bg setpriv --reuid postgres --regid postgres --clear-groups /usr/sbin/pgbouncer "$pgb_dir/pgbouncer.ini" >/dev/null 2>&1
else
  bg /usr/sbin/pgbouncer "$pgb_dir/pgbouncer.ini" >/dev/null 2>&1
fi
pgb_pid=$!
bouncer_url="postgresql://boxcar:boxcar@127.0.0.1:$pgb_port/ops_bouncer"
check "pgbouncer runs in transaction mode" wait_for "pgbouncer" 10 psql -XqtA "$bouncer_url" -c "select 1"
direct_url=$DATABASE_URL
DATABASE_URL=$bouncer_url
start_worker pgb-a --concurrency 4 --lease 10s --poll-interval 1s --listen-database-url "$direct_url" --sandbox none
start_worker pgb-b --concurrency 4 --lease 10s --poll-interval 250ms --poll-only --sandbox none
sql "select count(boxcar.enqueue('default', '{\"command\":[\"true\"]}')) from generate_series(1, 1000)" >/dev/null
done_all() { [[ $(sql "select count(*) from boxcar.jobs where status = 'succeeded'") == 1000 ]]; }
check "1,000 jobs complete through PgBouncer" wait_for "done" 120 done_all
is "each claimed exactly once" "$(sql "select count(*) from (select job_id from boxcar.job_events where kind = 'claimed' group by job_id having count(*) > 1) x")" "0"
is "both the LISTEN worker and the poll-only worker took jobs" "$(sql "select count(distinct worker_id) from boxcar.jobs")" "2"
# status --wait through the pooler: its LISTEN lands on a server session
# that is reset after the statement, so no notification ever comes and the
# wait must end by reading the job again.  The job outlasts the first read.
id=$("$BOXCAR" enqueue -- sleep 2)
check "status --wait through PgBouncer ends when the job does (no notification arrives)" \
  bash -c "'$BOXCAR' status --wait --timeout 60s '$id' >/dev/null"
is "a job enqueued through PgBouncer still succeeds" "$(job_field $id status)" "succeeded"
# The statements prepared per connection (claim, report ...) land on other
# server sessions through the pooler: the workers run them unnamed then,
# and no call fails.
check "no statement of the workers failed through the pooler" \
  bash -c "! grep -h 'event=db.error\|event=job.report_failed\|event=job.not_held' \
    '$BOXCAR_DEV/test-logs/pgb-a.log' '$BOXCAR_DEV/test-logs/pgb-b.log'"
kill "$pgb_pid" 2>/dev/null; wait "$pgb_pid" 2>/dev/null
DATABASE_URL=$direct_url
rm -rf "$pgb_dir"
