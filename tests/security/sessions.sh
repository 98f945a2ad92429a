# Attacks on sessions (issue 47), through a real worker: a session's jobs
# share its sandbox and uid with the session's agent, so a job can kill
# it, but never ptrace it, read its memory or fds, reach the worker's
# socket it came through, or use it to reach another session or scope.
# A job's result can only ever be its own session's.
source "$(dirname "$0")/../lib.sh"
if [[ $(id -u) -ne 0 ]] || ! grep -qw overlay /proc/filesystems; then
  skip "sessions need the namespace backend as root"; tap_done; exit 0
fi
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="sec-session-$$"
fresh_db sec_session
rm -rf "$BOXCAR_DEV/work/sec-ses"
start_worker sec-ses --concurrency 2 --lease 4s --poll-interval 200ms --sandbox namespace \
  --queues default,a/q,b/q
enq() {
  jq -cn --arg s "$1" --arg c "$2" '{session: {id: $s}, command: ["sh", "-c", $c]}' |
    "$BOXCAR" enqueue --queue "${3:-default}" --spec -
}
run() { local id; id=$(enq "$@"); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }
out() { job_field "$1" "result->>'stdout'"; }

AGENT='for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = boxcar-session- ] && echo ${p#/proc/}; done | head -1'
s1=$(run sa "echo one > one.txt; $AGENT")
apid=$(out $s1)
check "the agent runs in the session's sandbox (pid $apid)" test -n "$apid"
s2=$(run sa "cat /proc/$apid/environ >/dev/null 2>&1 && echo environ-read || echo environ-denied; ls /proc/$apid/fd >/dev/null 2>&1 && echo fds-listed || echo fds-denied; head -c1 /proc/$apid/mem >/dev/null 2>&1 && echo mem-read || echo mem-denied")
is "a job cannot read the agent's environment, fds or memory (it is not dumpable)" \
   "$(out $s2 | tr -s '\n' ' ')" "environ-denied fds-denied mem-denied "
s3=$(run sa "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); print(\"attached\" if l.ptrace(16, $apid, 0, 0) == 0 else \"refused\")'")
is "nor ptrace it" "$(out $s3)" "refused"
s4=$(run sa 'ls /run/boxcar/; test -S /run/boxcar/agent.sock && echo socket-left || echo no-socket')
check "the worker's rendezvous socket is gone once the agent is connected" grep -q no-socket <<<"$(out $s4)"
s5=$(run sa 'touch /run/boxcar/x 2>/dev/null && echo meta-writable || echo meta-ro')
is "boxcar's files in the session are read-only" "$(out $s5)" "meta-ro"

# The progress channel (issue 49): a job can neither remove nor replace
# its FIFO, and what it leaves running cannot write into a later job's
# reports through it: the path is gone once the job ended (and the
# read-only directory lets nothing make it again).
p1=$(run sa 'rm -f /tmp/late; ( sleep 1.5; { echo "{\"late\": 1}" > "$BOXCAR_PROGRESS"; } 2>/dev/null && echo wrote > /tmp/late || echo refused > /tmp/late ) & echo "{\"mine\": 1}" > "$BOXCAR_PROGRESS"; rm -f "$BOXCAR_PROGRESS" 2>/dev/null; mkfifo /run/boxcar/progress-99 2>/dev/null; test -p "$BOXCAR_PROGRESS" && echo kept; ls /run/boxcar | grep -c "^progress"')
p2=$(run sa 'sleep 2.5; cat /tmp/late')
is "a session's job cannot remove or add a progress FIFO" "$(out $p1 | tr -s '\n' ' ')" "kept 1 "
is "what it left running cannot report into the next job (its path is gone)" \
   "$(out $p2) $(sql "select count(*) from boxcar.job_events where job_id = '$p2' and kind = 'progress'") $(sql "select boxcar.job_json('$p1') -> 'progress'")" \
   'refused 0 {"mine": 1}'

# Killing the agent ends the session: the job fails, nothing else runs in
# its name, and the next job starts the session again from its last
# checkpoint.
k=$(run sa "kill -9 $apid; sleep 5; echo survived")
is "a job that kills the agent fails (the session's sandbox is gone)" "$(job_field $k status)" "failed"
n=$(run sa 'cat one.txt; echo $BOXCAR_SESSION_RESUMED')
is "the next job resumes from the last checkpoint" "$(job_field $n status) $(out $n | tr -s '\n' ' ')" "succeeded one 1 "

# Forged frames: a job of the session writing the agent's protocol at the
# worker gets nowhere (it has no connection to the worker); one that
# impersonates output only fools its own session.
f=$(run sa 'printf "\x10\x00\x00\x00x\x00\x00\x00\x09\x00\x00\x00" ; echo plain')
is "bytes shaped like frames on a job's stdout are just its output" "$(job_field $f status)" "succeeded"

# Scopes (issue 48): the same session id in another scope is another
# session, with a storage of its own; a's session storage cannot be named
# by b, as its artifact or as a volume, even with its checkpoint's sha256,
# nor by a row written around enqueue.
a1=$(run shared 'echo secret-a > s.txt' a/q)
b0=$(run shared 'cat s.txt 2>/dev/null || echo no-secret' b/q)
is "another scope's session of the same id sees none of its files" "$(job_field $b0 status) $(out $b0)" "succeeded no-secret"
astore=$(sql "select storage from boxcar.sessions where scope = 'a' and id = 'shared'")
asha=$(sql "select head_version from boxcar.storages where name = '$astore'")
err=$(jq -cn --arg st "$astore" '{session: {id: "shared"}, command: ["cat", "s.txt"], artifact: {storage: $st}}' |
      "$BOXCAR" enqueue --queue b/q --spec - 2>&1 >/dev/null || true)
check "b cannot name a's session storage as its session's: $err" grep -q "its own storage" <<<"$err"
err=$(jq -cn --arg st "$astore" --arg v "$asha" '{command: ["cat", "/mnt/a/s.txt"], volumes: [{name: "a", mount: "/mnt/a", storage: $st, version: $v}]}' |
      "$BOXCAR" enqueue --queue b/q --spec - 2>&1 >/dev/null || true)
check "nor mount it, knowing its checkpoint's sha256: $err" grep -q "not found in scope \"b\"" <<<"$err"
direct=$(sql "insert into boxcar.jobs (queue, spec) values ('b/q', '{\"command\": [\"cat\", \"/mnt/a/s.txt\"], \"volumes\": [{\"name\": \"a\", \"mount\": \"/mnt/a\", \"storage\": \"$astore\"}]}') returning id" 2>&1 || true)
check "nor can a row inserted directly: $direct" grep -q 'not found in scope' <<<"$direct"

# Two sessions: no view of each other's processes, files or network.
b1=$(run sb 'setsid sleep 600 & echo b-secret > /tmp/b; echo ok')
a2=$(run sa 'ps -e -o pid=,comm= | grep -c sleep || true; cat /tmp/b 2>/dev/null || echo no-b')
is "a session sees no process or /tmp file of another" "$(out $a2 | tr -s '\n' ' ')" "0 no-b "
tap_done
