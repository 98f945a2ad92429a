-- A worker's session keeps the plans of its claim, its reports, its
-- heartbeat, the webhook outbox's claim and the leader's housekeeping
-- (sql/30_claim.sql, sql/60_webhooks.sql, ...), and of the foreign-key
-- checks of their inserts; an app's pooled session those of cancel(),
-- retry(), jobs_list() and job_logs_after().  Made while ANALYZE had last
-- seen the tables (nearly) empty, as autovacuum leaves a new deployment's,
-- they read jobs, job_events and the outbox whole at every claim, event
-- and batch (merge and hash joins over whole tables, sequential scans): a
-- worker draining 4,000 jobs ran at a quarter of its rate, 5-9 ms of the
-- database's CPU a job, until the next ANALYZE, while the tables grew under
-- it; a heartbeat, a page of jobs_list or a rescue read jobs whole, and a
-- prune of 10 jobs read 9 million rows of the outbox.  17_claim_plan.sql
-- covers tables never analyzed; this file, analyzed while empty.  (A file
-- of its own: plpgsql caches plans per session.)
begin;
select plan(29);
set local client_min_messages = warning;
-- A function in auto mode plans its statements with the values for five
-- calls, then keeps a generic plan made at the sixth: when that comes
-- while the tables are still small, it is the plan made here.  Generic
-- plans from the first call make that moment this test's, whatever the
-- row counts (functions with a plan_cache_mode of their own keep theirs).
set local plan_cache_mode = force_generic_plan;

-- The rows of TAB read so far in this transaction: by sequential scans,
-- and fetched through indexes (a full scan of an index counts too).
create function pg_temp.rows_read(tab regclass) returns bigint language sql as $$
    select coalesce((select seq_tup_read + idx_tup_fetch from pg_stat_xact_user_tables
                      where relid = tab), 0)
$$;
create temp table before (what text, tab regclass, n bigint);
create procedure pg_temp.mark(what text) language sql as $$
    insert into before select what, t, pg_temp.rows_read(t)
      from unnest(array['boxcar.jobs', 'boxcar.job_events', 'boxcar.job_logs',
                        'boxcar.webhook_deliveries']::regclass[]) t
$$;
-- Each table whose rows read since mark(what) were LIMIT or more, with
-- their count; '' when none.
create function pg_temp.read_since(what text, lim integer) returns text language sql as $$
    select coalesce(string_agg(b.tab::text || ' ' || (pg_temp.rows_read(b.tab) - b.n), ', '
                               order by b.tab::text), '')
      from before b where b.what = read_since.what and pg_temp.rows_read(b.tab) - b.n >= lim
$$;

-- Claims one job of QUEUE for worker W and reports it with ACTION (one
-- kept-back event and one output chunk): the rows report_batch answers.
create function pg_temp.run_one(queue text, w text, action text) returns setof text
language plpgsql as $$
declare
    j boxcar.jobs;
begin
    select * into j from boxcar.claim(w, array[queue], 1);
    return query
    select ord || ':' || held from boxcar.report_batch(w, array[j.id], array[j.attempts],
        array[action], array[case when action = 'complete' then 'succeeded' end],
        array['{"exit_code":0}']::jsonb[],
        array[case when action = 'retry' then '{"code":"SANDBOX_SETUP"}' end]::jsonb[],
        array['[{"kind":"started","at":"2026-01-01T00:00:00Z","details":null}]']::jsonb[],
        null, array['{"seq":1,"chunks":[[1,"6869"]]}']::jsonb[]);
end $$;

-- A follower's loop, as a client's prepared statement or a plpgsql caller
-- runs it: the output chunks of a job from the start, counted.
create function pg_temp.follow(job uuid) returns integer language plpgsql as $$
begin
    return (select count(*) from boxcar.job_logs_after(job, 0, 0));
end $$;

-- A job of queue rplan that succeeded.
create function pg_temp.done_job() returns uuid language sql as $$
    select id from boxcar.jobs where queue = 'rplan' and status = 'succeeded' order by id limit 1
$$;

create function pg_temp.cancel_one(job uuid) returns text language plpgsql as $$
begin
    return boxcar.cancel(job);
end $$;

-- The rows of each table STMT read, as read_since() says.
create function pg_temp.read_by(stmt text) returns text language plpgsql as $$
declare
    m text := stmt || ' ' || clock_timestamp();
begin
    call pg_temp.mark(m);
    execute stmt;
    return pg_temp.read_since(m, 100);
end $$;
-- The housekeeping a worker's leader runs every few seconds, and what an
-- app calls: each planned once early, then checked among 3,000 jobs.
create temp table periodic (stmt text);
insert into periodic values
    ('select boxcar.rescue_expired()'),
    ('select boxcar.rescue_orphans(''rplan-nobody'', ''i'')'),
    ('select boxcar.unblock_artifact_stalled()'),
    ('select boxcar.prune(''1 day'', 10)'),
    ('select count(*) from boxcar.jobs_list(queue => ''rplan'', lim => 5)'),
    ('select count(*) from boxcar.jobs_list(status => ''failed'', lim => 5)'),
    ('select boxcar.retry((select id from to_retry limit 1), ''20_report_plan'')');
create temp table to_retry (id uuid);
-- A job enqueued and cancelled, for retry() to queue again.
create procedure pg_temp.cancelled_job() language sql as $$
    insert into to_retry select boxcar.enqueue(queue => 'rplan-r', spec => '{"command":["x"]}');
    select boxcar.cancel(id) from to_retry;
$$;

-- Statistics of empty tables, then every plan of the path made with a few
-- jobs in the table (a worker's first jobs): a claim, a set-based report
-- (complete) and a row-by-row one (retry), each with an event and an
-- output chunk.
truncate boxcar.jobs cascade;
analyze;
create temp table queued1 as
    select boxcar.enqueue(queue => 'rplan', spec => '{"command":["x"]}') from generate_series(1, 2);
select is(pg_temp.run_one('rplan', 'rplan-w', 'complete'), '1:true',
          'a job is claimed and reported while the statistics say the tables are empty');
select is(pg_temp.run_one('rplan', 'rplan-w', 'retry'), '1:true', 'and one is retried');
-- A heartbeat, with a job running.
create temp table queued0 as
    select boxcar.enqueue(queue => 'rplan-hb', spec => '{"command":["x"]}');
create temp table hb_job as select id from boxcar.claim('rplan-hb-w', array['rplan-hb'], 1);
select is((select count(*)::int from boxcar.heartbeat('rplan-hb-w')), 1,
          'a heartbeat renews the running job''s lease');
-- What an app calls on its own (pooled) sessions: a cancel, and a
-- follower's read of a job's output.
select is(pg_temp.cancel_one(pg_temp.done_job()),
          'succeeded', 'cancelling a finished job answers its status');
select is(pg_temp.follow(pg_temp.done_job()), 1,
          'job_logs_after reads a finished job''s output');
call pg_temp.cancelled_job();
create temp table made as select pg_temp.read_by(stmt) from periodic;
select is((select status from boxcar.jobs where id = (select id from to_retry)), 'queued',
          'the housekeeping and the app''s calls run, their plans made now (retry() queued the '
          || 'cancelled job again)');
delete from to_retry;
-- The webhook outbox's claim too, with a few deliveries due.
insert into boxcar.webhook_deliveries (id, job_id, event_type, url, body, status, run)
select 'msg_rplan_' || i, (select j.id from boxcar.jobs j where j.status = 'succeeded'),
       'job.finished', 'http://127.0.0.1:9/', '{}', 'pending', i
  from generate_series(1, 3) i;
select is((select count(*)::int from boxcar.claim_deliveries('rplan-w', 10)), 3,
          'the due webhook deliveries are claimed');

-- 3,000 jobs finished two days ago (prune takes ten of them), each with
-- four events and an output chunk.
insert into boxcar.jobs (queue, spec, status, attempts, finished_at)
select 'rplan-old', '{"command":["x"]}', 'succeeded', 1, now() - interval '2 days'
  from generate_series(1, 3000);
insert into boxcar.job_events (job_id, kind, attempt)
select j.id, k, 1 from boxcar.jobs j, unnest(array['claimed', 'started', 'exited', 'finished']) k
 where j.queue = 'rplan-old';
insert into boxcar.job_logs (job_id, attempt, seq, stream, data)
select j.id, 1, 1, 1, 'hi' from boxcar.jobs j where j.queue = 'rplan-old';
-- And 3,000 delivered webhook events, one more due.
insert into boxcar.webhook_deliveries (id, job_id, event_type, url, body, status, run)
select 'msg_rplan_old_' || j.id, j.id, 'job.finished', 'http://127.0.0.1:9/', '{}', 'delivered', 0
  from boxcar.jobs j where j.queue = 'rplan-old';
insert into boxcar.webhook_deliveries (id, job_id, event_type, url, body, status, run)
values ('msg_rplan_due', (select j.id from boxcar.jobs j where j.status = 'succeeded'
                            and j.queue = 'rplan'), 'job.finished', 'http://127.0.0.1:9/', '{}',
        'pending', 100);
create temp table queued2 as
    select boxcar.enqueue(queue => 'rplan', spec => '{"command":["x"]}') from generate_series(1, 2);

call pg_temp.mark('complete');
create temp table quota_scans as
    select seq_scan from pg_stat_xact_user_tables where relid = 'boxcar.scope_quotas'::regclass;
select is(pg_temp.run_one('rplan', 'rplan-w', 'complete'), '1:true',
          'a job claimed and completed among 3,000 others with their events and output');
select is(pg_temp.read_since('complete', 100), '',
          'claiming and reporting it read fewer than 100 rows of each table (set-based report)');
-- A scan of the whole table is priced out in these functions, and a plan
-- so priced is over JIT's threshold: compiled again at every call (50 ms).
select is((select seq_scan from pg_stat_xact_user_tables
            where relid = 'boxcar.scope_quotas'::regclass) - (select seq_scan from quota_scans),
          0::bigint, 'the report looks for CPU quotas by their scopes'' index, never a whole scan');

call pg_temp.mark('retry');
select is(pg_temp.run_one('rplan', 'rplan-w', 'retry'), '1:true', 'one retried among them');
select is(pg_temp.read_since('retry', 100), '',
          'and so did claiming and reporting that one (row-by-row report)');

call pg_temp.mark('outbox');
select is((select string_agg(id, ',') from boxcar.claim_deliveries('rplan-w', 10)), 'msg_rplan_due',
          'the delivery due among 3,000 delivered ones is claimed');
select is(pg_temp.read_since('outbox', 100), '', 'reading fewer than 100 rows of each table');

call pg_temp.mark('heartbeat');
select is((select string_agg(h::text, ',') from boxcar.heartbeat('rplan-hb-w') h),
          (select id::text from hb_job),
          'a heartbeat among 3,000 finished jobs renews its job''s lease');
select is(pg_temp.read_since('heartbeat', 100), '', 'reading fewer than 100 rows of each table');

call pg_temp.mark('cancel');
select is(pg_temp.cancel_one(pg_temp.done_job()),
          'succeeded', 'cancelling a finished job among 3,000 others answers its status');
select is(pg_temp.read_since('cancel', 100), '', 'reading fewer than 100 rows of each table');
call pg_temp.mark('logs');
select is(pg_temp.follow(pg_temp.done_job()),
          1, 'job_logs_after reads one job''s output among 3,000 others');
select is(pg_temp.read_since('logs', 100), '', 'reading fewer than 100 rows of each table');

call pg_temp.cancelled_job();
select is(pg_temp.read_by(stmt), '', stmt || ': fewer than 100 rows of each table')
  from periodic order by stmt;

-- The events and output were all written, once.
select is((select count(*)::int from boxcar.jobs j cross join lateral boxcar.job_events_json(j.id) e
            where j.queue = 'rplan' and e ->> 'kind' = 'started'), 4,
          'each report wrote its kept-back event (in job_events, or the job row''s when completed)');
select is((select count(*)::int from boxcar.job_logs l join boxcar.jobs j on j.id = l.job_id
            where j.queue = 'rplan'), 4, 'and its output chunk');

select * from finish();
rollback;
