-- boxcar.active_queue_stats: what a worker's queue gauges and an
-- autoscaler read, the figures of queue_stats for every queue with jobs
-- queued or running, from those jobs only (queue_stats scans the whole
-- table, a week of finished jobs by default, and every replica asks every
-- poll interval).
begin;
select plan(5);
set local client_min_messages = warning;

truncate boxcar.jobs cascade;
-- 3,000 finished jobs, on a queue of their own and on the active one.
insert into boxcar.jobs (queue, spec, status, finished_at)
select case when i % 2 = 0 then 'aqs-done' else 'aqs' end, '{"command":["x"]}',
       'succeeded', now() from generate_series(1, 3000) i;
create temp table made as
    select boxcar.enqueue('aqs', '{"command":["x"]}') from generate_series(1, 3)
    union all select boxcar.enqueue('aqs', '{"command":["x"]}', run_at => now() + interval '1 hour')
    union all select boxcar.enqueue('aqs-other', '{"command":["x"]}');
create temp table claimed as select * from boxcar.claim('aqs-w', array['aqs'], 1);
update boxcar.jobs set run_at = now() - interval '90 seconds'
 where queue = 'aqs' and status = 'queued' and run_at <= now();
analyze boxcar.jobs;

select results_eq(
    $$select queue, queued, scheduled, running, round(oldest_queued_age_s) from boxcar.active_queue_stats
       order by queue$$,
    $$select queue, queued, scheduled, running, round(oldest_queued_age_s) from boxcar.queue_stats
       where queue in ('aqs', 'aqs-other') order by queue$$,
    'the figures of queue_stats for each queue with jobs queued or running');
select is((select row(queued, scheduled, running)::text from boxcar.active_queue_stats where queue = 'aqs'),
          '(2,1,1)', 'due, scheduled and running jobs are counted apart');
select cmp_ok((select oldest_queued_age_s from boxcar.active_queue_stats where queue = 'aqs'),
              '>=', 90::float8, 'the oldest due job''s age');
select is((select count(*) from boxcar.active_queue_stats where queue = 'aqs-done'), 0::bigint,
          'a queue with only finished jobs has no row');

create temp table before as
    select seq_scan from pg_stat_xact_user_tables where relid = 'boxcar.jobs'::regclass;
create temp table stats as select * from boxcar.active_queue_stats;
select is((select x.seq_scan - b.seq_scan from pg_stat_xact_user_tables x, before b
            where x.relid = 'boxcar.jobs'::regclass), 0::bigint,
          'the finished jobs are not read (no sequential scan of the table)');

select * from finish();
rollback;
