begin;
select plan(18);

-- Claim order: priority first, then run_at, never a job that is not due.
select boxcar.enqueue('q', '{"command":["low"]}', priority => 0, run_at => now() - interval '3 minutes');
select boxcar.enqueue('q', '{"command":["high-late"]}', priority => 10, run_at => now() - interval '1 minute');
select boxcar.enqueue('q', '{"command":["high-early"]}', priority => 10, run_at => now() - interval '2 minutes');
select boxcar.enqueue('q', '{"command":["future"]}', priority => 100, run_at => now() + interval '1 hour');
select boxcar.enqueue('other', '{"command":["other-queue"]}', priority => 100);

select results_eq(
    $$select spec->'command'->>0 from boxcar.claim('w1', array['q'], 10, '30 seconds')$$,
    $$values ('high-early'), ('high-late'), ('low')$$,
    'claim orders by priority, then run_at, skips jobs not due and other queues');
select is((select count(*)::int from boxcar.jobs where status = 'running' and worker_id = 'w1'), 3,
          'claimed jobs are running and owned by the claimer');
select is((select count(*)::int from boxcar.jobs where status = 'running' and attempts = 1), 3,
          'claim counts the attempt');
select is((select count(*)::int from boxcar.job_events where kind = 'claimed'), 3,
          'one claimed event per job');
select is((select count(*)::int from boxcar.claim('w2', array['q'], 10)), 0,
          'a second claim finds nothing left');
select is((select count(*)::int from boxcar.claim('w2', array['q', 'other'], 1)), 1,
          'claim takes at most n jobs across several queues');

-- Fencing: only the holder completes or heartbeats.
create temp table j as select id from boxcar.jobs where spec->'command'->>0 = 'high-early';
select is(boxcar.complete((select id from j), 'w2', 'succeeded', '{}', null), false,
          'another worker cannot complete a job it does not hold');
select is((select count(*)::int from boxcar.heartbeat('w2') h where h = (select id from j)), 0,
          'another worker''s heartbeat does not extend the lease');
update boxcar.jobs set lease_expires_at = now() + interval '1 second' where id = (select id from j);
select is((select count(*)::int from boxcar.heartbeat('w1', '60 seconds')), 3,
          'heartbeat returns every job the worker holds');
select ok((select lease_expires_at >= now() + interval '59 seconds' from boxcar.jobs where id = (select id from j)),
          'heartbeat extends the lease');
select is(boxcar.complete((select id from j), 'w1', 'succeeded', '{"exit_code":0}', null, attempt => 2), false,
          'a stale attempt cannot complete the job');
select is(boxcar.complete((select id from j), 'w1', 'succeeded', '{"exit_code":0}', null, attempt => 1), true,
          'the holder completes the job');
select is((select status from boxcar.jobs where id = (select id from j)), 'succeeded', 'the job succeeded');
select is(boxcar.complete((select id from j), 'w1', 'failed', null, null), false,
          'a finished job cannot be completed twice');
select throws_ok($$select boxcar.complete(gen_random_uuid(), 'w1', 'running', null, null)$$, '22023', null,
                 'complete only accepts final statuses');

-- Release hands a job back without counting the attempt.
create temp table low as select id from boxcar.jobs where spec->'command'->>0 = 'low';
select is(boxcar.release((select id from low), 'w1'), true, 'release hands the job back');
select is((select status || ':' || attempts from boxcar.jobs where id = (select id from low)), 'queued:0',
          'a released job is queued again and the attempt not counted');
select ok((select run_at <= now() from boxcar.jobs where id = (select id from low)), 'a released job is due at once');

select * from finish();
rollback;
