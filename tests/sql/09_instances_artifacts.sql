begin;
select plan(29);

-- Liveness by instance: a restarted process under the same name renews
-- only its own jobs' leases, and rescues the ones its name left behind.
create temp table li as select boxcar.enqueue('li', '{"command":["x"]}') as id;
select boxcar.register_worker('fixed', 'h', 1, '{li}', 1, 'test', 30, 'inst-a');
select is((select worker_instance from boxcar.claim('fixed', array['li'], 1, '3 seconds', 'inst-a')),
          'inst-a', 'a claim records the worker instance');
select boxcar.register_worker('fixed', 'h', 2, '{li}', 1, 'test', 30, 'inst-b');
select is((select count(*)::int from boxcar.heartbeat('fixed', '30 seconds', 'inst-b')), 0,
          'a new instance under the same name does not renew the old instance''s lease');
select is((select count(*)::int from boxcar.heartbeat('fixed', '30 seconds', 'inst-a')), 1,
          'the instance that claimed the job renews it');
select is(boxcar.rescue_orphans('fixed', 'inst-a'), 0, 'an instance does not rescue its own jobs');
select is(boxcar.rescue_orphans('fixed', 'inst-b'), 1, 'a restarted worker rescues its name''s orphans');
select is((select status || ':' || (error->>'code') || ':' || coalesce(worker_instance, 'none')
             from boxcar.jobs where id = (select id from li)),
          'queued:WORKER_LOST:none', 'the orphan is queued again with WORKER_LOST');
select ok((select error->>'message' like 'worker fixed restarted%' from boxcar.jobs where id = (select id from li)),
          'the error says the worker restarted');
select is((select kind from boxcar.job_events where job_id = (select id from li) order by id desc limit 1),
          'rescued', 'the rescue is in the audit trail');
select is(boxcar.rescue_orphans('other-name', 'inst-b'), 0, 'other names'' jobs are not touched');
select ok((select started_at > now() - interval '1 minute' and instance = 'inst-b' from boxcar.workers where id = 'fixed'),
          'the workers row belongs to the new instance');

-- Rescue covers running rows without a lease.
create temp table nl as select boxcar.enqueue('nl', '{"command":["x"]}') as id;
update boxcar.jobs set status = 'running', attempts = 1, worker_id = 'ghost', lease_expires_at = null
 where id = (select id from nl);
select is(boxcar.rescue_expired(), 1, 'a running row without a lease is rescued');
select is((select status || ':' || (error->>'code') from boxcar.jobs where id = (select id from nl)),
          'queued:WORKER_LOST', 'it is queued again with WORKER_LOST');
select ok((select error->>'message' like 'running without a lease%' from boxcar.jobs where id = (select id from nl)),
          'the error says it had no lease');

-- A raw row whose attempts already reached max_attempts is failed, not run.
create temp table ex as select boxcar.enqueue('ex', '{"command":["x"]}', max_attempts => 2) as id;
update boxcar.jobs set attempts = 5 where id = (select id from ex);
select is((select count(*)::int from boxcar.claim('w', array['ex'], 5)), 0, 'an exhausted job is not handed out');
select is((select status || ':' || (error->>'code') || ':' || attempts from boxcar.jobs where id = (select id from ex)),
          'failed:ATTEMPTS_EXHAUSTED:5', 'it is failed with ATTEMPTS_EXHAUSTED, attempts unchanged');
select is((select e -> 'details' ->> 'status' from boxcar.job_events_json((select id from ex)) e
            where e ->> 'kind' = 'finished'),
          'failed', 'its failure is in the audit trail');

-- Jobs sharing an artifact storage run one at a time, in enqueue order.
create temp table a1 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s1"}}', priority => 0) as id;
create temp table a2 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s1"}}', priority => 10) as id;
create temp table b1 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s2"}}') as id;
create temp table c1 as select boxcar.enqueue('art', '{"command":["x"]}') as id;
select set_eq($$select id from boxcar.claim('w', array['art'], 10)$$,
              $$select id from a1 union all select id from b1 union all select id from c1$$,
              'one job per storage, the earliest enqueued first whatever its priority; other jobs as usual');
select is((select count(*)::int from boxcar.claim('w', array['art'], 10)), 0,
          'the next job on a storage waits while one runs');
select boxcar.complete((select id from a1), 'w', 'succeeded');
select is((select id from boxcar.claim('w', array['art'], 10)), (select id from a2),
          'it is claimed once the running one finished');
create temp table d1 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s3"}}', run_at => now() + interval '1 hour') as id;
create temp table d2 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s3"}}') as id;
select is((select count(*)::int from boxcar.claim('w', array['art'], 10)), 0,
          'a job waits behind an earlier one on its storage that is not due yet');
select boxcar.cancel((select id from d1));
select is((select id from boxcar.claim('w', array['art'], 10)), (select id from d2),
          'a cancelled job no longer holds its storage');

create temp table e1 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s4"}}') as id;
create temp table e2 as select boxcar.enqueue('art', '{"command":["x"],"artifact":{"storage":"s4"}}') as id;
select ok((select blocked from boxcar.jobs where id = (select id from e2)),
          'a job enqueued behind an active one on its storage is blocked');
delete from boxcar.jobs where id = (select id from e1);
select is((select count(*)::int from boxcar.claim('w', array['art'], 10)), 0,
          'it stays blocked when the job before it is deleted by hand');
select boxcar.rescue_expired();
select is((select id from boxcar.claim('w', array['art'], 10)), (select id from e2),
          'the housekeeping rescue unblocks a stalled storage');

-- The head moves by compare-and-swap: a version whose parent is no longer
-- the head is kept as a branch.
select ok(boxcar.add_artifact_version('cas', repeat('a', 64), 'k/a', 1, 1, null, null, null),
          'the first version of a new storage becomes its head');
select ok(boxcar.add_artifact_version('cas', repeat('b', 64), 'k/b', 1, 1, repeat('a', 64), null, repeat('a', 64)),
          'a version made from the head becomes the head');
select ok(not boxcar.add_artifact_version('cas', repeat('c', 64), 'k/c', 1, 1, repeat('a', 64), null, repeat('a', 64)),
          'a version made from a head that moved does not become the head');
select is((select head_version from boxcar.storages where name = 'cas'), repeat('b', 64),
          'the head stays where the other writer put it');
select is((select parent_sha256 from boxcar.storage_versions where storage = 'cas' and sha256 = repeat('c', 64)),
          repeat('a', 64), 'the losing version is kept as a branch with its parent');

select * from finish();
rollback;
