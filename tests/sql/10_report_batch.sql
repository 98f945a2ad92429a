begin;
select plan(51);

-- Four jobs claimed by w1; b is then rescued and claimed again by w2 (w1
-- lost its lease), so a report of w1 for b must change nothing.
select boxcar.enqueue('rb', '{"command":["a"]}', priority => 4);
select boxcar.enqueue('rb', '{"command":["b"]}', priority => 3);
select boxcar.enqueue('rb', '{"command":["c"]}', priority => 2);
select boxcar.enqueue('rb', '{"command":["d"]}', priority => 1);
select count(*) from boxcar.claim('w1', array['rb'], 4);
create temp table ids as select spec->'command'->>0 as name, id from boxcar.jobs where queue = 'rb';
create function pg_temp.jid(n text) returns uuid language sql as $$ select id from ids where name = n $$;
update boxcar.jobs set lease_expires_at = now() - interval '1 second' where id = pg_temp.jid('b');
update boxcar.jobs set lease_expires_at = now() + interval '1 hour' where id <> pg_temp.jid('b');
select boxcar.rescue_expired();
update boxcar.jobs set run_at = now() where id = pg_temp.jid('b');
select is((select count(*)::int from boxcar.claim('w2', array['rb'], 4)), 1, 'w2 claims the rescued job');

create temp table call1 as
select * from boxcar.report_batch('w1',
    array[pg_temp.jid('c'), pg_temp.jid('b'), pg_temp.jid('a'), pg_temp.jid('d')],
    array[1, 1, 1, 1],
    array['retry', 'complete', 'complete', 'release'],
    array[null, 'succeeded', 'failed', null],
    array[null, '{"exit_code":0}', '{"exit_code":3}', null]::jsonb[],
    array['{"code":"SANDBOX_SETUP"}', null, '{"code":"NONZERO_EXIT"}', null]::jsonb[],
    array['[{"kind":"started","at":"2026-01-01T00:00:00.000001Z","details":{"sandbox":"none"}}]',
          '[{"kind":"started","at":"2026-01-01T00:00:00.000002Z","details":null},
            {"kind":"exited","at":"2026-01-01T00:00:01.000002Z","details":{"exit_code":0}}]',
          '[{"kind":"started","at":"2026-01-01T00:00:00.000003Z","details":{"sandbox":"none"}},
            {"kind":"exited","at":"2026-01-01T00:00:01.000003Z","details":{"exit_code":3}}]',
          null]::jsonb[]);

select results_eq($$select ord, held from call1 order by ord$$,
                  $$values (1, true), (2, false), (3, true), (4, true)$$,
                  'one row per input row, by position: the lost job b answers false, the others true');
select is((select status || ':' || attempts || ':' || worker_id from boxcar.jobs where id = pg_temp.jid('b')),
          'running:2:w2', 'the job w1 lost is left to w2');
select is((select status from boxcar.jobs where id = pg_temp.jid('a')), 'failed', 'a is recorded as failed');
select is((select result->>'exit_code' from boxcar.jobs where id = pg_temp.jid('a')), '3', 'with its result');
select is((select status from boxcar.jobs where id = pg_temp.jid('c')), 'queued', 'c is back in the queue (retry)');
select is((select status || ':' || attempts from boxcar.jobs where id = pg_temp.jid('d')), 'queued:0',
          'd is released without counting the attempt');
select results_eq(
    $$select e ->> 'kind' from boxcar.job_events_json(pg_temp.jid('a')) e$$,
    $$values ('claimed'), ('started'), ('exited'), ('finished')$$,
    'the kept-back events come before the job''s finished event, in order');
select results_eq(
    $$select kind from boxcar.job_events where job_id = pg_temp.jid('a') order by id$$,
    $$values ('claimed'), ('started'), ('exited')$$,
    'the finished event is the job row''s, not a row of job_events');
select is((select at from boxcar.job_events where job_id = pg_temp.jid('a') and kind = 'started'),
          '2026-01-01T00:00:00.000003Z'::timestamptz, 'an event keeps the instant the worker saw');
select is((select details from boxcar.job_events where job_id = pg_temp.jid('a') and kind = 'exited'),
          '{"exit_code":3}'::jsonb, 'and its details');
select results_eq(
    $$select kind from boxcar.job_events where job_id = pg_temp.jid('c') order by id$$,
    $$values ('claimed'), ('started'), ('retried')$$, 'a retried job''s events, in order');
select results_eq(
    $$select kind from boxcar.job_events where job_id = pg_temp.jid('d') order by id$$,
    $$values ('claimed'), ('released')$$, 'a row without events writes only the transition''s');
select is((select count(*)::int from boxcar.job_events
            where job_id = pg_temp.jid('b') and kind in ('started', 'exited') and attempt = 1), 2,
          'the lost job''s events of w1''s attempt are written all the same');
select is((select count(*)::int from boxcar.job_events where job_id = pg_temp.jid('b') and kind = 'finished'), 0,
          'but no finished event for it');

-- The same call again (its answer was lost): nothing held, nothing written twice.
select results_eq(
    $$select held from boxcar.report_batch('w1', array[pg_temp.jid('a')], array[1], array['complete'],
        array['failed'], array['{"exit_code":3}']::jsonb[], array[null]::jsonb[],
        array['[{"kind":"started","at":"2026-01-01T00:00:00.000003Z","details":{"sandbox":"none"}},
                {"kind":"exited","at":"2026-01-01T00:00:01.000003Z","details":{"exit_code":3}}]']::jsonb[])$$,
    $$values (false)$$, 'a resent call finds the job already recorded');
select is((select count(*)::int from boxcar.job_events_json(pg_temp.jid('a'))), 4,
          'and writes each event exactly once');

-- Fencing by attempt, per row; 'none' writes only the events.
select results_eq(
    $$select held from boxcar.report_batch('w2', array[pg_temp.jid('b')], array[1], array['complete'],
        array['succeeded'], array[null]::jsonb[], array[null]::jsonb[], array[null]::jsonb[])$$,
    $$values (false)$$, 'a stale attempt cannot complete the job, even by its holder');
select results_eq(
    $$select held from boxcar.report_batch('w2', array[pg_temp.jid('b')], array[2], array['none'],
        array[null], array[null]::jsonb[], array[null]::jsonb[],
        array['[{"kind":"started","at":"2026-01-01T00:00:05Z","details":null}]']::jsonb[])$$,
    $$values (false)$$, 'action none answers false');
select is((select status || ':' || (select count(*) from boxcar.job_events e
                                      where e.job_id = j.id and e.kind = 'started' and e.attempt = 2)
             from boxcar.jobs j where id = pg_temp.jid('b')),
          'running:1', 'and writes the events, leaving the job as it is');

-- A released job started again under the same attempt number: its new
-- events are not taken for a resend.
select boxcar.add_worker_events(pg_temp.jid('d'), 'w1', 1,
    '[{"kind":"started","at":"2026-01-01T00:00:09Z","details":null}]');
select boxcar.add_worker_events(pg_temp.jid('d'), 'w1', 1,
    '[{"kind":"started","at":"2026-01-01T00:00:10Z","details":null}]');
select boxcar.add_worker_events(pg_temp.jid('d'), 'w1', 1,
    '[{"kind":"started","at":"2026-01-01T00:00:09Z","details":null}]');
select is((select count(*)::int from boxcar.job_events where job_id = pg_temp.jid('d') and kind = 'started'), 2,
          'events of one kind and attempt at other instants are all written, a resent one once');

-- The common batch, every row a completion without an artifact, is
-- recorded set-based: the same fencing, events and answers as row by row.
select boxcar.enqueue('rc', '{"command":["e"]}', priority => 4);
select boxcar.enqueue('rc', '{"command":["f"],"webhook":{"url":"http://hooks.test/f"}}', priority => 3);
select boxcar.enqueue('rc', '{"command":["g"]}', priority => 2);
select boxcar.enqueue('rc', '{"command":["h"]}', priority => 1);
select count(*) from boxcar.claim('w3', array['rc'], 4);
insert into ids select spec->'command'->>0, id from boxcar.jobs where queue = 'rc';
-- g is no longer w3's (rescued, claimed by w4); h is at its second attempt.
update boxcar.jobs set status = 'running', worker_id = 'w4', attempts = 2 where id = pg_temp.jid('g');
update boxcar.jobs set attempts = 2 where id = pg_temp.jid('h');
create temp table call2 as
select * from boxcar.report_batch('w3',
    array[pg_temp.jid('h'), pg_temp.jid('g'), pg_temp.jid('f'), pg_temp.jid('e')],
    array[1, 1, 1, 1],
    array['complete', 'complete', 'complete', 'complete'],
    array['succeeded', 'succeeded', 'failed', 'succeeded'],
    array[null, null, '{"exit_code":5}', '{"exit_code":0}']::jsonb[],
    array[null, null, '{"code":"NONZERO_EXIT"}', null]::jsonb[],
    array[null,
          '[{"kind":"started","at":"2026-01-02T00:00:00.000002Z","details":null}]',
          '[{"kind":"started","at":"2026-01-02T00:00:00.000003Z","details":{"sandbox":"none"}},
            {"kind":"exited","at":"2026-01-02T00:00:01.000003Z","details":{"exit_code":5}}]',
          '[{"kind":"started","at":"2026-01-02T00:00:00.000004Z","details":null},
            {"kind":"exited","at":"2026-01-02T00:00:01.000004Z","details":{"exit_code":0}}]']::jsonb[],
    null);
select results_eq($$select ord, held from call2 order by ord$$,
                  $$values (1, false), (2, false), (3, true), (4, true)$$,
                  'completions: a stale attempt and a lost job answer false, by position');
select is((select status || ':' || (result->>'exit_code') || ':' || (error->>'code') || ':'
                  || (finished_at is not null) || ':' || (lease_expires_at is null)
             from boxcar.jobs where id = pg_temp.jid('f')),
          'failed:5:NONZERO_EXIT:true:true', 'completions: the status, result, error and finish are recorded');
select is((select status from boxcar.jobs where id = pg_temp.jid('e')), 'succeeded',
          'completions: every held row is recorded');
select is((select status || ':' || worker_id from boxcar.jobs where id = pg_temp.jid('g')), 'running:w4',
          'completions: the job w3 lost is left to w4');
select is((select status from boxcar.jobs where id = pg_temp.jid('h')), 'running',
          'completions: the stale attempt leaves the job running');
select results_eq(
    $$select e ->> 'kind', e -> 'details', e ->> 'worker_id', (e ->> 'attempt')::int
        from boxcar.job_events_json(pg_temp.jid('f')) e$$,
    $$values ('claimed', 'null'::jsonb, 'w3', 1), ('started', '{"sandbox":"none"}', 'w3', 1),
             ('exited', '{"exit_code":5}', 'w3', 1),
             ('finished', '{"status":"failed","error":{"code":"NONZERO_EXIT"}}', 'w3', 1)$$,
    'completions: the kept-back events come before the finished event, with their details');
select is((select (e ->> 'at')::timestamptz = j.finished_at
             from boxcar.job_events_json(pg_temp.jid('f')) e, boxcar.jobs j
            where j.id = pg_temp.jid('f') and e ->> 'kind' = 'finished'), true,
          'completions: the finished event is at the job''s finished_at');
select is((select (e ->> 'at')::timestamptz from boxcar.job_events_json(pg_temp.jid('e')) e
            where e ->> 'kind' = 'exited'),
          '2026-01-02T00:00:01.000004Z'::timestamptz, 'completions: an event keeps the worker''s instant');
select is((select count(*)::int from boxcar.job_events where job_id in (pg_temp.jid('e'), pg_temp.jid('f'))
             and kind in ('started', 'exited')), 0,
          'completions: a held job''s kept-back events are its row''s, not rows of job_events');
select is((boxcar.job_json(pg_temp.jid('e')) ? 'attempt_events'), false,
          'completions: job_json shows them as events only');
select is((select count(*)::int from boxcar.job_events where job_id = pg_temp.jid('g') and kind = 'started'), 1,
          'completions: the lost job''s events are written all the same');
select is((select count(*)::int from boxcar.job_events
            where job_id in (pg_temp.jid('g'), pg_temp.jid('h')) and kind = 'finished'), 0,
          'completions: no finished event for a row not held');
select is((select string_agg(event_type || ' ' || url || ' ' || (body::jsonb -> 'data' ->> 'status'), ',')
             from boxcar.webhook_deliveries where job_id = pg_temp.jid('f')),
          'job.failed http://hooks.test/f failed', 'completions: the finished job''s webhook is written');

-- The same batch resent (its answer was lost): nothing held, nothing twice.
select results_eq(
    $$select held from boxcar.report_batch('w3', array[pg_temp.jid('e'), pg_temp.jid('f')], array[1, 1],
        array['complete', 'complete'], array['succeeded', 'failed'],
        array['{"exit_code":0}', '{"exit_code":5}']::jsonb[], array[null, null]::jsonb[],
        array['[{"kind":"started","at":"2026-01-02T00:00:00.000004Z","details":null},
                {"kind":"exited","at":"2026-01-02T00:00:01.000004Z","details":{"exit_code":0}}]',
              '[{"kind":"started","at":"2026-01-02T00:00:00.000003Z","details":{"sandbox":"none"}},
                {"kind":"exited","at":"2026-01-02T00:00:01.000003Z","details":{"exit_code":5}}]']::jsonb[])$$,
    $$values (false), (false)$$, 'completions: a resent batch finds the jobs already recorded');
select is((select count(*)::int from boxcar.job_events_json(pg_temp.jid('e')))
          + (select count(*)::int from boxcar.job_events_json(pg_temp.jid('f'))),
          8, 'completions: and writes each event exactly once');

select throws_ok($$select * from boxcar.report_batch('w4', array[pg_temp.jid('g')], array[2],
                     array['complete'], array['done'], array[null]::jsonb[], array[null]::jsonb[],
                     array[null]::jsonb[])$$, '22023', 'status: must be succeeded, failed or cancelled',
                 'completions: an unknown status is refused');
-- A job twice in one batch goes row by row: recorded once, the second row
-- finds it done.
select results_eq(
    $$select ord, held from boxcar.report_batch('w4', array[pg_temp.jid('g'), pg_temp.jid('g')],
        array[2, 2], array['complete', 'complete'], array['succeeded', 'succeeded'],
        array[null, null]::jsonb[], array[null, null]::jsonb[], array[null, null]::jsonb[]) order by ord$$,
    $$values (1, true), (2, false)$$, 'a job twice in a batch is completed once');

select throws_ok($$select * from boxcar.report_batch('w1', array[gen_random_uuid()], array[1, 2],
                     array['complete'], array['succeeded'], array[null]::jsonb[], array[null]::jsonb[],
                     array[null]::jsonb[])$$, '22023', null, 'arrays of different lengths are refused');
select throws_ok($$select * from boxcar.report_batch('w1', array[gen_random_uuid()], array[1],
                     array['finish'], array['succeeded'], array[null]::jsonb[], array[null]::jsonb[],
                     array[null]::jsonb[])$$, '22023', null, 'an unknown action is refused');
select is((select count(*)::int from boxcar.report_batch('w1', array[]::uuid[], array[]::int[],
              array[]::text[], array[]::text[], array[]::jsonb[], array[]::jsonb[], array[]::jsonb[])), 0,
          'an empty batch records nothing');

-- logs: the job's last output chunks go with its result, whatever the path.
select boxcar.enqueue('rl', '{"command":["k"]}', priority => 3);
select boxcar.enqueue('rl', '{"command":["m"]}', priority => 2);
select boxcar.enqueue('rl', '{"command":["n"]}', priority => 1);
select count(*) from boxcar.claim('w5', array['rl'], 3);
insert into ids select spec->'command'->>0, id from boxcar.jobs where queue = 'rl';
insert into boxcar.job_logs (job_id, attempt, seq, stream, data)
values (pg_temp.jid('k'), 1, 1, 1, 'early'::bytea), (pg_temp.jid('k'), 1, 2, 2, 'warn'::bytea);
update boxcar.jobs set worker_id = 'w6' where id = pg_temp.jid('n');
create temp table call3 as
select * from boxcar.report_batch('w5', array[pg_temp.jid('k'), pg_temp.jid('n')], array[1, 1],
    array['complete', 'complete'], array['succeeded', 'succeeded'], array[null, null]::jsonb[],
    array[null, null]::jsonb[], array[null, null]::jsonb[], null,
    array['{"seq": 3, "chunks": [[1, "6869"], [2, "0a"]]}',
          '{"seq": 1, "chunks": [[1, "6c6f7374"]]}']::jsonb[]);
select results_eq($$select ord, held from call3 order by ord$$, $$values (1, true), (2, false)$$,
                  'logs: completions with logs answer as without');
select results_eq(
    $$select seq, stream, data from boxcar.job_logs where job_id = pg_temp.jid('k') order by seq$$,
    $$values (1, 1::smallint, 'early'::bytea), (2, 2::smallint, 'warn'::bytea),
             (3, 1::smallint, 'hi'::bytea), (4, 2::smallint, E'\n'::bytea)$$,
    'logs: the chunks follow those already stored, in order, by stream');
select is((select string_agg(convert_from(data, 'UTF8'), '') from boxcar.job_logs
            where job_id = pg_temp.jid('n') and attempt = 1), 'lost',
          'logs: a job the worker lost keeps its attempt''s output (as append_logs does)');
select lives_ok(
    $$select * from boxcar.report_batch('w5', array[pg_temp.jid('k')], array[1], array['complete'],
        array['succeeded'], array[null]::jsonb[], array[null]::jsonb[], array[null]::jsonb[], null,
        array['{"seq": 3, "chunks": [[1, "6869"], [2, "0a"]]}']::jsonb[])$$,
    'logs: a resent call (its answer was lost) is no error');
select is((select count(*)::int from boxcar.job_logs where job_id = pg_temp.jid('k')), 4,
          'logs: and writes no chunk twice');
select results_eq(
    $$select held from boxcar.report_batch('w5', array[pg_temp.jid('m')], array[1], array['retry'],
        array[null], array[null]::jsonb[], array['{"code":"NONZERO_EXIT"}']::jsonb[],
        array[null]::jsonb[], array[null]::jsonb[], array['{"seq": 1, "chunks": [[2, "6f6f7073"]]}']::jsonb[])$$,
    $$values (true)$$, 'logs: go with a retry too (row by row)');
select is((select convert_from(data, 'UTF8') || ':' || stream from boxcar.job_logs
            where job_id = pg_temp.jid('m') and attempt = 1 and seq = 1), 'oops:2',
          'logs: the retried attempt''s output is stored');
select throws_ok($$select * from boxcar.report_batch('w5', array[pg_temp.jid('m')], array[null::int],
                     array['none'], array[null], array[null]::jsonb[], array[null]::jsonb[],
                     array[null]::jsonb[], null, array['{"seq": 1, "chunks": "x"}']::jsonb[])$$,
                 '22023', null, 'logs: a malformed row (or one without its attempt) is refused');

-- A manual retry clears the row for the next run: the events it held
-- (kept-back ones, then the finished one) become rows of job_events first,
-- in order, so the story stays the same.
create temp table story as select e from boxcar.job_events_json(pg_temp.jid('f')) e;
select boxcar.retry(pg_temp.jid('f'), 'tester');
select results_eq(
    $$select kind from boxcar.job_events where job_id = pg_temp.jid('f') order by id$$,
    $$values ('claimed'), ('started'), ('exited'), ('finished'), ('retry_requested')$$,
    'retry: the row''s events are stored, in order, before the retry''s own');
select results_eq(
    $$select e from boxcar.job_events_json(pg_temp.jid('f')) e limit 4$$,
    $$select e from story$$,
    'retry: and the first run tells the same story as before');

select * from finish();
rollback;
