-- Operator caps per queue and quotas per scope (sql/39_caps_quotas.sql).
begin;
select plan(50);

-- The image a queue of scope acme may name (storages belong to a scope).
select boxcar.create_storage('base', 'image', 'acme');

-- Setting caps.
select throws_like($$select boxcar.set_queue_caps('acme/q', '{"memory_mb": 8}')$$,
                   'caps.memory_mb: must be between 16 and 1048576', 'a cap outside the spec''s range is refused');
select throws_like($$select boxcar.set_queue_caps('acme/q', '{"colour": 1}')$$,
                   'caps.colour: unknown cap', 'an unknown cap is refused');
select throws_like($$select boxcar.set_queue_caps('acme/q', '{"images": ["../x"]}')$$,
                   'caps.images[0]: must be 1-128%', 'a bad image name is refused');
select throws_like($$select boxcar.set_queue_caps('acme/q', '{"sessions": "no"}')$$,
                   'caps.sessions: must be true or false', 'sessions must be a boolean');
select is(boxcar.set_queue_caps('acme/q', '{"memory_mb": 4096, "cpus": 2, "pids": 100, "disk_mb": 500,
          "files": 1000, "timeout_s": 60, "output_bytes": 4096, "startup_timeout_s": 10,
          "session_idle_s": 120, "images": ["base"], "sessions": true}') -> 'caps' ->> 'memory_mb',
          '4096', 'set_queue_caps stores the caps');
select is((select count(*)::int from boxcar.queue_caps_ls()), 1, 'queue_caps_ls lists the queue');

-- Each numeric cap: over it refused, naming the field, the value, the queue and the cap.
select throws_ok($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"memory_mb":1048576}}')$$,
                 '22023', 'BAD_SPEC: limits.memory_mb: 1048576 exceeds the queue "acme/q" cap of 4096 (boxcar queue caps)',
                 'memory over the cap refused with a message naming cap and queue');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"cpus":2.5}}')$$,
                   'BAD_SPEC: limits.cpus: 2.5 exceeds the queue "acme/q" cap of 2 %', 'cpus over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"pids":101}}')$$,
                   'BAD_SPEC: limits.pids: 101 exceeds%cap of 100 %', 'pids over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"disk_mb":501}}')$$,
                   'BAD_SPEC: limits.disk_mb: 501 exceeds%cap of 500 %', 'disk_mb over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"files":1001}}')$$,
                   'BAD_SPEC: limits.files: 1001 exceeds%cap of 1000 %', 'files over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"timeout_s":60.5}}')$$,
                   'BAD_SPEC: limits.timeout_s: 60.5 exceeds%cap of 60 %', 'timeout_s over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"output_bytes":4097}}')$$,
                   'BAD_SPEC: limits.output_bytes: 4097 exceeds%cap of 4096 %', 'output_bytes over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"startup_script":"true","startup_timeout_s":11}')$$,
                   'BAD_SPEC: startup_timeout_s: 11 exceeds%cap of 10 %', 'startup_timeout_s over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"code":{"language":"python","source":"def main(): pass"},"session":{"id":"caps-s1","idle_timeout_s":121}}')$$,
                   'BAD_SPEC: session.idle_timeout_s: 121 exceeds%cap of 120 %', 'session idle timeout over the cap');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"image":{"storage":"other"}}')$$,
                   'BAD_SPEC: image.storage: "other" is not among the images the queue "acme/q" allows (base)',
                   'an image the queue does not allow');

-- At the cap: accepted as asked.
select lives_ok($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"memory_mb":4096,"cpus":2,"pids":100,
                  "disk_mb":500,"files":1000,"timeout_s":60,"output_bytes":4096},"image":{"storage":"base"}}',
                  idempotency_key => 'caps-at')$$, 'a spec at every cap is accepted');
select is((select spec -> 'limits' from boxcar.jobs where idempotency_key = 'caps-at'),
          '{"memory_mb":4096,"cpus":2,"pids":100,"disk_mb":500,"files":1000,"timeout_s":60,"output_bytes":4096}'::jsonb,
          'and stored as asked');

-- Omitted: the smaller of the cap and the worker's default is stored.
select boxcar.enqueue('acme/q', '{"command":["x"]}', idempotency_key => 'caps-omit');
select is((select spec -> 'limits' from boxcar.jobs where idempotency_key = 'caps-omit'),
          '{"memory_mb":1024,"cpus":1.0,"pids":100,"disk_mb":500,"files":1000,"timeout_s":60,"output_bytes":4096}'::jsonb,
          'omitted limits are filled in: the cap, or the default when the cap is above it');
select is(boxcar.enqueue('acme/q', '{"command":["x"]}', idempotency_key => 'caps-omit'),
          (select id from boxcar.jobs where idempotency_key = 'caps-omit'),
          'the same request again gets the same job (compared filled)');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["y"]}', idempotency_key => 'caps-omit')$$,
                   'idempotency_key: already used by job % with a different spec', 'a different request under the key is refused');
select boxcar.set_queue_caps('acme/q', '{"memory_mb": 4000}');
select is(boxcar.enqueue('acme/q', '{"command":["x"]}', idempotency_key => 'caps-omit'),
          (select id from boxcar.jobs where idempotency_key = 'caps-omit'),
          'and the same request after the caps changed');
select boxcar.set_queue_caps('acme/q', '{"memory_mb": 4096, "cpus": 2, "pids": 100, "disk_mb": 500,
          "files": 1000, "timeout_s": 60, "output_bytes": 4096, "startup_timeout_s": 10,
          "session_idle_s": 120, "images": ["base"], "sessions": true}');
select boxcar.enqueue('acme/q', '{"command":["x"],"startup_script":"true"}', idempotency_key => 'caps-st');
select is((select spec -> 'startup_timeout_s' from boxcar.jobs where idempotency_key = 'caps-st'), '10'::jsonb,
          'a startup script''s omitted timeout is filled in');
select is((select spec ? 'startup_timeout_s' from boxcar.jobs where idempotency_key = 'caps-omit'), false,
          'but not without a startup script');
select boxcar.enqueue('acme/q', '{"code":{"language":"python","source":"def main(): pass"},"session":{"id":"caps-s2"}}',
                      idempotency_key => 'caps-sess');
select is((select spec #> '{session,idle_timeout_s}' from boxcar.jobs where idempotency_key = 'caps-sess'),
          '120'::jsonb, 'a session''s omitted idle timeout is filled in');

-- Sessions and images off.
select boxcar.set_queue_caps('acme/q', '{"sessions": false, "images": []}');
select throws_like($$select boxcar.enqueue('acme/q', '{"code":{"language":"python","source":"def main(): pass"},"session":{"id":"caps-s3"}}')$$,
                   'BAD_SPEC: session: the queue "acme/q" allows no sessions%', 'sessions off: a session job is refused');
select throws_like($$select boxcar.enqueue('acme/q', '{"command":["x"],"image":{"storage":"base"}}')$$,
                   'BAD_SPEC: image: the queue "acme/q" allows no image%', 'images []: any image is refused');
select is((select count(*)::int from boxcar.sessions where id = 'caps-s3'), 0, 'a refused session job makes no session');

-- Every path that makes a job: direct inserts, schedules, manual retry.
select boxcar.set_queue_caps('acme/q', '{"memory_mb": 512}');
select throws_like($$insert into boxcar.jobs (queue, spec) values ('acme/q', '{"command":["x"],"limits":{"memory_mb":600}}')$$,
                   'BAD_SPEC: limits.memory_mb: 600 exceeds%', 'a row written around enqueue is capped too');
select throws_like($$select boxcar.schedule_add('caps-sched', '* * * * *', 'acme/q', '{"command":["x"],"limits":{"memory_mb":600}}')$$,
                   'BAD_SPEC: limits.memory_mb: 600 exceeds%', 'a schedule over a cap is refused when added');
select throws_like($$update boxcar.jobs set spec = '{"command":["x"],"limits":{"memory_mb":600}}' where idempotency_key = 'caps-omit'$$,
                   'BAD_SPEC: limits.memory_mb: 600 exceeds%', 'a queued job''s spec changed in place is capped too');
update boxcar.jobs set status = 'failed', finished_at = now() where idempotency_key = 'caps-at';
select throws_like($$select boxcar.retry((select id from boxcar.jobs where idempotency_key = 'caps-at'), 'test')$$,
                   'BAD_SPEC: limits.memory_mb: 4096 exceeds the queue "acme/q" cap of 512%',
                   'a retry over a cap lowered since is refused');
select is((select spec #>> '{limits,memory_mb}' from boxcar.jobs where idempotency_key = 'caps-omit'), '1024',
          'lowering a cap leaves queued jobs as they are');
select boxcar.set_queue_caps('acme/q', null);
select lives_ok($$select boxcar.enqueue('acme/q', '{"command":["x"],"limits":{"memory_mb":1048576}}')$$,
                'caps removed: any limit again');
select is((select count(*)::int from boxcar.queue_caps), 0, 'no row left');

-- Quotas: max_running over every queue of a scope.
select throws_like($$select boxcar.set_scope_quota('a/b', 1, null)$$, 'scope: must be%', 'a bad scope refused');
select throws_like($$select boxcar.set_scope_quota('t1', 0, null)$$, 'max_running: must be%', 'max_running 0 refused');
select is(boxcar.set_scope_quota('t1', 2, null) ->> 'max_running', '2', 'set_scope_quota');
select boxcar.enqueue('t1/a', '{"command":["x"]}') from generate_series(1, 3);
select boxcar.enqueue('t1/b', '{"command":["x"]}') from generate_series(1, 3);
select boxcar.enqueue('t2/a', '{"command":["x"]}') from generate_series(1, 3);
select is((select count(*)::int from boxcar.claim('qw1', '{t1/a}', 5)), 2, 'the fast path honours the quota');
select is((select count(*)::int from boxcar.claim('qw2', '{t1/b,t2/a}', 5)), 3,
          'a scope at its max_running gets none, another scope''s jobs run');
select is(boxcar.scope_wait_reason('t1'), 'waiting: scope "t1" runs 2 jobs, its max_running', 'the reason is shown');
select boxcar.complete(id, 'qw1', 'succeeded', '{"cpu_ms": 1500}') from boxcar.jobs
 where queue = 't1/a' and status = 'running' order by id limit 1;
select is((select count(*)::int from boxcar.claim('qw2', '{t1/b}', 5)), 1, 'a finished job frees one place');

-- CPU-seconds per day: charged by the report, stops claims when used up.
select boxcar.set_scope_quota('t3', null, 2);
select boxcar.enqueue('t3/a', '{"command":["x"]}') from generate_series(1, 3);
select is((select count(*)::int from boxcar.claim('qw3', '{t3/a}', 1)), 1, 'under its CPU quota a scope runs');
select ord, held from boxcar.report_batch('qw3', array(select id from boxcar.jobs where queue = 't3/a' and status = 'running'),
                                          '{1}', '{complete}', '{succeeded}', '{"{\"cpu_ms\": 2500}"}', '{null}', '{null}');
select is((select cpu_ms from boxcar.scope_cpu_usage where scope = 't3' and day = boxcar.usage_day()), 2500::bigint,
          'the report charged the job''s CPU time to its scope for today');
select is((select count(*)::int from boxcar.claim('qw3', '{t3/a}', 5)), 0, 'CPU quota used up: no claim');
select alike(boxcar.scope_quota_json('t3') ->> 'waiting', 'waiting: scope "t3" used its 2 CPU-seconds for %',
            'scope_quota_json says why');
select is((select count(*)::int from boxcar.jobs where queue = 't3/a' and status = 'queued'), 2, 'its jobs stay queued');
select lives_ok($$select boxcar.enqueue('t3/a', '{"command":["x"]}')$$, 'enqueue still accepts');
-- The next UTC day: today's counter is yesterday's.
update boxcar.scope_cpu_usage set day = day - 1 where scope = 't3';
select is((select count(*)::int from boxcar.claim('qw3', '{t3/a}', 5)), 3, 'the next day the scope runs again');
select is((select count(*)::int from boxcar.scope_cpu_usage where scope = 't1'), 0,
          'no counter for a scope without a CPU quota');

select * from finish();
rollback;
