# Least-privilege roles (sql/99_roles.sql) with the real clients: a worker
# logged in with boxcar_worker alone runs plain, artifact, webhook,
# scheduled and session jobs; the CLI as boxcar_app enqueues, waits,
# reads, cancels and retries; `boxcar ui` as boxcar_dashboard serves its
# pages and actions; KEDA's query runs as boxcar_monitor.  Each login role
# has its group role only, and what another role's client does fails.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-roles-$$"
fresh_db e2e_roles
OWNER_URL=$DATABASE_URL
admin() { "$BOXCAR_ROOT/scripts/pg.sh" psql -qtA "$@"; }

# Login roles of the cluster, one per client, each a member of one group.
logins=(e2e_roles_app e2e_roles_worker e2e_roles_monitor e2e_roles_dashboard)
drop_logins() {
  local l
  for l in "${logins[@]}"; do admin -c "drop role if exists $l" >/dev/null 2>&1; done
}
trap 'cleanup_bg; drop_logins' EXIT
drop_logins
declare -A URL
for l in "${logins[@]}"; do
  group=boxcar_${l#e2e_roles_}
  pw=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  admin -c "create role $l login password '$pw' in role $group" >/dev/null
  URL[${l#e2e_roles_}]="postgresql://$l:$pw@127.0.0.1:$BOXCAR_PG_PORT/e2e_roles"
done
URL[owner_cli]=$OWNER_URL
as() { local who=$1; shift; DATABASE_URL=${URL[$who]} "$@"; }
psql_as() { psql -X -qtA -v ON_ERROR_STOP=1 "${URL[$1]}" -c "$2" 2>&1; }
app() { as app "$BOXCAR" "$@"; }

# ---- the worker ----
export DATABASE_URL=${URL[worker]}
sessions=0
[[ $E2E_SANDBOX == namespace && $(id -u) -eq 0 ]] && grep -qw overlay /proc/filesystems && sessions=1
# BOXCAR_WEBHOOK_URL: the worker writes the default webhook URL at start.
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
BOXCAR_WEBHOOK_URL=http://127.0.0.1:9/default \
  start_worker roles_w --concurrency 2 --lease 4s --poll-interval 300ms --sandbox "$E2E_SANDBOX" \
  --queues default,acme/q
WLOG="$BOXCAR_DEV/test-logs/roles_w.log"
check "the worker starts as boxcar_worker" \
  wait_for "registered" 10 sql_true "select exists (select from boxcar.workers where id = 'roles_w')"

# ---- the application ----
export DATABASE_URL=$OWNER_URL
ok_id=$(app enqueue -- sh -c 'echo hello roles')
fail_id=$(app enqueue -- sh -c 'exit 3')
art_id=$(echo '{"script": "echo kept > notes.txt", "artifact": {"storage": "roles-notes"}}' | app enqueue --spec -)
# A volume pushed by the operator (the owner), mounted by the worker.
vol=$(mktemp -d); echo 'Oslo,4' > "$vol/data.csv"
as owner_cli "$BOXCAR" storage push --kind volume roles-data "$vol" >/dev/null 2>&1; rm -rf "$vol"
vol_id=$(echo '{"command": ["cat", "/mnt/data/data.csv"], "volumes": [{"name": "data", "mount": "/mnt/data", "storage": "roles-data"}]}' | app enqueue --spec -)
for id in $ok_id $fail_id $art_id $vol_id; do app status --wait --timeout 60s "$id" >/dev/null; done
art2_id=$(echo '{"script": "cat notes.txt; echo more >> notes.txt", "artifact": {"storage": "roles-notes", "base": "latest"}}' | app enqueue --spec -)
app status --wait --timeout 60s "$art2_id" >/dev/null
is "an app enqueues and the worker runs it" "$(job_field $ok_id "status || ' ' || (result->>'stdout')")" "succeeded hello roles"
is "the worker records an artifact version as boxcar_worker" \
   "$(sql "select count(*) from boxcar.storage_versions where storage = 'roles-notes' and job_id = '$art_id'") $(job_field $art_id status)" "1 succeeded"
is "the worker resolves a volume's version and mounts it" "$(job_field $vol_id "status || ' ' || (result->>'stdout')")" "succeeded Oslo,4"
is "and an artifact's base, then records the next version" \
   "$(job_field $art2_id "status || ' ' || (result->>'stdout')") $(sql "select count(*) from boxcar.storage_versions where storage = 'roles-notes'")" "succeeded kept 2"
check "status as the app prints the job" bash -c "DATABASE_URL='${URL[app]}' '$BOXCAR' status $ok_id | grep -qP '\"status\":\\s*\"succeeded\"'"
is "logs as the app" "$(app logs "$ok_id")" "hello roles"
check "events as the app" bash -c "DATABASE_URL='${URL[app]}' '$BOXCAR' events $ok_id | grep -q finished"
check "jobs ls as the app" bash -c "DATABASE_URL='${URL[app]}' '$BOXCAR' jobs ls | grep -q $ok_id"
check "queues as the app" bash -c "DATABASE_URL='${URL[app]}' '$BOXCAR' queues | grep -q default"
is "retry as the app" "$(app jobs retry --by e2e "$fail_id" | sed 's/^[^:]*: //')" "queued again with a fresh attempt budget (requested by e2e)"
app status --wait --timeout 60s "$fail_id" >/dev/null
is "the retried job ran again" "$(job_field $fail_id attempts)" "1"
held=$(app enqueue --queue nobody/serves -- true)
is "cancel as the app" "$(app cancel "$held" 2>&1)" "cancelled"
check "schedule add, pause, ls and rm as the app" bash -c "
  export DATABASE_URL='${URL[app]}'
  '$BOXCAR' schedule add roles-tick --cron '@hourly' --queue default -- echo tick >/dev/null &&
  '$BOXCAR' schedule pause roles-tick >/dev/null && '$BOXCAR' schedule ls | grep -q roles-tick &&
  '$BOXCAR' schedule add roles-gone --cron '@daily' -- true >/dev/null && '$BOXCAR' schedule rm roles-gone >/dev/null"
app schedule resume roles-tick >/dev/null
sql "update boxcar.schedules set next_run_at = now() where name = 'roles-tick'"
check "the worker's housekeeping enqueues a due schedule" \
  wait_for "tick" 20 sql_true "select last_job_id is not null from boxcar.schedules where name = 'roles-tick'"
hook_id=$(app enqueue --webhook-url http://127.0.0.1:9/hook -- true)
app status --wait --timeout 60s "$hook_id" >/dev/null
check "the worker tries the webhook as boxcar_worker" \
  wait_for "delivery tried" 20 sql_true "select bool_or(attempts > 0) from boxcar.webhook_deliveries where job_id = '$hook_id'"
if [[ $sessions == 1 ]]; then
  s1=$(echo '{"command": ["sh", "-c", "echo in-session"], "session": {"id": "roles"}, "limits": {"disk_mb": 64}}' |
       app enqueue --queue acme/q --spec -)
  app status --wait --timeout 90s "$s1" >/dev/null
  is "a session job runs under boxcar_worker" "$(job_field $s1 "status || ' ' || (result->>'stdout')")" "succeeded in-session"
  check "sessions ls as the app" bash -c "DATABASE_URL='${URL[app]}' '$BOXCAR' sessions --scope acme | grep -q roles"
  is "sessions end as the app" "$(app sessions end acme/roles)" "ending"
  check "the worker checkpoints and ends it" \
    wait_for "ended" 30 sql_true "select state = 'ended' from boxcar.sessions where scope = 'acme' and id = 'roles'"
else
  skip "sessions need the namespace backend as root"
  skip "sessions ls"; skip "sessions end"; skip "session ended"
fi

# What the app may not do.
check "the app may not change a job's row" bash -c "! psql -X -qtA '${URL[app]}' -c \"update boxcar.jobs set status = 'succeeded'\" 2>/dev/null"
check "nor delete one" bash -c "! psql -X -qtA '${URL[app]}' -c 'delete from boxcar.jobs' 2>/dev/null"
is "it reads the table (select only)" "$(psql_as app "select result->>'stdout' from boxcar.jobs where id = '$ok_id'")" "hello roles"
check "but not the workers table" bash -c "! psql -X -qtA '${URL[app]}' -c 'select * from boxcar.workers' 2>/dev/null"
check "nor claim" bash -c "! psql -X -qtA '${URL[app]}' -c \"select boxcar.claim('x', '{default}')\" 2>/dev/null"
check "nor pause a queue (boxcar queue)" bash -c "! DATABASE_URL='${URL[app]}' '$BOXCAR' queue pause default 2>/dev/null"
check "nor list storages" bash -c "! DATABASE_URL='${URL[app]}' '$BOXCAR' storage ls 2>/dev/null"
check "nor list workers" bash -c "! DATABASE_URL='${URL[app]}' '$BOXCAR' workers 2>/dev/null"
check "nor migrate" bash -c "! DATABASE_URL='${URL[app]}' '$BOXCAR' migrate 2>/dev/null"

# ---- the monitor (KEDA) ----
keda=$(sed -n 's/^ *query: "\(.*\)"$/\1/p' "$BOXCAR_ROOT/deploy/kubernetes/keda-scaledobject.yaml")
is "KEDA's query runs as boxcar_monitor" "$(psql_as monitor "$keda")" "$(sql "$keda")"
check "boxcar workers as the monitor" bash -c "DATABASE_URL='${URL[monitor]}' '$BOXCAR' workers | grep -q roles_w"
check "boxcar queues as the monitor" bash -c "DATABASE_URL='${URL[monitor]}' '$BOXCAR' queues | grep -q default"
check "the monitor may not read a job's spec" bash -c "! psql -X -qtA '${URL[monitor]}' -c 'select spec from boxcar.jobs' 2>/dev/null"
check "nor its output" bash -c "! psql -X -qtA '${URL[monitor]}' -c \"select boxcar.job_json('$ok_id')\" 2>/dev/null"
check "nor enqueue" bash -c "! DATABASE_URL='${URL[monitor]}' '$BOXCAR' enqueue -- true 2>/dev/null"
check "nor cancel" bash -c "! DATABASE_URL='${URL[monitor]}' '$BOXCAR' cancel $held 2>/dev/null"

# ---- the dashboard ----
TOKEN=tok-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
ulog="$BOXCAR_DEV/test-logs/roles_ui.log"
DATABASE_URL=${URL[dashboard]} BOXCAR_UI_TOKEN=$TOKEN "$BOXCAR" ui --listen 127.0.0.1:0 --actions >"$ulog" 2>&1 &
_bg_pids+=($!)
wait_for "ui listens" 10 grep -q 'event=ui.listening' "$ulog"
base="http://127.0.0.1:$(sed -n 's/.*event=ui.listening.* port=\([0-9]*\).*/\1/p' "$ulog")"
auth=(-H "Authorization: Bearer $TOKEN")
code() { curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" "$@"; }
pages=""
for p in / /jobs "/jobs/$ok_id" "/api/jobs/$ok_id/log" /workers /sessions /schedules /webhooks; do
  pages+="$p=$(code "$base$p") "
done
is "every dashboard page is served as boxcar_dashboard" "$pages" \
   "/=200 /jobs=200 /jobs/$ok_id=200 /api/jobs/$ok_id/log=200 /workers=200 /sessions=200 /schedules=200 /webhooks=200 "
victim=$(app enqueue --queue nobody/serves -- true)
csrf=$(curl -s "${auth[@]}" "$base/jobs/$victim" | grep -o 'name="csrf" value="[0-9a-f]*"' | head -1 | cut -d'"' -f4)
is "cancel from the dashboard" "$(code -d "id=$victim&csrf=$csrf" "$base/actions/cancel") $(job_field $victim status)" "303 cancelled"
is "retry from the dashboard" "$(code -d "id=$victim&csrf=$csrf" "$base/actions/retry") $(job_field $victim status)" "303 queued"
dl=$(sql "select id from boxcar.webhook_deliveries where job_id = '$hook_id' limit 1")
sql "update boxcar.webhook_deliveries set status = 'failed' where id = '$dl'"
is "redrive from the dashboard" "$(code -d "id=$dl&csrf=$csrf" "$base/actions/redrive") $(sql "select status from boxcar.webhook_deliveries where id = '$dl'")" "303 pending"
check "the dashboard may not claim" bash -c "! psql -X -qtA '${URL[dashboard]}' -c \"select boxcar.claim('x', '{default}')\" 2>/dev/null"
check "nor report" bash -c "! psql -X -qtA '${URL[dashboard]}' -c \"select boxcar.complete('$held', 'x', 'succeeded')\" 2>/dev/null"
check "nor write a job's row" bash -c "! psql -X -qtA '${URL[dashboard]}' -c \"update boxcar.jobs set status = 'queued'\" 2>/dev/null"

# ---- the worker's limits, then its drain ----
check "the worker's role may not migrate" bash -c "! DATABASE_URL='${URL[worker]}' '$BOXCAR' migrate 2>/dev/null"
check "nor create a role" bash -c "! psql -X -qtA '${URL[worker]}' -c 'create role e2e_roles_evil' 2>/dev/null"
check "nor create a table in schema boxcar" bash -c "! psql -X -qtA '${URL[worker]}' -c 'create table boxcar.evil (x int)' 2>/dev/null"
check "nor pause a queue" bash -c "! psql -X -qtA '${URL[worker]}' -c \"select boxcar.pause_queue('default')\" 2>/dev/null"
is "drain from the dashboard" "$(code -d "id=roles_w&csrf=$csrf" "$base/actions/drain")" "303"
check "the worker drains and stops" wait_for "worker exits" 30 bash -c "! kill -0 $WORKER_PID 2>/dev/null"
check "the worker's log has no permission error" bash -c "! grep -i 'permission denied' '$WLOG'"
check "nor the dashboard's" bash -c "! grep -i 'permission denied' '$ulog'"
tap_done
