begin;
select plan(20);

-- Progress reports (sql/82_progress.sql): only the holder of the job's
-- attempt may report; each report is an event row, read back in order by
-- job_progress, the latest in job_json; a NOTIFY per report; a
-- job.progress delivery when the spec asks for it.
create temp table j as select boxcar.enqueue('p', '{"command":["x"]}') as id;
select is((select count(*)::int from boxcar.claim('w1', '{p}', 1)), 1, 'the job is claimed');

create temp table s as select boxcar.report_progress((select id from j), 'w1', 1, '{"pct": 10}') as seq;
select is((select seq from s), (select max(id) from boxcar.job_events where kind = 'progress'),
          'a report returns its seq, its event''s id');
select is(boxcar.report_progress((select id from j), 'w2', 1, '{"pct": 99}'), null,
          'another worker''s report is ignored');
select is(boxcar.report_progress((select id from j), 'w1', 2, '{"pct": 99}'), null,
          'so is one of another attempt');
select throws_ok(format($$select boxcar.report_progress(%L, 'w1', 1, '[1, 2]')$$, (select id from j)),
                 '22023', 'progress: must be a JSON object', 'a report that is not an object is refused');
select throws_ok(format($$select boxcar.report_progress(%L, 'w1', 1, null)$$, (select id from j)),
                 '22023', 'progress: must be a JSON object', 'so is null');
select throws_ok(format($$select boxcar.report_progress(%L, 'w1', 1, jsonb_build_object('x', repeat('a', 20000)))$$,
                        (select id from j)),
                 '22023', 'progress: at most 16384 bytes', 'and one over 16 KiB');
select isnt(boxcar.report_progress((select id from j), 'w1', 1, '{"pct": 50, "step": "b"}'), null,
            'a second report');

select results_eq(format('select attempt, progress from boxcar.job_progress(%L)', (select id from j)),
                  $$values (1, '{"pct": 10}'::jsonb), (1, '{"pct": 50, "step": "b"}'::jsonb)$$,
                  'job_progress lists the stored reports in order, with their attempt');
select is((select count(*)::int from boxcar.job_progress((select id from j),
                                                         (select min(seq) from boxcar.job_progress((select id from j))))),
          1, 'the cursor skips what was read');
select is((select count(*)::int from boxcar.job_events where job_id = (select id from j) and kind = 'progress'), 2,
          'the refused and ignored reports left no row');
select is(boxcar.job_json((select id from j)) -> 'progress', '{"pct": 50, "step": "b"}'::jsonb,
          'job_json shows the latest report');
create temp table fresh as select boxcar.enqueue('p', '{"command":["y"]}') as id;
select is(boxcar.job_json((select id from fresh)) ? 'progress', false,
          'and no "progress" before the first');
select is((select count(*)::int from boxcar.webhook_deliveries), 0,
          'no delivery for a job whose spec did not ask for one');

-- A finished job takes no more reports.
select boxcar.complete((select id from j), 'w1', 'succeeded', null, null, 1);
select is(boxcar.report_progress((select id from j), 'w1', 1, '{"late": true}'), null,
          'a report after the job''s end is ignored');

-- job.progress webhooks: webhook.progress in the spec, the URL from
-- enqueue's webhook_url.
create temp table k as
    select boxcar.enqueue('q', '{"command":["x"], "webhook": {"progress": true}}', 0, null, 3, null,
                          'https://app.example/h') as id;
select is((select count(*)::int from boxcar.claim('w1', '{q}', 1)), 1, 'a job with webhook.progress is claimed');
select boxcar.report_progress((select id from k), 'w1', 1, '{"n": 1}');
select boxcar.report_progress((select id from k), 'w1', 1, '{"n": 2}');
select results_eq($$select event_type, run, url, (body::jsonb -> 'data' -> 'progress'), body::jsonb ->> 'type'
                      from boxcar.webhook_deliveries order by run$$,
                  $$values ('job.progress', 1, 'https://app.example/h', '{"n": 1}'::jsonb, 'job.progress'),
                           ('job.progress', 2, 'https://app.example/h', '{"n": 2}'::jsonb, 'job.progress')$$,
                  'each report is a job.progress delivery of its own, carrying the report');
select is((select count(distinct id)::int from boxcar.webhook_deliveries), 2, 'each with its own webhook-id');
select boxcar.complete((select id from k), 'w1', 'succeeded', null, null, 1);
select is((select count(*)::int from boxcar.webhook_deliveries where event_type = 'job.succeeded'), 1,
          'the final delivery still comes, apart (job.succeeded)');

-- The spec validator takes webhook.progress (tests/data/bad_specs.tsv has the refusals).
select is(boxcar.spec_error('{"command":["x"], "webhook": {"url": "https://a.example/h", "progress": false}}'), null,
          'webhook with url and progress is a valid spec');

select * from finish();
rollback;
