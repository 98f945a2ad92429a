-- A worker's session keeps claim_ids' plan (generic, see sql/30_claim.sql)
-- for as long as it runs.  Made while the jobs table was empty (a worker
-- started against an empty queue), it read the whole table at every claim
-- once the table had filled (four times slower with 6,000 jobs) until an
-- ANALYZE came, and a benchmark never waits for one.  The claim stays on
-- the primary key whatever the table held when its plans were made; so
-- does the webhook outbox's claim (claim_deliveries, generic plans too).
-- (A file of its own: plpgsql caches plans per session.)
begin;
select plan(9);
set local client_min_messages = warning;

-- Sequential scans of TABLE in this transaction so far.
create function pg_temp.seq_scans(tab regclass) returns bigint language sql as $$
    select seq_scan from pg_stat_xact_user_tables where relid = tab
$$;
create temp table before (what text primary key, n bigint);

-- The plans are made on empty tables, for both claim paths (plain, and
-- with limits: queue_config) and the outbox.
truncate boxcar.jobs cascade;
insert into boxcar.queue_config (queue, max_running) values ('plan-limited', 5);
select is((select count(*) from boxcar.claim('plan-w', array['plan'], 1)), 0::bigint,
          'nothing to claim while the table is empty (its plans are made now)');
select is((select count(*) from boxcar.claim('plan-w', array['plan-limited'], 1)), 0::bigint,
          'nor on a limited queue');
select is((select count(*) from boxcar.claim_deliveries('plan-w', 10)), 0::bigint,
          'no webhook delivery is due either');

insert into boxcar.jobs (queue, spec, status, finished_at)
select 'plan', '{"command":["x"]}', 'succeeded', now() from generate_series(1, 3000);
create temp table queued as
    select boxcar.enqueue(queue => q, spec => '{"command":["x"]}')
      from unnest(array['plan', 'plan-limited']) q;

insert into before values ('plain', pg_temp.seq_scans('boxcar.jobs'));
select is((select count(*) from boxcar.claim('plan-w', array['plan'], 1)), 1::bigint,
          'the job queued after 3,000 others is claimed');
select is(pg_temp.seq_scans('boxcar.jobs') - (select n from before where what = 'plain'), 0::bigint,
          'without a sequential scan of the jobs table');

insert into before values ('limited', pg_temp.seq_scans('boxcar.jobs'));
select is((select count(*) from boxcar.claim('plan-w', array['plan-limited'], 1)), 1::bigint,
          'so is the one on the limited queue');
select is(pg_temp.seq_scans('boxcar.jobs') - (select n from before where what = 'limited'), 0::bigint,
          'also without a sequential scan');

-- 3,000 delivered webhook events and one due.
insert into boxcar.webhook_deliveries (id, job_id, event_type, url, body, status, run)
select 'msg_plan_' || i, (select j.id from boxcar.jobs j where j.queue = 'plan' limit 1), 'job.finished',
       'http://127.0.0.1:9/', '{}', case when i = 0 then 'pending' else 'delivered' end, i
  from generate_series(0, 3000) i;
insert into before values ('outbox', pg_temp.seq_scans('boxcar.webhook_deliveries'));
select is((select count(*) from boxcar.claim_deliveries('plan-w', 10)), 1::bigint,
          'the due delivery among 3,000 delivered ones is claimed');
select is(pg_temp.seq_scans('boxcar.webhook_deliveries') - (select n from before where what = 'outbox'),
          0::bigint, 'without a sequential scan of the outbox');

select * from finish();
rollback;
