# Dependencies with a real worker (issue 49): a chain, fan-out and fan-in
# from `boxcar enqueue --many`, a failure in the middle cancelling what
# waits on it (DEPENDENCY_FAILED, recursively), a manual retry of it
# bringing them back, a dependency that an automatic retry (its worker
# killed) brings back, and the completion NOTIFY on boxcar_job_updates:
# one per end, none for the automatic retry.
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_dependencies
logs=$BOXCAR_DEV/test-logs
mkdir -p "$logs"

# A LISTENer: psql prints each notification after the query that read it.
heard=$logs/dependencies.heard stop=$logs/dependencies.stop
rm -f "$heard" "$stop"
{ echo 'listen boxcar_job_updates;'
  for ((i = 0; i < 1500; i++)); do [[ -e $stop ]] && break; sleep 0.2; echo 'select 1;'; done
} | psql -XqAt "$DATABASE_URL" >"$heard" 2>&1 &
_bg_pids+=($!)
# The statuses heard for job $1, in order, space-separated.
heard_of() {
  sed -n 's/^Asynchronous notification "boxcar_job_updates" with payload "\(.*\)" received from server process with PID [0-9]*\.$/\1/p' "$heard" |
    jq -r --arg id "$1" 'select(.id == $id) | .status' | paste -sd' '
}
ended() { [[ $(job_field "$1" status) =~ ^(succeeded|failed|cancelled)$ ]]; }
# ran_after A B: B started once A had finished.
ran_after() { sql_true "select (select started_at from boxcar.jobs where id = '$2') >= (select finished_at from boxcar.jobs where id = '$1')"; }

start_worker deps --queues deps --concurrency 4 --lease 5s --poll-interval 500ms --sandbox "$E2E_SANDBOX"

# A chain: a -> b -> c.
a=$("$BOXCAR" enqueue --queue deps -- sh -c 'sleep 1; echo a')
b=$("$BOXCAR" enqueue --queue deps --depends-on "$a" -- echo b)
c=$("$BOXCAR" enqueue --queue deps --depends-on "$b" -- echo c)
is "status shows c's dependency" "$("$BOXCAR" status "$c" | jq -r '.depends_on | join(" ")')" "$b"
out=$(timeout 60 "$BOXCAR" status --wait --timeout 50s "$c")
is "the chain's last job succeeds (status --wait)" "$(jq -r '.status + " " + .result.stdout' <<<"$out")" "succeeded c"
check "b ran after a" ran_after "$a" "$b"
check "c ran after b" ran_after "$b" "$c"
is "b's events say its dependency was met" \
   "$("$BOXCAR" events "$b" | jq -r 'select(.kind == "dependencies_met") | .details.dependency')" "$a"

# Fan-out and fan-in in one call: root -> left, right -> join.
ids=$(printf '%s\n' \
  '{"queue": "deps", "spec": {"command": ["sh", "-c", "sleep 1; echo root"]}}' \
  '{"queue": "deps", "spec": {"command": ["sh", "-c", "sleep 1; echo left"]}, "depends_on": [0]}' \
  '' \
  '{"queue": "deps", "spec": {"command": ["sh", "-c", "sleep 1; echo right"]}, "depends_on": [0]}' \
  '{"queue": "deps", "spec": {"command": ["echo", "join"]}, "depends_on": [1, 2]}' |
  "$BOXCAR" enqueue --many -)
read -r root left right join <<<"$(echo $ids)"
is "enqueue --many prints the four ids, one a line" "$(wc -l <<<"$ids") ${#join}" "4 36"
check "the join finishes" wait_for "join" 60 ended "$join"
is "all four succeeded" "$(sql "select string_agg(btrim(result->>'stdout', E'\\n'), ' ' order by result->>'stdout') from boxcar.jobs where id in ('$root', '$left', '$right', '$join') and status = 'succeeded'")" \
   "join left right root"
check "left and right ran after root" ran_after "$root" "$left"
check "(right too)" ran_after "$root" "$right"
check "join ran after left" ran_after "$left" "$join"
check "join ran after right" ran_after "$right" "$join"
check "left and right ran at once (fan-out)" \
  sql_true "select (select started_at from boxcar.jobs where id = '$left') < (select finished_at from boxcar.jobs where id = '$right')"
"$BOXCAR" enqueue --many <(echo '[{"queue": "deps", "spec": {"command": ["x"]}}, {"queue": "deps", "spec": {"command": 3}}]') \
  >/dev/null 2>"$logs/dependencies.many.err"
is "a bad job refuses the file, named" "$? $(cat "$logs/dependencies.many.err")" \
   "1 boxcar enqueue: jobs[1]: BAD_SPEC: command: must be a non-empty array of strings (hint: the job spec is documented in docs/job-spec.md)"

# A failure in the middle: p -> q (fails) -> r -> s.  q succeeds from
# second $t on, after its first run.
t=$(( $(date +%s) + 8 ))
p=$("$BOXCAR" enqueue --queue deps -- echo p)
q=$("$BOXCAR" enqueue --queue deps --depends-on "$p" -- sh -c "[ \$(date +%s) -ge $t ] && echo q || exit 3")
r=$("$BOXCAR" enqueue --queue deps --depends-on "$q" -- echo r)
s=$("$BOXCAR" enqueue --queue deps --depends-on "$r" -- echo s)
check "s ends" wait_for "s" 60 ended "$s"
is "q failed" "$(job_field "$q" "status || ' ' || (error->>'code')")" "failed NONZERO_EXIT"
is "r was cancelled: DEPENDENCY_FAILED, naming q" \
   "$(job_field "$r" "status || ' ' || (error->>'code') || ' ' || (error->>'dependency')")" "cancelled DEPENDENCY_FAILED $q"
is "s too, naming r" \
   "$(job_field "$s" "status || ' ' || (error->>'code') || ' ' || (error->>'dependency')")" "cancelled DEPENDENCY_FAILED $r"
is "neither ran" "$(sql "select count(*) from boxcar.jobs where id in ('$r', '$s') and started_at is not null")" "0"
is "r's events explain it" "$("$BOXCAR" events "$r" | jq -r 'select(.kind == "dependency_failed") | .details.dependency')" "$q"
"$BOXCAR" jobs retry "$r" >/dev/null 2>"$logs/dependencies.retry.err"
is "r cannot be retried while q is failed" "$? $(cat "$logs/dependencies.retry.err")" \
   "1 boxcar jobs retry: job $r depends on job $q, which failed: retry that one first"

# A manual retry of q (now past $t) brings r and s back; they run.
while (( $(date +%s) <= t )); do sleep 0.2; done
"$BOXCAR" jobs retry "$q" >/dev/null
out=$(timeout 60 "$BOXCAR" status --wait --timeout 50s "$s")
is "after the retry of q, s runs and succeeds" "$(jq -r '.status + " " + .result.stdout' <<<"$out")" "succeeded s"
is "q, r and s succeeded" "$(sql "select string_agg(status, ' ' order by created_at) from boxcar.jobs where id in ('$q', '$r', '$s')")" \
   "succeeded succeeded succeeded"
check "r ran after q's second run" ran_after "$q" "$r"
is "r's events: cancelled, then back with the retry of q" \
   "$("$BOXCAR" events "$r" | jq -r 'select(.kind | startswith("dependenc")) | .kind' | paste -sd' ')" \
   "dependency_failed dependency_retried dependencies_met"

# A dependency an automatic retry brings back: its worker is killed while
# it runs; another rescues it once the lease passes, and it succeeds.
start_worker deps-a --queues deps-crash --concurrency 1 --lease 2s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
victim=$WORKER_PID
x=$("$BOXCAR" enqueue --queue deps-crash -- sh -c 'sleep 3; echo x')
y=$("$BOXCAR" enqueue --queue deps-crash --depends-on "$x" -- echo y)
check "x starts on worker deps-a" wait_for "x starts" 20 sql_true "select status = 'running' from boxcar.jobs where id = '$x'"
kill -9 "$victim"; { wait "$victim"; } 2>/dev/null
start_worker deps-b --queues deps-crash --concurrency 1 --lease 2s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
out=$(timeout 60 "$BOXCAR" status --wait --timeout 50s "$y")
is "y runs after x's second attempt" "$(jq -r '.status + " " + .result.stdout' <<<"$out")" "succeeded y"
is "x was rescued and succeeded on worker deps-b" "$(job_field "$x" "status || ' ' || worker_id || ' ' || attempts")" "succeeded deps-b 2"
check "y ran after x" ran_after "$x" "$y"

# The completion NOTIFY: each end once; the automatic retry of x none.
sleep 0.5
touch "$stop"
for j in a b c root left right join p; do
  is "heard $j's end" "$(heard_of "${!j}")" "succeeded"
done
is "heard q fail, then succeed after its retry" "$(heard_of "$q")" "failed succeeded"
is "heard r and s cancelled, then succeed" "$(heard_of "$r") / $(heard_of "$s")" "cancelled succeeded / cancelled succeeded"
is "heard x's end once, not its rescue" "$(heard_of "$x")" "succeeded"
is "heard y's" "$(heard_of "$y")" "succeeded"
line=$(grep -m1 -o "payload \"{\"id\":\"$a\"[^ ]*\" received" "$heard")
is "the payload is compact: id, queue, status" "$line" "payload \"{\"id\":\"$a\",\"queue\":\"deps\",\"status\":\"succeeded\"}\" received"
tap_done
