begin;
select plan(18);

create temp table q as select boxcar.enqueue('c', '{"command":["x"]}') as id;
select is(boxcar.cancel((select id from q)), 'cancelled', 'a queued job is cancelled at once');
select is((select status || ':' || (error->>'code') from boxcar.jobs where id = (select id from q)),
          'cancelled:CANCELLED', 'with error CANCELLED');
select ok((select finished_at is not null from boxcar.jobs where id = (select id from q)), 'and a finish time');

create temp table r as select boxcar.enqueue('c', '{"command":["y"]}') as id;
select count(*) from boxcar.claim('w1', array['c'], 1);
select is(boxcar.cancel((select id from r)), 'running', 'a running job gets a cancel request');
select ok((select cancel_requested_at is not null and status = 'running' from boxcar.jobs where id = (select id from r)),
          'cancel_requested_at is set and the job still runs until its worker stops it');
select is((select boxcar.cancel_requested(array[(select id from r)])), (select id from r),
          'cancel_requested lists it for a worker catching up');
select is(boxcar.complete((select id from r), 'w1', 'cancelled', null, '{"code":"CANCELLED"}'), true,
          'the worker completes it as cancelled');
select is(boxcar.cancel((select id from r)), 'cancelled', 'cancelling a finished job changes nothing');
select throws_ok(format('select boxcar.cancel(%L)', gen_random_uuid()), 'P0002', null,
                 'cancelling an unknown job is an error');

-- prune deletes old finished jobs with their events, nothing else.
create temp table old as select boxcar.enqueue('p', '{"command":["x"]}') as id;
select boxcar.cancel((select id from old));
update boxcar.jobs set finished_at = now() - interval '2 days' where id = (select id from old);
create temp table live as select boxcar.enqueue('p', '{"command":["x"]}') as id;
select is(boxcar.prune('1 day'), 1, 'prune deletes the finished job older than the cutoff');
select is((select count(*)::int from boxcar.jobs where id = (select id from old)), 0, 'the old job is gone');
select is((select count(*)::int from boxcar.job_events where job_id = (select id from old)), 0, 'with its events');
select is((select count(*)::int from boxcar.jobs where id in (select id from live union select id from q)), 2,
          'queued and recently finished jobs stay');

-- In batches, oldest first: three old jobs, two at a time.
create temp table olds as
    select boxcar.enqueue('p', '{"command":["x"]}') as id, i from generate_series(1, 3) i;
create temp table cancelled as select boxcar.cancel(id) from olds;
update boxcar.jobs j set finished_at = now() - make_interval(days => 10 - o.i)
  from olds o where j.id = o.id;
select is(boxcar.prune('1 day', max_rows => 2), 2, 'prune with max_rows deletes at most that many');
select is((select array_agg(o.i order by o.i) from olds o join boxcar.jobs j on j.id = o.id), array[3],
          'the oldest first');
select is(boxcar.prune('1 day', max_rows => 2), 1, 'the next batch takes the rest');
select is(boxcar.prune('1 day', max_rows => 2), 0, 'then nothing is left');
select throws_ok($$select boxcar.prune('1 day', max_rows => 0)$$, '22023',
                 'max_rows: must be at least 1 (or null: all)', 'a batch of no rows is a parameter error');

select * from finish();
rollback;
