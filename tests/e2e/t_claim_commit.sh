# A claim's rows reach the worker before its commit is durable (the
# commit's WAL flush overlaps the job's preparation): nothing of a job
# starts, and nothing about it is written, until the claim committed.
#  1. A claim whose commit takes a second (a deferred trigger sleeps in
#     it): the job, on a warm sandbox, starts after the commit ended.
#  2. A claim whose commit fails: the job never runs (no trace of it on the
#     host, no event), stays queued with no attempt counted, and runs once
#     when claims commit again.
#  3. A claim that fails in its statement (before the commit): the
#     connection is not left in the failed transaction, and the job runs
#     once the claim works again.
#  4. A job the database says the worker holds, which none of its slots
#     runs and which is not of a claim in doubt (a result the database
#     would not record): the next heartbeat retries it as a lost attempt
#     (t_claim_unseen: one of a claim that committed unseen goes back
#     uncounted).
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_claim_commit
marks=$(mktemp -d)
trap 'rm -rf "$marks"; cleanup_bg' EXIT
chmod 0777 "$marks"

# A test-only trigger, deferred to the claim's COMMIT, on jobs whose env
# says what their claim's commit does.
sql "create table public.commit_done (job_id uuid, at timestamptz);
     create function public.at_commit() returns trigger language plpgsql as \$\$
     begin
       if new.spec->'env'->>'AT_COMMIT' = 'sleep' then
         perform pg_sleep(1);
         insert into public.commit_done values (new.id, clock_timestamp());
       elsif new.spec->'env'->>'AT_COMMIT' = 'fail' and not exists (select from public.let_commit) then
         -- Late, so that a job started without waiting would have run.
         perform pg_sleep(0.5);
         raise exception 'test: this claim does not commit';
       end if;
       return null;
     end \$\$;
     create table public.let_commit ();
     create table public.let_claim ();
     create function public.at_claim() returns trigger language plpgsql as \$\$
     begin
       if new.spec->'env'->>'AT_CLAIM' = 'fail' and not exists (select from public.let_claim) then
         raise exception 'test: this claim fails';
       end if;
       return new;
     end \$\$;
     create trigger at_claim before update on boxcar.jobs for each row
       when (new.status = 'running') execute function public.at_claim();
     create constraint trigger at_commit after update on boxcar.jobs
       deferrable initially deferred for each row when (new.status = 'running')
       execute function public.at_commit();" >/dev/null
# As `boxcar events` tells it (a job's 'finished' is its row's).
events() { sql "select coalesce(string_agg(e ->> 'kind', ',' order by n), '')
                  from boxcar.job_events_json('$1') with ordinality x(e, n)"; }

# 1. On the isolating backend, through a warm sandbox.
if [[ $E2E_SANDBOX == namespace && $(id -u) -eq 0 ]]; then
  port=$(free_port)
  start_worker cc-warm --concurrency 1 --poll-interval 300ms --sandbox namespace \
      --metrics-addr "127.0.0.1:$port"
  ready() { (( $(metric_at "$port" 'boxcar_warm_sandboxes{state="ready"}') >= 1 )); }
  check "the worker has a warm sandbox" wait_for "warm ready" 30 ready
  warm0=$(metric_at "$port" 'boxcar_sandbox_starts_total{path="warm"}')
  id=$(echo '{"command": ["sh", "-c", "date +%s%N"], "env": {"AT_COMMIT": "sleep"}}' | "$BOXCAR" enqueue --spec -)
  "$BOXCAR" status --wait --timeout 60s "$id" >/dev/null
  is "the job whose claim commits slowly succeeds" "$(job_field "$id" status)" "succeeded"
  is "it started on a warm sandbox" \
     "$(( $(metric_at "$port" 'boxcar_sandbox_starts_total{path="warm"}') - warm0 ))" "1"
  started=$(job_field "$id" "trim(result->>'stdout')")
  done_us=$(sql "select (extract(epoch from at) * 1e6)::bigint from public.commit_done where job_id = '$id'")
  diag "command started at ${started:0:16} (us), the commit ended at $done_us"
  check "its command started after the claim's commit ended" \
     test "$(( ${started:-0} / 1000 ))" -ge "${done_us:-9999999999999999}"
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
else
  skip "a warm sandbox's start after the commit: needs the namespace backend as root"
  skip "(warm start)"; skip "(after the commit)"; skip "(warm pool)"
fi

# 2. A claim that does not commit: the none backend shows whether the
#    command ran at all (it leaves a file on the host).
start_worker cc-none --concurrency 2 --poll-interval 300ms --sandbox none --lease 3s
id=$(echo "{\"command\": [\"sh\", \"-c\", \"echo run >> $marks/ran\"], \"env\": {\"AT_COMMIT\": \"fail\"}}" |
     "$BOXCAR" enqueue --spec -)
check "the worker saw its claim fail at the commit" wait_for "claim.not_committed" 20 \
    grep -q 'event=claim.not_committed' "$BOXCAR_DEV/test-logs/cc-none.log"
sleep 2   # several claims, each failing at its commit
check "the command never ran" test ! -e "$marks/ran"
is "the job is still queued, no attempt counted" "$(job_field "$id" "status || ' ' || attempts")" "queued 0"
is "no event says it was claimed or started" "$(events "$id")" ""
sql "insert into public.let_commit default values" >/dev/null
"$BOXCAR" status --wait --timeout 30s "$id" >/dev/null
is "once claims commit again, it succeeds in one attempt" "$(job_field "$id" "status || ' ' || attempts")" "succeeded 1"
is "its command ran once" "$(cat "$marks/ran" 2>/dev/null)" "run"
is "its trail is one claim and one run" "$(events "$id")" "claimed,started,exited,finished"

# 3. A claim statement that fails: the next claims work on the same
#    connection (the pipeline's transaction is ended, not left aborted).
id=$(echo "{\"command\": [\"sh\", \"-c\", \"echo run >> $marks/claim\"], \"env\": {\"AT_CLAIM\": \"fail\"}}" |
     "$BOXCAR" enqueue --spec -)
check "the worker saw its claim fail" wait_for "claim fails" 20 \
    grep -q 'call=claim error="test: this claim fails' "$BOXCAR_DEV/test-logs/cc-none.log"
sleep 1
is "the job is still queued, no attempt counted" "$(job_field "$id" "status || ' ' || attempts")" "queued 0"
sql "insert into public.let_claim default values" >/dev/null
"$BOXCAR" status --wait --timeout 30s "$id" >/dev/null
is "once the claim works, the job runs on the same connection, in one attempt" \
   "$(job_field "$id" "status || ' ' || attempts")" "succeeded 1"
is "its command ran once" "$(cat "$marks/claim" 2>/dev/null)" "run"
check "no statement found the transaction aborted" \
   bash -c "! grep -q 'current transaction is aborted' '$BOXCAR_DEV/test-logs/cc-none.log'"

# 4. Held by the worker in the database, run by none of its slots.
instance=$(sql "select instance from boxcar.workers where id = 'cc-none'")
# Enqueued and marked held in one transaction: the worker never sees it queued.
sql "create function public.held(cmd jsonb, worker text, inst text) returns uuid language plpgsql as \$\$
     declare jid uuid := boxcar.enqueue('default', jsonb_build_object('command', cmd));
     begin
       update boxcar.jobs set status = 'running', worker_id = worker, worker_instance = inst,
              attempts = 1, started_at = now(), lease_expires_at = now() + interval '1 hour'
        where boxcar.jobs.id = jid;
       return jid;
     end \$\$" >/dev/null
id=$(sql "select public.held('[\"sh\", \"-c\", \"echo held >> $marks/held\"]', 'cc-none', '$instance')")
"$BOXCAR" status --wait --timeout 30s "$id" >/dev/null
is "the next heartbeat retries it as a lost attempt, and it runs" \
   "$(job_field "$id" "status || ' ' || attempts")" "succeeded 2"
is "its command ran once" "$(cat "$marks/held" 2>/dev/null)" "held"
check "the worker said why" grep -q "event=job.released_unrun job_id=$id" "$BOXCAR_DEV/test-logs/cc-none.log"
is "its trail shows the lost attempt, then one run" "$(events "$id")" "retried,claimed,started,exited,finished"
is "the lost attempt says why" "$(sql "select details->'error'->>'code' from boxcar.job_events
                                      where job_id = '$id' and kind = 'retried'")" "WORKER_LOST"
tap_done
