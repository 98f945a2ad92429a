# boxcar ui: every page in a real headless Chromium (tests/e2e/ui_browser.py,
# the DevTools protocol), content checked against the database, a cancel
# and a retry clicked through the pages, screenshots under
# .dev/test-logs/ui/; then curl: auth refused, CSRF refused, read-only
# refused, no-auth only on loopback, hostile text escaped, no token in logs.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_ui
start_worker ui_worker --concurrency 3 --poll-interval 1s --sandbox "$E2E_SANDBOX" --queues web
shots="$BOXCAR_DEV/test-logs/ui"
rm -rf "$shots"; mkdir -p "$shots"
hook=http://127.0.0.1:9/hook   # nothing listens there: deliveries stay undelivered
export OK_ID=$("$BOXCAR" enqueue --queue web --webhook-url $hook -- sh -c 'echo hello from the job')
export FAIL_ID=$("$BOXCAR" enqueue --queue web -- sh -c 'echo failing >&2; exit 3')
hostile='<img src=x onerror="window.pwned=1;document.title=1"><script>window.pwned=2</script>'
export XSS_ID=$(python3 -c 'import json,sys; print(json.dumps({"command": ["echo", sys.argv[1]], "env": {"X": sys.argv[1]}}))' "$hostile" |
                "$BOXCAR" enqueue --queue "web" --spec -)
for id in $OK_ID $FAIL_ID $XSS_ID; do "$BOXCAR" status --wait --timeout 60s "$id" >/dev/null; done
export LONG_ID=$("$BOXCAR" enqueue --queue web -- sh -c 'for i in $(seq 1 120); do echo tick $i; sleep 0.5; done')
"$BOXCAR" enqueue --queue idle -- true >/dev/null
"$BOXCAR" schedule add nightly-report --cron "30 2 * * *" --time-zone Europe/Paris --queue web -- true >/dev/null
"$BOXCAR" schedule add hourly-sync --cron "@hourly" --queue web -- true >/dev/null &&
  "$BOXCAR" schedule pause hourly-sync >/dev/null

# A day of finished jobs for the charts (more of them in the last hour),
# some failed, with waits and run times that differ; no worker serves
# the queue, so the rows stay as written.
export CHART_QUEUE=reports
sql "insert into boxcar.jobs (queue, spec, status, attempts, created_at, run_at, started_at, finished_at, error)
     select '$CHART_QUEUE', '{\"command\":[\"true\"]}', case when g % 5 = 0 then 'failed' else 'succeeded' end, 1,
            t - make_interval(secs => 4 + g % 17 + (g % 3) * 2), t - make_interval(secs => 4 + g % 17 + (g % 3) * 2),
            t - make_interval(secs => 0.2 + (g % 9) * 0.45), t,
            case when g % 5 = 0 then '{\"code\":\"NONZERO_EXIT\"}'::jsonb end
       from generate_series(1, 400) g,
            lateral (select now() - make_interval(secs => case when g <= 120 then (g * 53) % 3500 + 20
                                                               else (g * 347) % 86000 + 30 end) as t) x" >/dev/null
# A queue's name cannot hold markup (jobs.queue's check), but the queue
# page's name comes from its URL.
export HOSTILE_QUEUE='q"><img src=x onerror=window.pwned=1>'
# Jobs to retry and cancel in bulk: four failed, one succeeded.
bulk_job() {
  sql "insert into boxcar.jobs (queue, spec, status, attempts, started_at, finished_at, error)
       values ('bulk', '{\"command\":[\"true\"]}', '$1', 1, now(), now(),
               case when '$1' = 'failed' then '{\"code\":\"NONZERO_EXIT\"}'::jsonb end) returning id"
}
export BULK_FAILED="$(bulk_job failed) $(bulk_job failed) $(bulk_job failed) $(bulk_job failed)"
export BULK_OK=$(bulk_job succeeded)

# ui_start NAME ARGS...: boxcar ui on a free port; its base URL in UI_URL.
ui_start() {
  local name=$1; shift
  local log="$BOXCAR_DEV/test-logs/$name.log"
  "$BOXCAR" ui --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  _bg_pids+=($!)
  wait_for "$name listens" 10 grep -q 'event=ui.listening' "$log"
  UI_URL="http://127.0.0.1:$(sed -n 's/.*event=ui.listening.* port=\([0-9]*\).*/\1/p' "$log")"
}
export TOKEN=tok-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
BOXCAR_UI_TOKEN=$TOKEN ui_start ui_actions --actions
base=$UI_URL

# ---- the browser ----
while IFS= read -r line; do
  case "$line" in
    PASS\ *) ok "${line#PASS }" ;;
    FAIL\ *) not_ok "${line#FAIL }" ;;
    *) echo "$line" ;;
  esac
done < <(timeout 300 python3 "$(dirname "$0")/ui_browser.py" "$base" "$TOKEN" "$shots" 2>&1)
n=$(ls "$shots"/*.png 2>/dev/null | wc -l)
check "screenshots of every page are saved under .dev/test-logs/ui ($n)" test "$n" -ge 10

# ---- auth ----
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
is "no credentials: 401" "$(code "$base/jobs")" "401"
is "a browser without credentials is sent to the login form" \
   "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -H 'Accept: text/html' "$base/jobs")" "303 $base/login"
is "a wrong bearer token: 401" "$(code -H "Authorization: Bearer wrong-$TOKEN" "$base/")" "401"
is "a wrong basic password: 401" "$(code -u "admin:wrong-$TOKEN" "$base/")" "401"
is "a wrong basic user: 401" "$(code -u "root:$TOKEN" "$base/")" "401"
is "a forged session cookie: 401" "$(code -b "boxcar_session=$(printf '%064d' 0)" "$base/")" "401"
is "the API needs auth too" "$(code "$base/api/jobs/$OK_ID/log")" "401"
is "the bearer token: 200" "$(code -H "Authorization: Bearer $TOKEN" "$base/")" "200"
is "basic auth with the token as password: 200" "$(code -u "admin:$TOKEN" "$base/workers")" "200"
is "only the stylesheet is public" "$(code "$base/static/style.css") $(code "$base/static/app.js")" "200 401"
is "a wrong token on the login form: 401" "$(code -d "token=wrong-$TOKEN" "$base/login")" "401"
check "which is no basic-auth challenge (a browser would prompt)" bash -c "! curl -s -D - -o /dev/null -d token=x '$base/login' | grep -qi '^WWW-Authenticate'"
check "a request without credentials is challenged" bash -c "curl -s -D - -o /dev/null '$base/' | grep -qi '^WWW-Authenticate: Basic'"
jar=$(mktemp)
is "the login form sets a session" "$(code -c "$jar" -d "token=$TOKEN" "$base/login")" "303"
is "which opens the pages" "$(code -b "$jar" "$base/jobs")" "200"
hdrs=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $TOKEN" "$base/")
check "pages carry a CSP without inline script" grep -qi "^Content-Security-Policy: default-src 'none'; script-src 'self';" <<<"$hdrs"
check "and are not framed" grep -qi '^X-Frame-Options: DENY' <<<"$hdrs"

# ---- CSRF ----
auth=(-H "Authorization: Bearer $TOKEN")
victim=$("$BOXCAR" enqueue --queue idle -- true)
csrf=$(curl -s "${auth[@]}" "$base/jobs/$victim" | grep -o 'name="csrf" value="[0-9a-f]*"' | head -1 | cut -d'"' -f4)
check "a job page carries a CSRF token" test ${#csrf} -eq 64
is "an action without the CSRF token: 403" "$(code "${auth[@]}" -d "id=$victim" "$base/actions/cancel")" "403"
is "with a wrong one: 403" "$(code "${auth[@]}" -d "id=$victim&csrf=${csrf//[0-9]/a}" "$base/actions/cancel")" "403"
is "from another origin: 403" "$(code "${auth[@]}" -H 'Origin: http://evil.example' -d "id=$victim&csrf=$csrf" "$base/actions/cancel")" "403"
is "from a cross-site fetch: 403" "$(code "${auth[@]}" -H 'Sec-Fetch-Site: cross-site' -d "id=$victim&csrf=$csrf" "$base/actions/cancel")" "403"
is "the session's token is not the bearer's: 403" "$(code -b "$jar" -d "id=$victim&csrf=$csrf" "$base/actions/cancel")" "403"
is "an action by GET: not served" "$(code "${auth[@]}" "$base/actions/cancel?id=$victim&csrf=$csrf")" "404"
is "none of them touched the job" "$(job_field $victim status)" "queued"
is "same origin with the token: done (303)" "$(code "${auth[@]}" -H "Origin: $base" -d "id=$victim&csrf=$csrf" "$base/actions/cancel")" "303"
is "the job is cancelled" "$(job_field $victim status)" "cancelled"
v2=$("$BOXCAR" enqueue --queue idle -- true)
bulk_form="op=cancel&id=$v2"
is "a bulk action without the CSRF token: 403" "$(code "${auth[@]}" -d "$bulk_form" "$base/actions/bulk")" "403"
is "with a wrong one: 403" "$(code "${auth[@]}" -d "$bulk_form&csrf=${csrf//[0-9]/a}" "$base/actions/bulk")" "403"
is "from another origin: 403" "$(code "${auth[@]}" -H 'Origin: http://evil.example' -d "$bulk_form&csrf=$csrf" "$base/actions/bulk")" "403"
is "from a cross-site fetch: 403" "$(code "${auth[@]}" -H 'Sec-Fetch-Site: cross-site' -d "$bulk_form&csrf=$csrf" "$base/actions/bulk")" "403"
is "none of them touched the job" "$(job_field $v2 status)" "queued"
is "a bulk action with a malformed id: 400" "$(code "${auth[@]}" -H "Origin: $base" -d "op=cancel&id=x&csrf=$csrf" "$base/actions/bulk")" "400"
is "an unknown bulk operation: 400" "$(code "${auth[@]}" -H "Origin: $base" -d "op=drop&id=$v2&csrf=$csrf" "$base/actions/bulk")" "400"
page=$(curl -s "${auth[@]}" -H "Origin: $base" -d "$bulk_form&id=$victim&csrf=$csrf" "$base/actions/bulk")
check "same origin with the token: the bulk cancel answers per job" \
  grep -qF '<b>1 cancelled</b>, <span class="refused">1 refused: job is cancelled: only a queued or running job can be cancelled</span>' <<<"$page"
is "and cancelled exactly the queued job" "$(job_field $v2 status)" "cancelled"
page=$(curl -s "${auth[@]}" -H "Origin: $base" -d "op=cancel&all=1&queue=$CHART_QUEUE&status=&since=&csrf=$csrf" "$base/actions/bulk")
is "all matching the filter: the newest 200 of the 400, and the page says more match" \
   "$(grep -o 'tr data-id="[^"]*" data-outcome="refused"' <<<"$page" | wc -l) $(grep -c 'id="bulk-capped"' <<<"$page")" "200 1"
is "each refused as finished, nothing changed" \
   "$(sql "select count(*) from boxcar.jobs where queue = '$CHART_QUEUE' and status = 'cancelled'")" "0"
dcsrf=$(curl -s "${auth[@]}" "$base/webhooks" | grep -o 'name="csrf" value="[0-9a-f]*"' | head -1 | cut -d'"' -f4)
dl=$(sql "select id from boxcar.webhook_deliveries where job_id = '$OK_ID'")
sql "update boxcar.webhook_deliveries set status = 'failed' where id = '$dl'"
is "redrive from the webhooks page: done" "$(code "${auth[@]}" -d "id=$dl&csrf=$dcsrf" "$base/actions/redrive")" "303"
is "the delivery is pending again" "$(sql "select status || ' ' || attempts from boxcar.webhook_deliveries where id = '$dl'" | cut -d' ' -f1)" "pending"
is "drain from the workers page: done" "$(code "${auth[@]}" -d "id=ui_worker&csrf=$dcsrf" "$base/actions/drain")" "303"
is "the worker was asked to drain" "$(sql "select drain_requested_at is not null from boxcar.workers where id = 'ui_worker'")" "t"

# ---- read-only ----
BOXCAR_UI_TOKEN=$TOKEN ui_start ui_readonly
ro=$UI_URL
again=$("$BOXCAR" enqueue --queue idle -- true)
page=$(curl -s "${auth[@]}" "$ro/jobs/$again")
rcsrf=$(grep -o 'name="csrf" value="[0-9a-f]*"' <<<"$page" | head -1 | cut -d'"' -f4)
check "read-only: the buttons are disabled" grep -q 'data-action="cancel" disabled' <<<"$page"
is "read-only: an action with a valid CSRF token is refused (403)" "$(code "${auth[@]}" -d "id=$again&csrf=$rcsrf" "$ro/actions/cancel")" "403"
is "and the job is untouched" "$(job_field $again status)" "queued"
is "read-only: a bulk action with a valid CSRF token is refused (403)" \
   "$(code "${auth[@]}" -d "op=cancel&id=$again&csrf=$rcsrf" "$ro/actions/bulk")" "403"
is "and the job is still untouched" "$(job_field $again status)" "queued"

# ---- escaping, as served ----
page=$(curl -s "${auth[@]}" "$base/jobs/$XSS_ID")
check "the hostile spec is escaped in the HTML" grep -qF '&lt;img src=x onerror=' <<<"$page"
check "no raw hostile markup in the HTML" bash -c '! grep -qF "<img src=x" <<<"$1" && ! grep -qF "<script>window" <<<"$1"' _ "$page"
log=$(curl -s "${auth[@]}" "$base/api/jobs/$XSS_ID/log")
check "the log API answers JSON with the hostile text as a string" \
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if "<img src=x" in "".join(c["text"] for c in d["chunks"]) else 1)' "$log"
is "the log API's type is JSON (never sniffed as HTML)" "$(curl -s -o /dev/null -w '%{content_type}' "${auth[@]}" "$base/api/jobs/$XSS_ID/log")" "application/json"
q=$(curl -s "${auth[@]}" "$base/jobs?queue=%22%3E%3Cscript%3Ex%3C/script%3E")
qp=$(curl -s "${auth[@]}" "$base/queue?name=%22%3E%3Cscript%3Ex%3C/script%3E")
check "a hostile queue name is escaped on the queue page and in its links" \
  bash -c 'grep -qF "<code id=\"queue-name\">&quot;&gt;&lt;script&gt;x&lt;/script&gt;</code>" <<<"$1" &&
           grep -qF "href=\"/jobs?queue=%22%3E%3Cscript%3Ex%3C%2Fscript%3E\"" <<<"$1" && ! grep -qF "<script>x" <<<"$1"' _ "$qp"
check "a hostile filter value is escaped back into the form" grep -qF 'value="&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' <<<"$q"

# ---- the artifact link and the next page ----
art=$(sql "insert into boxcar.jobs (queue, spec, status, result) values ('idle', '{\"command\":[\"x\"]}', 'succeeded',
  '{\"artifact\": {\"storage\": \"s1\", \"sha256\": \"ab12\", \"url\": \"https://s3.example/k?X-Amz-Signature=f00&x=<b>\"}}') returning id")
page=$(curl -s "${auth[@]}" "$base/jobs/$art")
check "a job's page links its artifact's presigned URL, escaped" \
  grep -qF 'id="artifact" rel="noreferrer noopener" href="https://s3.example/k?X-Amz-Signature=f00&amp;x=&lt;b&gt;"' <<<"$page"
bad=$(sql "insert into boxcar.jobs (queue, spec, status, result) values ('idle', '{\"command\":[\"x\"]}', 'succeeded',
  '{\"artifact\": {\"storage\": \"s1\", \"sha256\": \"ab12\", \"url\": \"javascript:alert(1)\"}}') returning id")
check "a result's javascript: URL is never a link" bash -c '! curl -s "$@" | grep -q "id=\"artifact\""' _ "${auth[@]}" "$base/jobs/$bad"
p1=$(curl -s "${auth[@]}" "$base/jobs?limit=2")
next=$(grep -o 'id="next" href="[^"]*"' <<<"$p1" | cut -d'"' -f4 | sed 's/&amp;/\&/g')
p2=$(curl -s "${auth[@]}" "$base$next")
ids() { grep -o 'tr data-id="[^"]*"' | cut -d'"' -f2 | tr '\n' ' '; }
is "the jobs page's Next link continues the keyset" "$(ids <<<"$p1")$(ids <<<"$p2")" \
   "$(sql "select string_agg(job->>'id', ' ') || ' ' from boxcar.jobs_list(lim => 4)")"

# ---- starting ----
"$BOXCAR" ui --listen 0.0.0.0:0 --no-auth 2>/dev/null
is "--no-auth on a public address is refused (usage)" "$?" "2"
env -u BOXCAR_UI_TOKEN "$BOXCAR" ui --listen 127.0.0.1:0 2>/dev/null
is "no token and no --no-auth: refused" "$?" "2"
BOXCAR_UI_TOKEN=short "$BOXCAR" ui --listen 127.0.0.1:0 2>/dev/null
is "a short token is refused" "$?" "2"
env -u BOXCAR_UI_TOKEN bash -c "$(declare -f ui_start wait_for); _bg_pids=(); BOXCAR_DEV='$BOXCAR_DEV' BOXCAR='$BOXCAR' ui_start ui_noauth --no-auth; echo \$UI_URL \${_bg_pids[0]}" > "$BOXCAR_DEV/test-logs/ui_noauth.url"
read -r na na_pid < "$BOXCAR_DEV/test-logs/ui_noauth.url"
_bg_pids+=("$na_pid")
is "--no-auth on loopback serves without credentials" "$(code "$na/")" "200"
is "but only to a loopback Host (DNS rebinding)" "$(code -H 'Host: evil.example' "$na/")" "421"
check "an action is logged with who asked" grep -q "event=ui.action action=cancel id=$victim who=token" "$BOXCAR_DEV/test-logs/ui_actions.log"
check "and so is the retry clicked in the browser" grep -q "event=ui.action action=retry id=$FAIL_ID who=admin" "$BOXCAR_DEV/test-logs/ui_actions.log"
first_bulk=${BULK_FAILED%% *}
check "a bulk retry is logged per job with who asked" grep -q "event=ui.action action=retry id=$first_bulk who=admin bulk=1" "$BOXCAR_DEV/test-logs/ui_actions.log"
check "and so is a bulk cancel" grep -q "event=ui.action action=cancel id=$v2 who=token bulk=1" "$BOXCAR_DEV/test-logs/ui_actions.log"
check "no log line holds the token" bash -c "! grep -rqF '$TOKEN' '$BOXCAR_DEV'/test-logs/ui_*.log"
rm -f "$jar"
tap_done
