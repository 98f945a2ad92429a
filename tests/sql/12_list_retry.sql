begin;
select plan(32);

-- retry: failed and cancelled jobs run again, with a fresh budget and an event.
create temp table f as select boxcar.enqueue('r', '{"command":["x"]}', max_attempts => 1) as id;
select count(*) from boxcar.claim('w1', array['r'], 1);
select boxcar.retry_or_fail((select id from f), 'w1', '{"code":"FETCH_FAILED","message":"boom"}');
select is((select status from boxcar.jobs where id = (select id from f)), 'failed', 'setup: the job failed');
select is(boxcar.retry((select id from f), 'alice@host') ->> 'status', 'queued',
          'retry puts a failed job back in the queue');
select is((select attempts || ':' || coalesce(error::text, 'null') || ':' || (finished_at is null)
                  || ':' || manual_retries || ':' || (run_at <= now())
             from boxcar.jobs where id = (select id from f)),
          '0:null:true:1:true', 'with a fresh attempt budget, no error, no finish time, due now');
select is((select details ->> 'requested_by' from boxcar.job_events
            where job_id = (select id from f) and kind = 'retry_requested'),
          'alice@host', 'an event names who asked');
select is((select details #>> '{previous_error,code}' || ':' || (details ->> 'previous_status')
             from boxcar.job_events where job_id = (select id from f) and kind = 'retry_requested'),
          'FETCH_FAILED:failed', 'and keeps the previous status and error');
select is((select id from boxcar.claim('w2', array['r'], 1)), (select id from f),
          'a worker claims it again');
select throws_ok(format('select boxcar.retry(%L, %L)', (select id from f), 'bob'), '55000',
                 format('job %s is running: only a failed or cancelled job can be retried', (select id from f)),
                 'a running job cannot be retried');
select boxcar.complete((select id from f), 'w2', 'succeeded', '{"exit_code":0}');
select throws_ok(format('select boxcar.retry(%L, %L)', (select id from f), 'bob'), '55000', null,
                 'nor a succeeded one');
-- A run's 'finished' event is its job row (boxcar.row_events) until a
-- retry clears the row: the retry stores it first, so both runs tell.
select results_eq(
    $$select e ->> 'kind', e ->> 'worker_id', e -> 'details' ->> 'status'
        from boxcar.job_events_json((select id from f)) e$$,
    $$values ('claimed', 'w1', null), ('finished', 'w1', 'failed'), ('retry_requested', null, null),
             ('claimed', 'w2', null), ('finished', 'w2', 'succeeded')$$,
    'the events of both runs, each ended by its finished event');

create temp table c as select boxcar.enqueue('r', '{"command":["y"]}') as id;
select boxcar.cancel((select id from c));
select is(boxcar.retry((select id from c), 'ui:admin') ->> 'status', 'queued', 'a cancelled job is queued again');
select is((select (cancel_requested_at is null)::text from boxcar.jobs where id = (select id from c)),
          'true', 'its cancel request is cleared');
select results_eq($$select e ->> 'kind' from boxcar.job_events_json((select id from c)) e$$,
                  $$values ('cancelled'), ('retry_requested')$$,
                  'a job cancelled before it ran has no finished event');
select throws_ok(format('select boxcar.retry(%L, %L)', (select id from c), 'bob'), '55000', null,
                 'a queued job cannot be retried');
select throws_ok(format('select boxcar.retry(%L, %L)', gen_random_uuid(), 'bob'), 'P0002', null,
                 'an unknown job is an error');
select throws_ok(format('select boxcar.retry(%L, %L)', (select id from c), ' '), '22023', null,
                 'requested_by must name someone');

-- The previous run's log moves below zero; the new run logs from attempt 1 again.
create temp table lg as select boxcar.enqueue('lg', '{"command":["x"]}') as id;
select count(*) from boxcar.claim('w3', array['lg'], 1);
select boxcar.append_logs((select id from lg), 1, 1, array[1, 1]::smallint[], array['a'::bytea, 'b'::bytea]);
select boxcar.complete((select id from lg), 'w3', 'failed', null, '{"code":"NONZERO_EXIT"}');
select boxcar.retry((select id from lg), 'bob');
select count(*) from boxcar.claim('w3', array['lg'], 1);
select lives_ok(format($$select boxcar.append_logs(%L, 1, 1, array[2]::smallint[], array['c'::bytea])$$, (select id from lg)),
                'the retried run appends its log at attempt 1 again');
select is((select string_agg(convert_from(data, 'UTF8'), '') from boxcar.job_logs_after((select id from lg), 0, 0)),
          'c', 'a reader from attempt 0 sees the current run only');
select is((select string_agg(attempt || ':' || convert_from(data, 'UTF8'), ' ' order by attempt, seq)
             from boxcar.job_logs where job_id = (select id from lg) and attempt < 0),
          '-999:a -999:b', 'the previous run''s log is kept below zero');

-- The webhook event is written again for the new run.
create temp table h as select boxcar.enqueue('r', '{"command":["z"]}', webhook_url => 'http://h.example/') as id;
select boxcar.cancel((select id from h));
select boxcar.retry((select id from h), 'bob');
select boxcar.cancel((select id from h));
select is((select count(*)::int from boxcar.webhook_deliveries where job_id = (select id from h)), 2,
          'a retried job that ends again gets a second webhook delivery');

-- A retried job on an artifact storage waits behind that storage's active jobs.
create temp table a1 as select boxcar.enqueue('r', '{"command":["x"],"artifact":{"storage":"s1"}}') as id;
select boxcar.cancel((select id from a1));
create temp table a2 as select boxcar.enqueue('r', '{"command":["x"],"artifact":{"storage":"s1"}}') as id;
select boxcar.retry((select id from a1), 'bob');
select is((select blocked from boxcar.jobs where id = (select id from a1)), true,
          'a retried artifact job is blocked while another job of its storage is active');

-- jobs_list: newest first, filters, keyset pages.
delete from boxcar.job_events; delete from boxcar.webhook_deliveries; delete from boxcar.jobs;
insert into boxcar.jobs (queue, spec, status, created_at)
select case when i % 2 = 0 then 'even' else 'odd' end, '{"command":["x"]}',
       case when i % 3 = 0 then 'failed' else 'queued' end,
       timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => i / 2)
  from generate_series(1, 30) i;
select is((select count(*)::int from boxcar.jobs_list()), 30, 'all jobs listed by default (limit 50)');
select is((select array_agg(job ->> 'id') from boxcar.jobs_list(lim => 30)),
          (select array_agg(id::text order by created_at desc, id desc) from boxcar.jobs),
          'newest first, ties broken by id');
create temp table p1 as select * from boxcar.jobs_list(lim => 7);
create temp table p2 as select * from boxcar.jobs_list(lim => 7, after => (select cursor from p1 offset 6));
select is((select array_agg(job ->> 'id') from (select * from p1 union all select * from p2) x),
          (select array_agg(job ->> 'id') from boxcar.jobs_list(lim => 14)),
          'the second page follows the first with no gap or overlap');
create temp table walk as
with recursive pages(n, cur, ids) as (
    select 1, null::text, array[]::text[]
    union all
    select n + 1, (select cursor from boxcar.jobs_list(queue => 'odd', lim => 4, after => cur) offset 3 limit 1),
           ids || (select array_agg(job ->> 'id') from boxcar.jobs_list(queue => 'odd', lim => 4, after => cur))
      from pages where n < 5)
select ids from pages where n = 5;
select is((select cardinality(ids) from walk), 15, 'walking pages of 4 visits each odd job');
select is((select count(distinct x)::int from walk, unnest(ids) x), 15, 'exactly once');
select is((select count(*)::int from boxcar.jobs_list(queue => 'even', status => 'failed')),
          (select count(*)::int from boxcar.jobs where queue = 'even' and status = 'failed'),
          'queue and status filters combine');
select is((select count(*)::int from boxcar.jobs_list(since => '2026-01-01 00:00:10+00')),
          (select count(*)::int from boxcar.jobs where created_at >= '2026-01-01 00:00:10+00'),
          'since keeps jobs created at or after it');
select throws_ok($$select * from boxcar.jobs_list(after => 'nonsense')$$, '22023', null, 'a bad cursor is refused');
select throws_ok($$select * from boxcar.jobs_list(status => 'done')$$, '22023', null, 'an unknown status is refused');
select throws_ok($$select * from boxcar.jobs_list(lim => 0)$$, '22023', null, 'a limit below 1 is refused');

-- queue_overview: queue_stats plus the last hour's latencies.
update boxcar.jobs set status = 'succeeded', run_at = now() - interval '10 s',
       started_at = now() - interval '8 s', finished_at = now() - interval '5 s'
 where queue = 'even' and status = 'queued';
select is((select queued::int || ':' || succeeded_last_hour || ':' || round(wait_avg_s) || ':' || round(run_avg_s)
             from boxcar.queue_overview() where queue = 'even'),
          '0:10:2:3', 'queue_overview has counts and average wait and run times');
select is((select count(*)::int from boxcar.queue_overview()), (select count(*)::int from boxcar.queue_stats),
          'one row per queue of queue_stats');

select * from finish();
rollback;
