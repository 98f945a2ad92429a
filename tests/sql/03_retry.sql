begin;
select plan(16);

-- Backoff grows exponentially, with bounded jitter, capped at an hour.
select ok((select bool_and(boxcar.backoff(1) between interval '1.5 s' and interval '2.5 s') from generate_series(1, 50)),
          'first backoff is 2 s +-25%');
select ok((select bool_and(boxcar.backoff(3) between interval '6 s' and interval '10 s') from generate_series(1, 50)),
          'third backoff is 8 s +-25%');
select ok((select bool_and(boxcar.backoff(6) between interval '48 s' and interval '80 s') from generate_series(1, 50)),
          'sixth backoff is 64 s +-25%');
select ok((select bool_and(boxcar.backoff(40) <= interval '75 minutes') from generate_series(1, 50)),
          'backoff is capped');
select ok((select count(distinct boxcar.backoff(4)) > 40 from generate_series(1, 50)), 'backoff is jittered');

-- retry_or_fail: back to the queue with a delay until max_attempts.
create temp table j as select boxcar.enqueue('r', '{"command":["x"]}', max_attempts => 2) as id;
select count(*) from boxcar.claim('w1', array['r'], 1);
select is(boxcar.retry_or_fail((select id from j), 'w2', '{"code":"FETCH_FAILED","message":"x"}'), null,
          'retry_or_fail is fenced by worker');
select is(boxcar.retry_or_fail((select id from j), 'w1', '{"code":"FETCH_FAILED","message":"s3 down"}'), 'queued',
          'an infrastructure failure is retried');
select ok((select run_at > now() + interval '1 s' and worker_id is null from boxcar.jobs where id = (select id from j)),
          'the retry waits for its backoff and the job is unowned');
select is((select count(*)::int from boxcar.claim('w1', array['r'], 1)), 0, 'a backing-off job is not claimed');
update boxcar.jobs set run_at = now() where id = (select id from j);
select is((select attempts from boxcar.claim('w1', array['r'], 1)), 2, 'the second claim is attempt 2');
select is(boxcar.retry_or_fail((select id from j), 'w1', '{"code":"FETCH_FAILED","message":"s3 down"}'), 'failed',
          'after max_attempts the job fails');
select is((select error->>'code' from boxcar.jobs where id = (select id from j)), 'FETCH_FAILED',
          'the last error is kept');

-- rescue_expired: a dead worker's jobs are retried, then failed with WORKER_LOST.
create temp table d as select boxcar.enqueue('d', '{"command":["x"]}', max_attempts => 2) as id;
select count(*) from boxcar.claim('dead', array['d'], 1);
select is(boxcar.rescue_expired(), 0, 'a live lease is not rescued');
update boxcar.jobs set lease_expires_at = now() - interval '1 s' where id = (select id from d);
select is(boxcar.rescue_expired(), 1, 'an expired lease is rescued');
select is((select status || ':' || (error->>'code') from boxcar.jobs where id = (select id from d)),
          'queued:WORKER_LOST', 'the rescued job is queued again with WORKER_LOST');
update boxcar.jobs set run_at = now() where id = (select id from d);
select count(*) from boxcar.claim('dead2', array['d'], 1);
update boxcar.jobs set lease_expires_at = now() - interval '1 s' where id = (select id from d);
select boxcar.rescue_expired();
select is((select status || ':' || (error->>'code') || ':' || attempts from boxcar.jobs where id = (select id from d)),
          'failed:WORKER_LOST:2', 'after max_attempts a lost job fails with WORKER_LOST');

select * from finish();
rollback;
