-- A worker's session keeps claim_ids' plan (generic, see sql/30_claim.sql)
-- for as long as it runs.  Made while the jobs table was empty (a worker
-- started against an empty queue), it read the whole table at every claim
-- once the table had filled (four times slower with 6,000 jobs) until an
-- ANALYZE came, and a benchmark never waits for one.  The claim stays on
-- the primary key whatever the table held when its plans were made.
-- (A file of its own: plpgsql caches plans per session.)
begin;
select plan(6);

-- Both claim paths: plain, and with limits (queue_config).
truncate boxcar.jobs cascade;
insert into boxcar.queue_config (queue, max_running) values ('plan-limited', 5);
select is((select count(*) from boxcar.claim('plan-w', array['plan'], 1)), 0::bigint,
          'nothing to claim while the table is empty (its plans are made now)');
select is((select count(*) from boxcar.claim('plan-w', array['plan-limited'], 1)), 0::bigint,
          'nor on a limited queue');

insert into boxcar.jobs (queue, spec, status, finished_at)
select 'plan', '{"command":["x"]}', 'succeeded', now() from generate_series(1, 3000);
create temp table queued as
    select boxcar.enqueue(queue => q, spec => '{"command":["x"]}') from unnest(array['plan', 'plan-limited']) q;
create function pg_temp.seq_scans() returns bigint language sql as $$
    select seq_scan from pg_stat_xact_user_tables where relid = 'boxcar.jobs'::regclass
$$;
create temp table before (n bigint);

insert into before select pg_temp.seq_scans();
select is((select count(*) from boxcar.claim('plan-w', array['plan'], 1)), 1::bigint,
          'the job queued after 3,000 others is claimed');
select is(pg_temp.seq_scans() - (select max(n) from before), 0::bigint,
          'without a sequential scan of the jobs table');

insert into before select pg_temp.seq_scans();
select is((select count(*) from boxcar.claim('plan-w', array['plan-limited'], 1)), 1::bigint,
          'so is the one on the limited queue');
select is(pg_temp.seq_scans() - (select max(n) from before), 0::bigint,
          'also without a sequential scan');

select * from finish();
rollback;
