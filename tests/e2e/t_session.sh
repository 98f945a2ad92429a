# Sessions (issue 47) through real workers, sandboxes and S3: a session's
# jobs run one after another in one live sandbox, where background
# processes, /tmp, $HOME, installed files and the network namespace
# persist; code jobs keep their interpreter; file operations need no
# process and never resolve through the sandbox's root; stdin; every job
# end is a checkpoint, so a killed holder loses processes, never files,
# and the next job resumes elsewhere; idle ends and evictions checkpoint
# first; limits hold across jobs; sessions do not see each other, nor
# across scopes; a session forks from another's checkpoint.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]] || ! grep -qw overlay /proc/filesystems; then
  skip "sessions need the namespace backend as root"; tap_done; exit 0
fi
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-session-$$"
fresh_db e2e_session
tmp=$(mktemp -d)
probe=/tmp/boxcar-session-probe-$$
trap 'cleanup_bg; rm -f "$probe"; [[ -n ${KEEP_TMP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
PORT=$(free_port)
rm -rf "$BOXCAR_DEV/work/ses-a" "$BOXCAR_DEV/work/ses-b" "$BOXCAR_DEV/work/ses-c"
metric() { metric_at "$PORT" "$1"; }

# enq SESSION JSON-FIELDS [QUEUE]: a job of SESSION (fields merged in).
enq() {
  jq -cn --arg s "$1" --argjson f "$2" '{session: {id: $s}, limits: {disk_mb: 128}} * $f' |
    "$BOXCAR" enqueue --queue "${3:-default}" --spec -
}
wait_job() { "$BOXCAR" status --wait "$1" >/dev/null; }
run() { local id; id=$(enq "$@"); wait_job "$id"; echo "$id"; }
out() { job_field "$1" "result->>'stdout'"; }
st() { job_field "$1" status; }
sh_job() { run "$1" "$(jq -cn --arg c "$2" '{command: ["sh", "-c", $c]}')" "${3:-default}"; }

start_worker ses-a --concurrency 2 --lease 4s --poll-interval 200ms --sandbox namespace \
  --metrics-addr "127.0.0.1:$PORT" --queues default,t1/q,t2/q
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
A_PID=$WORKER_PID

# ---- What persists between a session's jobs ----
j1=$(sh_job web 'setsid python3 -m http.server 8000 & echo tmp > /tmp/t; echo home > "$HOME/h"; mkdir -p ~/.local/bin; printf "#!/bin/sh\necho tool\n" > ~/.local/bin/tool; chmod +x ~/.local/bin/tool; echo started')
is "the first job starts the session and leaves a server running" "$(st $j1) $(out $j1)" "succeeded started"
is "its events say the session started" "$(sql "select count(*) from boxcar.job_events where job_id = '$j1' and kind = 'session_started'")" "1"
wall=$(job_field $j1 "(result->>'wall_ms')::int")
check "the job ended without waiting for what it left running ($wall ms)" test "${wall:-99999}" -lt 5000
j2=$(sh_job web 'for i in 1 2 3 4 5 6 7 8 9 10; do python3 -c "import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:8000/\").status)" 2>/dev/null && break; sleep 0.3; done; cat /tmp/t "$HOME/h"; ~/.local/bin/tool; echo "$BOXCAR_SESSION_ID $BOXCAR_SESSION_JOB $BOXCAR_SESSION_RESUMED"')
is "the next job reaches the server, /tmp, \$HOME and the installed tool" "$(st $j2) $(out $j2 | tr -s '\n' ' ')" "succeeded 200 tmp home tool web 2 0 "
is "both ran in the same sandbox, in order (seq 1, 2)" \
   "$(job_field $j1 "result->'session'->>'seq'") $(job_field $j2 "result->'session'->>'seq'")" "1 2"
is "one session started on this worker" "$(metric 'boxcar_session_events_total{event="start"}') $(metric boxcar_sessions_live)" "1 1"
is "the session is live, held by ses-a" "$(sql "select state || ' ' || holder from boxcar.sessions where id = 'web'")" "live ses-a"

# ---- Every job's end is a checkpoint, with the job's end ----
j3=$(sh_job web 'echo v3 > ws3.txt')
v3=$(job_field $j3 "result->'artifact'->>'sha256'")
is "the job's checkpoint is the session storage's head, recorded with it" \
   "$(sql "select head_version from boxcar.storages where name = 'session-web'")" "$v3"
check "and is a layer over the previous one" test "$(job_field $j3 "(result->'artifact'->>'layers')::int")" -ge 2

# ---- stdin ----
js=$(run web '{"command": ["sh", "-c", "tr a-z A-Z; echo"], "stdin": "fed through stdin"}')
is "stdin is fed to the command" "$(st $js) $(out $js)" "succeeded FED THROUGH STDIN"

# ---- script jobs, one after another in the same session ----
jsa=$(run web '{"script": "echo first script"}')
jsb=$(run web '{"script": "echo second script"}')
is "two script jobs in one session each run their own script" \
   "$(st $jsa) $(out $jsa) $(st $jsb) $(out $jsb)" "succeeded first script succeeded second script"

# ---- What a command starts with (the agent's spawn, under the sandbox's seccomp filter) ----
jc=$(run web '{"command": ["cat", "/proc/self/status"]}')
is "a command starts with no signal blocked or ignored" \
   "$(st $jc) $(out $jc | grep -E '^Sig(Blk|Ign):' | tr -s '\t\n' '  ')" \
   "succeeded SigBlk: 0000000000000000 SigIgn: 0000000000000000 "
jp=$(run web '{"command": ["cat", "/proc/self/stat"]}')
is "in a process group and session of its own" "$(out $jp | awk 'NR == 1 { print ($1 == $5 && $1 == $6) }')" "1"
jf=$(run web '{"command": ["ls", "/proc/self/fd"]}')
is "with fds 0, 1 and 2 only (3: the directory ls reads)" "$(out $jf | xargs)" "0 1 2 3"
jm=$(run web '{"command": ["no-such-command-boxcar"]}')
is "a command not in PATH exits 127, the agent saying why on its stderr" \
   "$(st $jm) $(job_field $jm "result->>'exit_code'") $(job_field $jm "result->>'stderr'")" \
   "failed 127 exec no-such-command-boxcar: No such file or directory"
sh_job web 'printf "#!/bin/sh\n" > notexec' >/dev/null
jx=$(run web '{"command": ["./notexec"]}')
is "one that is not executable exits 126" \
   "$(st $jx) $(job_field $jx "result->>'exit_code'") $(job_field $jx "result->>'stderr'")" \
   "failed 126 exec ./notexec: Permission denied"

# ---- Timeout and cancel end the job's own process group, not the session ----
jt=$(run web '{"command": ["sh", "-c", "sleep 30 & sleep 30"], "limits": {"timeout_s": 1, "disk_mb": 128}}')
is "a job past its timeout is killed" "$(st $jt) $(job_field $jt "error->>'code'")" "failed TIMEOUT"
ja=$(sh_job web 'pgrep -x sleep >/dev/null && echo sleepers || echo none; python3 -c "import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:8000/\").status)"')
is "its process group died with it; the server the session left runs on" "$(st $ja) $(out $ja | tr -s '\n' ' ')" "succeeded none 200 "

# ---- Stateful code ----
c1=$(run web '{"code": {"language": "python", "source": "import json\nx = 41\nprint(\"set\")"}}')
c2=$(run web '{"code": {"language": "python", "source": "def main(add):\n    return {\"x\": x + add, \"json\": json.dumps(1)}", "arguments": {"add": 1}}}')
is "a Python variable and import made by one code job are there in the next" \
   "$(st $c1) $(out $c1) $(st $c2) $(job_field $c2 "result->'return_value'->>'x'") $(job_field $c2 "result->'return_value'->>'json'")" \
   "succeeded set succeeded 42 1"
c3=$(run web '{"code": {"language": "python", "source": "raise ValueError(\"boom\")"}}')
is "an exception fails its job, with the traceback" "$(st $c3) $(job_field $c3 "result->>'stderr' like '%ValueError: boom%'")" "failed t"
c4=$(run web '{"code": {"language": "python", "source": "def main():\n    return x"}}')
is "and the interpreter's state survives it" "$(st $c4) $(job_field $c4 "result->>'return_value'")" "succeeded 41"
c5=$(run web '{"code": {"language": "python", "source": "import os\nos._exit(3)"}}')
is "an interpreter that dies fails its job" "$(st $c5)" "failed"
c6=$(run web '{"code": {"language": "python", "source": "def main():\n    return x"}}')
is "the next job gets a fresh interpreter (x is gone)" "$(st $c6) $(job_field $c6 "result->>'stderr' like '%NameError%'")" "failed t"
if command -v node >/dev/null; then
  n1=$(run web '{"code": {"language": "node", "source": "globalThis.count = 5"}}')
  n2=$(run web '{"code": {"language": "node", "source": "function main() { return count * 2 }"}}')
  is "node keeps its interpreter too" "$(st $n1) $(st $n2) $(job_field $n2 "result->>'return_value'")" "succeeded succeeded 10"
else
  not_ok "node is installed (make run installs it)"
fi

# ---- Files without a process ----
B64=$(printf '\x00\x01binary\xff' | base64)
f1=$(run web "$(jq -cn --arg b "$B64" '{files: [
  {op: "write", path: "notes/a.txt", content: "hello\n", parents: true},
  {op: "write", path: "/workspace/bin.dat", content: $b, encoding: "base64"},
  {op: "read", path: "notes/a.txt"},
  {op: "read", path: "bin.dat"},
  {op: "mkdir", path: "d1/d2", parents: true},
  {op: "move", path: "notes/a.txt", to: "d1/d2/b.txt"},
  {op: "list", path: "d1/d2"},
  {op: "stat", path: "bin.dat"},
  {op: "remove", path: "notes", recursive: true}]}')")
is "file operations run in order, each with its result" "$(st $f1) $(job_field $f1 "jsonb_array_length(result->'files')")" "succeeded 9"
is "read gives text back as text" "$(job_field $f1 "result->'files'->2->>'content'")" "hello"
is "and bytes as base64" "$(job_field $f1 "result->'files'->3->>'encoding'") $(job_field $f1 "result->'files'->3->>'content'")" "base64 $B64"
is "list names the entries" "$(job_field $f1 "result->'files'->6->'entries'->0->>'name'") $(job_field $f1 "result->'files'->6->'entries'->0->>'type'")" "b.txt file"
is "stat gives the size" "$(job_field $f1 "result->'files'->7->'stat'->>'size'")" "9"
jf=$(sh_job web 'cat d1/d2/b.txt; test -e notes && echo notes-left || echo notes-gone')
is "a command sees what the file operations did" "$(out $jf | tr -s '\n' ' ')" "hello notes-gone "
rb=$(run web '{"files": [{"op": "write", "path": "big.txt", "content": "0123456789"}, {"op": "read", "path": "big.txt"}], "limits": {"output_bytes": 4, "disk_mb": 128}}')
is "a read is bounded by output_bytes" "$(job_field $rb "result->'files'->1->>'content'") $(job_field $rb "result->'files'->1->>'truncated'") $(job_field $rb "result->'files'->1->>'size'")" "0123 true 10"
fm=$(run web '{"files": [{"op": "read", "path": "missing"}, {"op": "write", "path": "after.txt", "content": "x"}]}')
is "a failing operation fails the job, names itself, and the rest still run" \
   "$(st $fm) $(job_field $fm "error->>'code'") $(job_field $fm "result->'files'->1->>'ok'")" "failed FILE_OP_FAILED true"
check "its message names the operation" sql_true "select error->>'message' like 'files[0] (read missing): No such file%' from boxcar.jobs where id = '$fm'"

# Hostile paths: they resolve inside the sandbox's root, never through it.
echo host-secret > "$probe"; chmod 644 "$probe"
hp=$(sh_job web "ln -s /etc/shadow leak; ln -s $probe probe; ln -s ../../../../../../$probe rel")
fh=$(run web "$(jq -cn --arg p "$probe" '{files: [
  {op: "read", path: "leak"}, {op: "read", path: "../../../../etc/shadow"},
  {op: "read", path: "/etc/shadow"}, {op: "write", path: "probe", content: "pwned"},
  {op: "write", path: "rel", content: "pwned"}, {op: "read", path: $p},
  {op: "remove", path: "probe"}]}')")
shadow_leaked=$(job_field $fh "exists (select from jsonb_array_elements(result->'files') e where e->>'content' like 'root:%')")
is "a symlink to /etc/shadow, .. and an absolute path never reach the host's /etc/shadow" "$shadow_leaked" "f"
is "writes through planted symlinks never reach the host" "$(cat "$probe")" "host-secret"
check "the host's file is not readable by its host path either" \
   sql_true "select coalesce((result->'files'->5->>'content') is distinct from 'host-secret' || chr(10), true) from boxcar.jobs where id = '$fh'"
check "removing a symlink removes the link, not its target" test -f "$probe"

# ---- Sessions do not see each other ----
o1=$(sh_job other 'test -e /tmp/t && echo sees-tmp || echo no-tmp; test -e ws3.txt && echo sees-ws || echo no-ws; python3 -c "import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8000/\")" 2>/dev/null && echo sees-server || echo no-server; ps -e -o comm= | grep -c python3 || true')
is "another session sees none of its files, /tmp, server or processes" "$(out $o1 | tr -s '\n' ' ')" "no-tmp no-ws no-server 0 "

# ---- Scopes: a session belongs to the scope that made it ----
sc1=$(sh_job shared 'echo t1 > mine' t1/q)
is "a scope's session runs" "$(st $sc1)" "succeeded"
sc2=$(sh_job shared 'cat mine 2>/dev/null || echo none' t2/q)
is "another scope's session of the same id is its own: none of the first one's files" \
   "$(st $sc2) $(out $sc2)" "succeeded none"
is "each in a storage of its scope" \
   "$(sql "select string_agg(scope || '=' || storage || '=' || (select owner_scope from boxcar.storages where name = s.storage), ' ' order by scope) from boxcar.sessions s where id = 'shared'")" \
   "t1=session-t1.shared=t1 t2=session-t2.shared=t2"

# ---- Fork: a new session from another's checkpoint ----
fk=$(run fork1 "$(jq -cn '{command: ["sh", "-c", "cat ws3.txt; echo fork > forked.txt"], session: {id: "fork1", from: {session: "web"}}}')")
is "a fork starts from the other session's checkpoint" "$(st $fk) $(out $fk)" "succeeded v3"
wb=$(sh_job web 'test -e forked.txt && echo sees-fork || echo apart')
is "and the two diverge" "$(out $wb)" "apart"

# ---- Limits hold across the session's jobs ----
l1=$(run lim '{"command": ["sh", "-c", "head -c 40000000 /dev/zero > a.bin && echo ok"], "limits": {"disk_mb": 64}}')
l2=$(run lim '{"command": ["sh", "-c", "head -c 40000000 /dev/zero > b.bin && echo ok || echo full"], "limits": {"disk_mb": 64}}')
is "the session's disk is one filesystem across its jobs" "$(out $l1) $(out $l2)" "ok full"

# ---- An explicit end ----
is "boxcar.end_session asks the holder to end a live session" "$(sql "select boxcar.end_session('default', 'lim')")" "ending"
wait_for "the holder ends it" 10 sql_true "select state = 'ended' from boxcar.sessions where id = 'lim'"
check "it is ended" sql_true "select state = 'ended' and holder is null from boxcar.sessions where id = 'lim'"

# ---- The holder killed between two jobs: the next job resumes elsewhere ----
k1=$(sh_job web 'echo kept > before-kill.txt; setsid sleep 300 & echo ok')
kill -9 "$A_PID"
start_worker ses-b --concurrency 1 --lease 4s --poll-interval 200ms --sandbox namespace --queues default
k2=$(enq web '{"command": ["sh", "-c", "cat before-kill.txt ws3.txt; echo resumed=$BOXCAR_SESSION_RESUMED; pgrep -x sleep || echo no-sleep"]}')
wait_job "$k2"
is "the next job resumes on another worker with every file change" "$(st $k2) $(out $k2 | tr -s '\n' ' ')" "succeeded kept v3 resumed=1 no-sleep "
is "it is told: an event and the environment" "$(sql "select count(*) from boxcar.job_events where job_id = '$k2' and kind = 'session_resumed'")" "1"
is "nothing ran twice" "$(sql "select count(*) from boxcar.job_events where job_id = '$k1' and kind = 'claimed'")" "1"
is "the session is held by ses-b now" "$(sql "select holder from boxcar.sessions where id = 'web'")" "ses-b"
kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null || true

# ---- Idle end and eviction, each after a final checkpoint ----
PORT=$(free_port)
start_worker ses-c --concurrency 1 --lease 4s --poll-interval 200ms --sandbox namespace \
  --max-sessions 1 --metrics-addr "127.0.0.1:$PORT"
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
i1=$(run idle '{"command": ["sh", "-c", "(sleep 1; echo late > late.txt) & echo ok"], "session": {"id": "idle", "idle_timeout_s": 3}}')
wait_for "the idle session ends" 15 sql_true "select state = 'stopped' from boxcar.sessions where id = 'idle'"
is "an idle session ends after idle_timeout_s" "$(metric 'boxcar_session_events_total{event="idle_end"}')" "1"
i2=$(sh_job idle 'cat late.txt')
is "its final checkpoint kept what changed after its last job" "$(st $i2) $(out $i2)" "succeeded late"
e1=$(sh_job evict 'echo e > e.txt')
is "a second session on a worker of --max-sessions 1 evicts the first" \
   "$(metric 'boxcar_session_events_total{event="eviction"}') $(sql "select state from boxcar.sessions where id = 'idle'")" "1 stopped"
e2=$(sh_job idle 'cat late.txt')
is "the evicted session resumes from its checkpoint" "$(st $e2) $(out $e2)" "succeeded late"

tap_done
