begin;
select plan(13);

-- Housekeeping leadership: one holder, renewable, taken over after expiry.
select is(boxcar.try_lead('w1', '30 seconds'), true, 'the first worker becomes leader');
select is(boxcar.try_lead('w2', '30 seconds'), false, 'a second worker does not while the lease holds');
select is(boxcar.try_lead('w1', '30 seconds'), true, 'the leader renews');
update boxcar.leaders set expires_at = now() - interval '1 second';
select is(boxcar.try_lead('w2', '30 seconds'), true, 'an expired lease is taken over');
select is((select worker_id from boxcar.leaders), 'w2', 'one leader row, the new holder');
select boxcar.resign('w2');
select is((select count(*)::int from boxcar.leaders), 0, 'resign frees the role');

-- Remote drain.
select boxcar.register_worker('wd', 'host', 1, '{default}', 2, 'test');
select is(boxcar.drain_requested('wd'), false, 'no drain requested at first');
select is(boxcar.request_drain('wd'), true, 'request_drain finds the worker');
select is(boxcar.drain_requested('wd'), true, 'and the worker sees the request');
select is(boxcar.request_drain('nobody'), false, 'an unknown worker is reported');

-- Live logs, in order per attempt.
create temp table j as select boxcar.enqueue('l', '{"command":["x"]}') as id;
select boxcar.append_logs((select id from j), 1, 1, '{1,2}', array['\x6f6e650a'::bytea, '\x6572720a'::bytea]);
select boxcar.append_logs((select id from j), 1, 3, '{1}', array['\x74776f0a'::bytea]);
select results_eq(format('select seq, stream, data from boxcar.job_logs_after(%L, 0, 0)', (select id from j)),
                  $$values (1, 1::smallint, '\x6f6e650a'::bytea), (2, 2::smallint, '\x6572720a'::bytea),
                           (3, 1::smallint, '\x74776f0a'::bytea)$$,
                  'chunks come back in order with their streams');
select is((select count(*)::int from boxcar.job_logs_after((select id from j), 1, 2)), 1,
          'the cursor skips what was read');
select boxcar.cancel((select id from j));
update boxcar.jobs set finished_at = now() - interval '2 days' where id = (select id from j);
select boxcar.prune('1 day');
select is((select count(*)::int from boxcar.job_logs), 0, 'pruning a job deletes its logs');

select * from finish();
rollback;
