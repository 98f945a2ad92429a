# `boxcar sessions`, `boxcar sessions end` and the dashboard's Sessions
# page, on sessions made by inserting session jobs (the jobs trigger makes
# each session's row) and holds written by hand: no worker runs them.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_sessions_cli

# job QUEUE SESSION: a queued session job, inserted as an app would.
job() {
  sql "insert into boxcar.jobs (queue, spec) values ('$1', '{\"session\": {\"id\": \"$2\"}, \"command\": [\"true\"]}')"
}
job default s1
job default s1
job acme/agents chat-7
job acme/agents st-1
job acme/other ui-1
# chat-7 and ui-1 are live on a worker (not a registered one), st-1 was
# live until its hold lapsed.
sql "update boxcar.sessions set state = 'live', holder = 'w-live', held_until = now() + interval '1 hour',
       starts = 2, resumes = 1, jobs = 5, last_job_at = '2026-01-02 03:04:05+00' where id in ('chat-7', 'ui-1')"
sql "update boxcar.sessions set state = 'live', holder = 'w-old', held_until = now() - interval '1 minute'
      where id = 'st-1'"

# ---- the list ----
out=$("$BOXCAR" sessions)
is "boxcar sessions exits 0" "$?" "0"
is "its header" "$(head -1 <<<"$out" | tr -s ' ')" "SCOPE ID STATE HOLDER JOBS STARTS RESUMES LAST-JOB QUEUED"
# row ID: the row's columns, blanks squeezed.
row() { awk -v id="$1" '$2 == id' <<<"$out" | tr -s ' '; }
is "a stopped session: no holder, its two queued jobs" "$(row s1)" "default s1 stopped - 0 0 0 - 2"
is "a live one: holder, counters, last job (UTC)" "$(row chat-7)" "acme chat-7 live w-live 5 2 1 2026-01-02 03:04:05 1"
is "a lapsed hold shows stale" "$(row st-1 | cut -d' ' -f3,4)" "stale w-old"
is "rows by scope, then id" "$(tail -n +2 <<<"$out" | awk '{print $1 "/" $2}' | tr '\n' ' ')" \
   "acme/chat-7 acme/st-1 acme/ui-1 default/s1 "
out=$("$BOXCAR" sessions --scope default)
is "--scope S lists that scope's only" "$(tail -n +2 <<<"$out" | awk '{print $2}' | tr '\n' ' ')" "s1 "

json=$("$BOXCAR" sessions --json)
is "--json is one JSON array" "$(jq -r '"\(type) \(length)"' <<<"$json")" "array 4"
is "each row is boxcar.session_list's, by scope and id" \
   "$(jq -r '[.[] | "\(.scope)/\(.id):\(.state):\(.storage):\(.queued)"] | join(" ")' <<<"$json")" \
   "acme/chat-7:live:session-acme.chat-7:1 acme/st-1:stale:session-acme.st-1:1 acme/ui-1:live:session-acme.ui-1:1 default/s1:stopped:session-s1:2"
is "with its holder and whether it is alive" "$(jq -r '.[0] | "\(.holder) \(.holder_alive) \(.jobs)"' <<<"$json")" "w-live false 5"
is "--json --scope of no session: []" "$("$BOXCAR" sessions --json --scope nobody)" "[]"

# ---- end ----
out=$("$BOXCAR" sessions end s1)
is "end ID: a session of scope default, not live: ended" "$out" "ended"
is "it is ended in the database" "$(sql "select state, ended_at is not null from boxcar.sessions where id = 's1'")" "ended|t"
out=$("$BOXCAR" sessions end acme/chat-7)
is "end SCOPE/ID of a live session: ending (its worker stops it)" "$out" "ending"
is "its end is asked, it stays live until its worker releases it" \
   "$(sql "select state, end_requested_at is not null from boxcar.sessions where id = 'chat-7'")" "live|t"
is "the list shows it ending" "$("$BOXCAR" sessions --scope acme | awk '$2 == "chat-7" {print $3}')" "ending"
out=$("$BOXCAR" sessions end --json acme/st-1)
is "end --json: scope, id and state (a lapsed hold ends at once)" \
   "$(jq -r '"\(.scope) \(.id) \(.state)"' <<<"$out")" "acme st-1 ended"
is "and its hold is dropped" "$(sql "select state, holder is null from boxcar.sessions where id = 'st-1'")" "ended|t"
is "its queued job is not cancelled" "$(sql "select status from boxcar.jobs where session_id = 'st-1'")" "queued"

err=$("$BOXCAR" sessions end nope 2>&1 >/dev/null); rc=$?
is "an unknown session: exit 1" "$rc" "1"
is "with a message naming it" "$err" 'boxcar sessions end: no session "nope" in scope "default"'
err=$("$BOXCAR" sessions end acme/s1 2>&1 >/dev/null); rc=$?
is "a session of another scope is not found there" "$rc $err" \
   '1 boxcar sessions end: no session "s1" in scope "acme"'
"$BOXCAR" sessions end >/dev/null 2>&1
is "end without a session: usage (2)" "$?" "2"
err=$("$BOXCAR" sessions end a/b/c 2>&1); rc=$?
is "SCOPE/ID with another '/': usage (2), named" "$rc $err" \
   "2 boxcar sessions end: 'a/b/c': expected ID or SCOPE/ID (neither empty, no other '/')"
"$BOXCAR" sessions end /x >/dev/null 2>&1
is "an empty scope: usage (2)" "$?" "2"
"$BOXCAR" sessions end s1 s2 >/dev/null 2>&1
is "two sessions: usage (2)" "$?" "2"
err=$("$BOXCAR" sessions bogus 2>&1); rc=$?
is "an unknown argument: usage (2)" "$rc $err" "2 boxcar sessions: unexpected argument 'bogus'"
"$BOXCAR" sessions --scope '' >/dev/null 2>&1
is "an empty --scope: usage (2)" "$?" "2"

# ---- the dashboard ----
log="$BOXCAR_DEV/test-logs/sessions_ui.log"
mkdir -p "$BOXCAR_DEV/test-logs"
TOKEN=tok-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
BOXCAR_UI_TOKEN=$TOKEN "$BOXCAR" ui --listen 127.0.0.1:0 --actions >"$log" 2>&1 &
_bg_pids+=($!)
wait_for "boxcar ui listens" 10 grep -q 'event=ui.listening' "$log"
base="http://127.0.0.1:$(sed -n 's/.*event=ui.listening.* port=\([0-9]*\).*/\1/p' "$log")"
auth=(-H "Authorization: Bearer $TOKEN")
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

is "the page needs auth" "$(code "$base/sessions")" "401"
page=$(curl -s "${auth[@]}" "$base/sessions")
check "the navigation links the Sessions page" grep -qF '<a href="/sessions" class="here">Sessions</a>' <<<"$page"
is "it lists every session, by scope and id" \
   "$(grep -o '<tr data-id="[^"]*"' <<<"$page" | cut -d'"' -f2 | tr '\n' ' ')" \
   "acme/chat-7 acme/st-1 acme/ui-1 default/s1 "
ui_row() { grep -o "<tr data-id=\"$1\">.*</tr>" <<<"$page"; }
check "a live session's row: state, holder (gone: no such worker), jobs, last job, queued" \
  grep -qE '<td class="state">live</td><td class="holder">w-live \(gone\)</td><td class="jobs">5</td><td class="last"><time datetime="2026-01-02 03:04:05" title="2026-01-02 03:04:05">[0-9]+ (s|min|h|d) ago</time></td><td class="queued">1</td>' <<<"$(ui_row acme/ui-1)"
check "with an End button" grep -q 'data-action="end-session"' <<<"$(ui_row acme/ui-1)"
check "an ending one shows ending, without a button" \
  bash -c 'grep -qF "<td class=\"state\">ending</td>" <<<"$1" && ! grep -q "data-action" <<<"$1"' _ "$(ui_row acme/chat-7)"
check "an ended one has no button" bash -c '! grep -q "data-action" <<<"$1"' _ "$(ui_row default/s1)"
page=$(curl -s "${auth[@]}" "$base/sessions?scope=default")
is "?scope= lists one scope" "$(grep -o '<tr data-id="[^"]*"' <<<"$page" | cut -d'"' -f2 | tr '\n' ' ')" "default/s1 "

page=$(curl -s "${auth[@]}" "$base/sessions")
csrf=$(grep -o 'name="csrf" value="[0-9a-f]*"' <<<"$page" | head -1 | cut -d'"' -f4)
check "the page carries a CSRF token" test ${#csrf} -eq 64
is "End without the CSRF token: 403" "$(code "${auth[@]}" -d "id=acme/ui-1" "$base/actions/end-session")" "403"
is "End from another origin: 403" \
   "$(code "${auth[@]}" -H 'Origin: http://evil.example' -d "id=acme/ui-1&csrf=$csrf" "$base/actions/end-session")" "403"
is "neither touched the session" "$(sql "select end_requested_at is null from boxcar.sessions where id = 'ui-1'")" "t"
is "a malformed SCOPE/ID: 400" "$(code "${auth[@]}" -d "id=ui-1&csrf=$csrf" "$base/actions/end-session")" "400"
resp=$(curl -s -w '\n%{http_code}' "${auth[@]}" -d "id=acme/nope&csrf=$csrf" "$base/actions/end-session")
is "an unknown session: 409" "$(tail -1 <<<"$resp")" "409"
check "naming it" grep -qF 'no session &quot;nope&quot; in scope &quot;acme&quot;' <<<"$resp"
is "End: done, back to the page (303)" \
   "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "${auth[@]}" -H "Origin: $base" -d "id=acme/ui-1&csrf=$csrf" "$base/actions/end-session")" \
   "303 $base/sessions"
is "its end is asked" "$(sql "select state, end_requested_at is not null from boxcar.sessions where id = 'ui-1'")" "live|t"
check "the action is logged with who asked" grep -q "event=ui.action action=end-session id=acme/ui-1 who=token" "$log"
tap_done
