-- Issue 49: depends_on.  A job runs only after its dependencies have
-- succeeded; a dependency that fails or is cancelled cancels its waiting
-- dependents (DEPENDENCY_FAILED), recursively; a manual retry of it brings
-- them back.
begin;
select plan(62);

select boxcar.register_worker('w51', 'h', 1, '{d51/q,d51/q2,d51/art}', 4, 'test');
-- Runs job id as worker w51 and reports status (a claim of that very job).
create function pg_temp.run(id uuid, status text) returns boolean language sql as $$
    update boxcar.jobs set status = 'running', worker_id = 'w51', attempts = attempts + 1,
                           started_at = now(), lease_expires_at = now() + interval '1 minute'
     where jobs.id = run.id and jobs.status = 'queued' and not jobs.blocked;
    select boxcar.complete(run.id, 'w51', run.status)
$$;
create function pg_temp.st(id uuid) returns text language sql as $$
    select status || case when blocked and status = 'queued' then ':blocked' else '' end
      from boxcar.jobs where jobs.id = st.id
$$;
create temp table j (name text primary key, id uuid);
create function pg_temp.id(n text) returns uuid language sql as $$ select id from j where name = n $$;
create function pg_temp.add(n text, queue text, deps text[] default null, spec jsonb default '{"command":["x"]}')
returns uuid language sql as $$
    insert into j values (n, boxcar.enqueue(queue, spec,
                             depends_on => (select array_agg(pg_temp.id(d)) from unnest(deps) d)))
    returning id
$$;

-- A chain: a -> b -> c.
select pg_temp.add('a', 'd51/q');
select pg_temp.add('b', 'd51/q', '{a}');
select pg_temp.add('c', 'd51/q', '{b}');
select is(pg_temp.st(pg_temp.id('b')) || ' ' || pg_temp.st(pg_temp.id('c')), 'queued:blocked queued:blocked',
          'a dependent is queued and blocked');
select is(boxcar.job_json(pg_temp.id('b')) -> 'depends_on', jsonb_build_array(pg_temp.id('a')),
          'job_json lists its dependencies');
select ok(not boxcar.job_json(pg_temp.id('a')) ? 'depends_on', 'and has no depends_on for a job without');
select ok(not boxcar.job_json(pg_temp.id('a')) ? 'has_dependents', 'nor the internal flag');
select ok((select has_dependents from boxcar.jobs where id = pg_temp.id('a')), 'the dependency is flagged');
select is((select array_agg(id) from boxcar.claim('w51', array['d51/q'], 10)), array[pg_temp.id('a')],
          'a claim takes the dependency only');
select ok(boxcar.complete(pg_temp.id('a'), 'w51', 'succeeded'), 'a succeeds');
select is(pg_temp.st(pg_temp.id('b')) || ' ' || pg_temp.st(pg_temp.id('c')), 'queued queued:blocked',
          'its success unblocks b, in its transaction; c still waits on b');
select is((select details from boxcar.job_events where job_id = pg_temp.id('b') order by id desc limit 1),
          jsonb_build_object('dependency', pg_temp.id('a'), 'artifact_wait', false),
          'b''s events say which dependency unblocked it');
select is((select kind from boxcar.job_events where job_id = pg_temp.id('b') order by id desc limit 1),
          'dependencies_met', '(kind dependencies_met)');
select ok(pg_temp.run(pg_temp.id('b'), 'succeeded'), 'b succeeds');
select is(pg_temp.st(pg_temp.id('c')), 'queued', 'then c is unblocked');

-- Fan-in: d waits on e and f.
select pg_temp.add('e', 'd51/q');
select pg_temp.add('f', 'd51/q');
select pg_temp.add('d', 'd51/q', '{e,f,e}');
select is(jsonb_array_length(boxcar.job_json(pg_temp.id('d')) -> 'depends_on'), 2, 'a repeated id counts once');
select ok(pg_temp.run(pg_temp.id('e'), 'succeeded'), 'e succeeds');
select is(pg_temp.st(pg_temp.id('d')), 'queued:blocked', 'd still waits on f');
select ok(pg_temp.run(pg_temp.id('f'), 'succeeded'), 'f succeeds');
select is(pg_temp.st(pg_temp.id('d')), 'queued', 'd runs after the last of them');

-- Fan-out: g -> h, i.
select pg_temp.add('g', 'd51/q');
select pg_temp.add('h', 'd51/q', '{g}');
select pg_temp.add('i', 'd51/q2', '{g}');
select ok(pg_temp.run(pg_temp.id('g'), 'succeeded'), 'g succeeds');
select is(pg_temp.st(pg_temp.id('h')) || ' ' || pg_temp.st(pg_temp.id('i')), 'queued queued',
          'both its dependents are unblocked (any queue of the scope)');

-- A failure in the middle: p -> q -> r -> s, and t waits on r and p.
select pg_temp.add('p', 'd51/q');
select pg_temp.add('q', 'd51/q', '{p}');
select pg_temp.add('r', 'd51/q', '{q}');
select pg_temp.add('s', 'd51/q', '{r}');
select pg_temp.add('t', 'd51/q', '{r,p}');
select ok(pg_temp.run(pg_temp.id('p'), 'succeeded'), 'p succeeds');
select ok(pg_temp.run(pg_temp.id('q'), 'failed'), 'q fails');
select is(pg_temp.st(pg_temp.id('r')) || ' ' || pg_temp.st(pg_temp.id('s')) || ' ' || pg_temp.st(pg_temp.id('t')),
          'cancelled cancelled cancelled', 'its dependents are cancelled, recursively');
select is((select error from boxcar.jobs where id = pg_temp.id('r')),
          jsonb_build_object('code', 'DEPENDENCY_FAILED', 'message', format('dependency %s failed', pg_temp.id('q')),
                             'dependency', pg_temp.id('q')),
          'r''s error names q, which failed');
select is((select error from boxcar.jobs where id = pg_temp.id('s')),
          jsonb_build_object('code', 'DEPENDENCY_FAILED', 'message', format('dependency %s was cancelled', pg_temp.id('r')),
                             'dependency', pg_temp.id('r')),
          's''s names r, cancelled');
select ok((select finished_at is not null from boxcar.jobs where id = pg_temp.id('s')), 'they are finished');
select is((select kind || ' ' || (details ->> 'dependency') from boxcar.job_events
            where job_id = pg_temp.id('s') order by id desc limit 1),
          'dependency_failed ' || pg_temp.id('r'), 'their events say so');
select is((select count(*)::int from boxcar.webhook_deliveries where job_id = pg_temp.id('s')), 0,
          '(no webhook: none is set)');
select throws_ok(format('select boxcar.retry(%L, %L)', pg_temp.id('r'), 't51'), '55000',
                 format('job %s depends on job %s, which failed: retry that one first', pg_temp.id('r'), pg_temp.id('q')),
                 'a dependent is not retried while its dependency is failed');

-- A manual retry of q brings r, s and t back, waiting.
select is(boxcar.retry(pg_temp.id('q'), 't51') ->> 'status', 'queued', 'q is retried');
select is(pg_temp.st(pg_temp.id('r')) || ' ' || pg_temp.st(pg_temp.id('s')) || ' ' || pg_temp.st(pg_temp.id('t')),
          'queued:blocked queued:blocked queued:blocked', 'its cancelled dependents come back, blocked');
select is((select error from boxcar.jobs where id = pg_temp.id('s')), null, 'their errors cleared');
select is((select kind from boxcar.job_events where job_id = pg_temp.id('s') order by id desc limit 1),
          'dependency_retried', 'and the events say why');
select ok(pg_temp.run(pg_temp.id('q'), 'succeeded'), 'q succeeds this time');
select is(pg_temp.st(pg_temp.id('r')) || ' ' || pg_temp.st(pg_temp.id('s')), 'queued queued:blocked',
          'r runs, s after it');
select ok(pg_temp.run(pg_temp.id('r'), 'succeeded'), 'r succeeds');
select is(pg_temp.st(pg_temp.id('s')) || ' ' || pg_temp.st(pg_temp.id('t')), 'queued queued', 's and t run');

-- Cancelling a dependency cancels its dependents.
select pg_temp.add('u', 'd51/q');
select pg_temp.add('v', 'd51/q', '{u}');
select is(boxcar.cancel(pg_temp.id('u')), 'cancelled', 'u is cancelled');
select is((select error ->> 'message' from boxcar.jobs where id = pg_temp.id('v')),
          format('dependency %s was cancelled', pg_temp.id('u')), 'v too, naming u');

-- An automatic retry of a dependency is not an end: the dependent waits.
select pg_temp.add('w', 'd51/q', spec => '{"command":["x"]}');
select pg_temp.add('x', 'd51/q', '{w}');
update boxcar.jobs set status = 'running', worker_id = 'w51', attempts = 1, lease_expires_at = now() + interval '1 minute'
 where id = pg_temp.id('w');
select is(boxcar.retry_or_fail(pg_temp.id('w'), 'w51', '{"code":"SANDBOX_SETUP"}'), 'queued', 'w is retried');
select is(pg_temp.st(pg_temp.id('x')), 'queued:blocked', 'x still waits');
update boxcar.jobs set run_at = now() where id = pg_temp.id('w');
select ok(pg_temp.run(pg_temp.id('w'), 'succeeded'), 'w succeeds at its second attempt');
select is(pg_temp.st(pg_temp.id('x')), 'queued', 'x runs');

-- Enqueued on dependencies that have already ended.
select pg_temp.add('y', 'd51/q', '{a}');
select is(pg_temp.st(pg_temp.id('y')), 'queued', 'on a succeeded job: runs at once');
select pg_temp.add('z', 'd51/q', '{u}');
select is(pg_temp.st(pg_temp.id('z')) || ' ' || (select error ->> 'code' from boxcar.jobs where id = pg_temp.id('z')),
          'cancelled DEPENDENCY_FAILED', 'on a cancelled one: cancelled at once');

-- Scopes and unknown ids.
select throws_ok(format($$select boxcar.enqueue('other/q', '{"command":["x"]}', depends_on => array[%L::uuid])$$,
                        pg_temp.id('a')),
                 '22023', format('depends_on: job %s not found in scope "other"', pg_temp.id('a')),
                 'a job of another scope is refused as an unknown one');
select throws_ok($$select boxcar.enqueue('d51/q', '{"command":["x"]}', depends_on => array['00000000-0000-4000-8000-000000000000'::uuid])$$,
                 '22023', 'depends_on: job 00000000-0000-4000-8000-000000000000 not found in scope "d51"',
                 'an unknown id is named');
select throws_ok($$select boxcar.enqueue('d51/q', '{"command":["x"]}', depends_on => array[null::uuid])$$,
                 '22023', 'depends_on: a job id may not be null', 'a null id is refused');
select lives_ok(format($$select boxcar.enqueue('sc/one', '{"command":["x"]}', depends_on =>
                         array[boxcar.enqueue('sc/two', '{"command":["x"]}')])$$),
                'queues of one scope may depend on each other');

-- Idempotency compares the dependencies.
select is(boxcar.enqueue('d51/q', '{"command":["k"]}', idempotency_key => 'dep-k', depends_on => array[pg_temp.id('a')]),
          boxcar.enqueue('d51/q', '{"command":["k"]}', idempotency_key => 'dep-k', depends_on => array[pg_temp.id('a')]),
          'the same request with the same dependencies gets the same job');
select throws_ok(format($$select boxcar.enqueue('d51/q', '{"command":["k"]}', idempotency_key => 'dep-k',
                                                  depends_on => array[%L::uuid])$$, pg_temp.id('b')),
                 '23505', null, 'different dependencies under the key are refused');

-- enqueue_many: indexes of earlier elements.
create temp table m as select boxcar.enqueue_many(array[
    '{"queue": "d51/q", "spec": {"command": ["1"]}}',
    format('{"queue": "d51/q", "spec": {"command": ["2"]}, "depends_on": [0, "%s"]}', pg_temp.id('a')),
    '{"queue": "d51/q", "spec": {"command": ["3"]}, "depends_on": [1]}']::jsonb[]) as ids;
select is(boxcar.job_json((select ids[2] from m)) -> 'depends_on',
          (select jsonb_agg(x order by x) from unnest(array[(select ids[1] from m), pg_temp.id('a')]) x),
          'an index stands for the earlier element''s job');
select is(pg_temp.st((select ids[2] from m)) || ' ' || pg_temp.st((select ids[3] from m)),
          'queued:blocked queued:blocked', 'and waits on it');

-- Artifact order: a dependent is not in its storage's line until its
-- dependencies have succeeded; then it queues behind the active job.
select pg_temp.add('ad', 'd51/art');
select pg_temp.add('a1', 'd51/art', '{ad}', '{"command":["x"],"artifact":{"storage":"dep51"}}');
select pg_temp.add('a2', 'd51/art', null, '{"command":["x"],"artifact":{"storage":"dep51"}}');
select is(pg_temp.st(pg_temp.id('a2')), 'queued', 'a job after a waiting dependent on its storage is not held by it');
update boxcar.jobs set status = 'running', worker_id = 'w51', attempts = 1, lease_expires_at = now() + interval '1 minute'
 where id = pg_temp.id('a2');
select ok(pg_temp.run(pg_temp.id('ad'), 'succeeded'), 'the dependency succeeds while a2 runs');
select is(pg_temp.st(pg_temp.id('a1')), 'queued:blocked', 'a1 joins the line behind a2');
select ok(boxcar.complete(pg_temp.id('a2'), 'w51', 'succeeded'), 'a2 finishes');
select is(pg_temp.st(pg_temp.id('a1')), 'queued', 'a1 goes next');
select pg_temp.add('bd', 'd51/art');
select pg_temp.add('b1', 'd51/art', '{bd}', '{"command":["x"],"artifact":{"storage":"dep51b"}}');
select ok(pg_temp.run(pg_temp.id('bd'), 'failed'), 'another dependency fails');
select pg_temp.add('b2', 'd51/art', null, '{"command":["x"],"artifact":{"storage":"dep51b"}}');
select is(pg_temp.st(pg_temp.id('b1')) || ' ' || pg_temp.st(pg_temp.id('b2')), 'cancelled queued',
          'its dependent, cancelled while blocked, holds no later job of its storage');

-- Pruning a job deletes its edges.
select is((select count(*)::int from boxcar.job_dependencies where depends_on = pg_temp.id('g')), 2, 'g has two edges');
update boxcar.jobs set finished_at = now() - interval '2 days' where id = pg_temp.id('g');
select ok(boxcar.prune('1 day') >= 1, 'g is pruned');
select is((select count(*)::int from boxcar.job_dependencies where depends_on = pg_temp.id('g')), 0, 'and its edges with it');

select * from finish();
rollback;
