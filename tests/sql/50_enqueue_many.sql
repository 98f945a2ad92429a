-- Issue 49: boxcar.enqueue_many, many jobs in one call, all or nothing.
begin;
select plan(30);

create temp table got as
select boxcar.enqueue_many(array[
    '{"queue": "many", "spec": {"command": ["echo", "a"]}}',
    '{"queue": "many", "spec": {"command": ["echo", "b"]}, "priority": 5, "max_attempts": 2,
      "run_at": "2030-01-02T03:04:05Z", "webhook_url": "https://hooks.example/x"}',
    '{"queue": "many2", "spec": {"command": ["echo", "c"]}, "idempotency_key": "many-c"}'
]::jsonb[]) as ids;

select is(cardinality((select ids from got)), 3, 'three elements give three ids');
select is((select array_agg(j.spec -> 'command' ->> 1 order by o) from got, unnest(got.ids) with ordinality u(id, o)
             join boxcar.jobs j on j.id = u.id),
          array['a', 'b', 'c'], 'the ids are in input order');
select is((select row(priority, max_attempts, run_at, webhook_url)::text from boxcar.jobs
            where id = (select ids[2] from got)),
          row(5::smallint, 2, '2030-01-02T03:04:05Z'::timestamptz, 'https://hooks.example/x')::text,
          'priority, max_attempts, run_at (ISO-8601 text) and webhook_url are taken');
select is((select row(priority, max_attempts, status, blocked)::text from boxcar.jobs
            where id = (select ids[1] from got)),
          row(0::smallint, 3, 'queued', false)::text, 'and default as enqueue''s do');

-- Idempotency keys per row: the same element again gives the same job.
select is((boxcar.enqueue_many(array['{"queue": "many2", "spec": {"command": ["echo", "c"]}, "idempotency_key": "many-c"}',
                                     '{"queue": "many2", "spec": {"command": ["echo", "d"]}}']::jsonb[]))[1],
          (select ids[3] from got), 'an element under an existing key gets that job''s id');
select is((select count(*)::int from boxcar.jobs where idempotency_key = 'many-c'), 1, 'and no second job');
select is(boxcar.enqueue('many2', '{"command": ["echo", "c"]}', idempotency_key => 'many-c'),
          (select ids[3] from got), 'enqueue agrees with it');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many2", "spec": {"command": ["echo", "x"]}}',
                   '{"queue": "many2", "spec": {"command": ["echo", "changed"]}, "idempotency_key": "many-c"}']::jsonb[])$$,
                 '23505', format('jobs[1]: idempotency_key: already used by job %s with a different spec',
                                 (select ids[3] from got)),
                 'a different request under a key is refused, naming the element');
select is((select count(distinct x)::int from unnest(boxcar.enqueue_many(array[
               '{"queue": "many", "spec": {"command": ["k"]}, "idempotency_key": "twice"}',
               '{"queue": "many", "spec": {"command": ["k"]}, "idempotency_key": "twice"}']::jsonb[])) x),
          1, 'the same key twice in one call is one job');
select is((select count(*)::int from boxcar.jobs where idempotency_key = 'twice'), 1, '(one row)');

-- One bad element refuses the whole call, naming it, with enqueue's code.
create temp table n0 as select count(*) as n from boxcar.jobs;
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["ok"]}}',
                   '{"queue": "many", "spec": {"command": "not an array"}}']::jsonb[])$$,
                 '22023', 'jobs[1]: BAD_SPEC: command: must be a non-empty array of strings',
                 'a bad spec is named by its index');
select is((select count(*) from boxcar.jobs), (select n from n0), 'and nothing of the call was enqueued');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "bad queue!", "spec": {"command": ["x"]}}']::jsonb[])$$,
                 '22023', 'jobs[0]: queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")',
                 'a bad queue');
select throws_ok($$select boxcar.enqueue_many(array['{"spec": {"command": ["x"]}}']::jsonb[])$$,
                 '22023', null, 'a missing queue');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many"}']::jsonb[])$$,
                 '22023', 'jobs[0]: BAD_SPEC: spec: must be a JSON object', 'a missing spec');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "colour": 1}']::jsonb[])$$,
                 '22023', 'jobs[0]: colour: unknown field', 'an unknown key');
select throws_ok($$select boxcar.enqueue_many(array['[1]']::jsonb[])$$,
                 '22023', 'jobs[0]: must be a JSON object', 'an element that is not an object');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "priority": 1.5}']::jsonb[])$$,
                 '22023', 'jobs[0]: priority: must be between -32768 and 32767', 'a priority that is not an integer');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "max_attempts": 0}']::jsonb[])$$,
                 '22023', 'jobs[0]: max_attempts: must be between 1 and 100', 'max_attempts out of range');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "run_at": "tomorrow"}']::jsonb[])$$,
                 '22023', 'jobs[0]: run_at: must be an ISO-8601 time as text ("2026-01-02T03:04:05Z")', 'run_at that is not ISO-8601');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "run_at": "2026-02-31T00:00:00Z"}']::jsonb[])$$,
                 '22008', 'jobs[0]: date/time field value out of range: "2026-02-31T00:00:00Z"',
                 'a date that does not exist: PostgreSQL''s code and message, named');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "idempotency_key": 7}']::jsonb[])$$,
                 '22023', 'jobs[0]: idempotency_key: must be a string', 'a key that is not a string');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}, "depends_on": [0]}']::jsonb[])$$,
                 '22023', 'jobs[0]: depends_on[0]: must be a job id or the index of an earlier element (0 to -1)',
                 'depends_on may not name the element itself');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}}',
                   '{"queue": "many", "spec": {"command": ["x"]}, "depends_on": "0"}']::jsonb[])$$,
                 '22023', 'jobs[1]: depends_on: must be an array of job ids and indexes of earlier elements',
                 'depends_on must be an array');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many", "spec": {"command": ["x"]}}',
                   '{"queue": "many", "spec": {"command": ["x"]}, "depends_on": ["6c0f2f44-0000-4000-8000-000000000000"]}']::jsonb[])$$,
                 '22023', 'jobs[1]: depends_on: job 6c0f2f44-0000-4000-8000-000000000000 not found in scope "many"',
                 'an unknown dependency is named');

-- A refusal by the insert's triggers (here a queue's caps) is named too.
select lives_ok($$select boxcar.set_queue_caps('many-capped', '{"memory_mb": 64}')$$, 'caps for many-capped');
select throws_ok($$select boxcar.enqueue_many(array['{"queue": "many-capped", "spec": {"command": ["x"]}}',
                   '{"queue": "many-capped", "spec": {"command": ["x"], "limits": {"memory_mb": 128}}}']::jsonb[])$$,
                 null, null, 'an element over its queue''s caps is refused');
do $$
begin
    perform boxcar.enqueue_many(array['{"queue": "many-capped", "spec": {"command": ["x"]}}',
                   '{"queue": "many-capped", "spec": {"command": ["x"], "limits": {"memory_mb": 128}}}']::jsonb[]);
exception when others then
    create temp table capped_err as select sqlerrm as m;
end $$;
select matches((select m from capped_err), '^jobs\[1\]: ', 'the caps'' refusal names element 1');

select throws_ok($$select boxcar.enqueue_many(array_fill('{"queue": "many", "spec": {"command": ["x"]}}'::jsonb, array[10001]))$$,
                 '22023', 'jobs: at most 10000 in one call (got 10001)', 'at most 10,000 a call');
select is(boxcar.enqueue_many('{}'), '{}'::uuid[], 'an empty array enqueues nothing');

select * from finish();
rollback;
