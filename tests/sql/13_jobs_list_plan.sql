-- Each filter shape of boxcar.jobs_list is served by one ordered index
-- scan: with sorts and sequential scans priced out, the function still
-- answers, and the index counters show which index each shape walked
-- (jobs_list may count a planner probe of created_at's range as well).
-- (A file of its own: plpgsql caches plans per session.)
begin;
select plan(6);

-- The queue and the status asked for are rare (50 rows each of 2,000), as
-- a queue or a failure is among many jobs: walking the list order and
-- filtering would read the whole index.  (With one row in ten or four, the
-- cost of either index came close, and which one won turned on where the
-- rows landed in the heap after the earlier files' rolled-back rows: one
-- run in about twelve walked jobs_list for the queue.)
insert into boxcar.jobs (queue, spec, status, created_at)
select case when i % 40 = 3 then 'q3' else 'q' || (i % 3) end, '{"command":["x"]}',
       case when i % 40 = 0 then 'failed' else 'succeeded' end,
       timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => i)
  from generate_series(1, 2000) i;
analyze boxcar.jobs;
set local enable_seqscan = off;
set local enable_bitmapscan = off;
set local enable_sort = off;

create temp table scans (shape text, idx text, n bigint);
create function pg_temp.scans(shape text) returns void language sql as $$
    insert into scans select shape, c.relname, pg_stat_get_xact_numscans(c.oid)
      from pg_class c where c.relnamespace = 'boxcar'::regnamespace and c.relkind = 'i'
       and c.relname in ('jobs_list', 'jobs_list_queue', 'jobs_list_status_but_succeeded')
$$;
select pg_temp.scans('before');
select count(*) from boxcar.jobs_list(queue => 'q3', lim => 20,
                                      after => (select cursor from boxcar.jobs_list(queue => 'q3', lim => 5) offset 4));
select pg_temp.scans('queue');
select count(*) from boxcar.jobs_list(status => 'failed', lim => 20);
select pg_temp.scans('status');
select count(*) from boxcar.jobs_list(lim => 20, since => '2026-01-01 00:10:00+00');
select pg_temp.scans('none');
-- Succeeded jobs are most of the table: their list walks jobs_list.
select count(*) from boxcar.jobs_list(status => 'succeeded', lim => 20);
select pg_temp.scans('succeeded');

create function pg_temp.used(this text, prev text) returns text language sql as $$
    select string_agg(a.idx, ',' order by a.idx) from scans a join scans b on a.idx = b.idx
     where a.shape = this and b.shape = prev and a.n > b.n
$$;
select is(replace(pg_temp.used('queue', 'before'), 'jobs_list,', ''), 'jobs_list_queue',
          'a queue filter walks jobs_list_queue');
select is(replace(pg_temp.used('status', 'queue'), 'jobs_list,', ''), 'jobs_list_status_but_succeeded',
          'a status filter (failed) walks jobs_list_status_but_succeeded');
select is(pg_temp.used('none', 'status'), 'jobs_list', 'no filter walks jobs_list');
select is(pg_temp.used('succeeded', 'none'), 'jobs_list', 'a filter on succeeded walks jobs_list');
select is((select array_agg(job ->> 'id') from boxcar.jobs_list(status => 'succeeded', lim => 5)),
          (select array_agg(id::text) from (select id from boxcar.jobs where status = 'succeeded'
                                              order by created_at desc, id desc limit 5) x),
          'succeeded jobs in list order');
select is((select array_agg(job ->> 'id') from boxcar.jobs_list(status => 'failed', lim => 5)),
          (select array_agg(id::text) from (select id from boxcar.jobs where status = 'failed'
                                              order by created_at desc, id desc limit 5) x),
          'in list order, with no sort');

select * from finish();
rollback;
