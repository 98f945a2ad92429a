-- The one check constraint of boxcar.jobs (migration 0013): each rule
-- still refuses a raw row with check_violation, says which, and names the
-- old constraint; NULL passes where it did; a job's writes still go through.
begin;
select plan(20);
set local client_min_messages = warning;

select is((select count(*)::int from pg_constraint
            where conrelid = 'boxcar.jobs'::regclass and contype = 'c'), 1,
          'jobs has one check constraint');

-- Every rule, by a raw INSERT: errcode, message, and the constraint named
-- in the error (what a client reads from its diagnostics).
create function pg_temp.violation(stmt text) returns text language plpgsql as $$
declare c text; m text;
begin
    execute stmt;
    return 'no error';
exception when check_violation then
    get stacked diagnostics c = constraint_name, m = message_text;
    return c || ': ' || m;
end $$;

select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec) values ('../x', '{"command":["x"]}')$$),
          'jobs_queue_check: jobs.queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")',
          'a queue ../x');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec) values (repeat('q', 129), '{"command":["x"]}')$$),
          'jobs_queue_check: jobs.queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")',
          'a queue of 129 characters');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, status) values ('q', '{"command":["x"]}', 'done')$$),
          'jobs_status_check: jobs.status: must be queued, running, succeeded, failed or cancelled',
          'a status done');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, attempts) values ('q', '{"command":["x"]}', -1)$$),
          'jobs_attempts_check: jobs.attempts: must be 0 or more', 'attempts -1');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, max_attempts) values ('q', '{"command":["x"]}', 0)$$),
          'jobs_max_attempts_check: jobs.max_attempts: must be between 1 and 100', 'max_attempts 0');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, max_attempts) values ('q', '{"command":["x"]}', 101)$$),
          'jobs_max_attempts_check: jobs.max_attempts: must be between 1 and 100', 'max_attempts 101');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, run_at) values ('q', '{"command":["x"]}', '-infinity')$$),
          'jobs_run_at_finite: jobs.run_at: must be finite', 'run_at -infinity');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, idempotency_key) values ('q', '{"command":["x"]}', '')$$),
          'jobs_idempotency_key_check: jobs.idempotency_key: must be 1 to 256 characters', 'an empty idempotency_key');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, idempotency_key) values ('q', '{"command":["x"]}', repeat('k', 257))$$),
          'jobs_idempotency_key_check: jobs.idempotency_key: must be 1 to 256 characters', 'an idempotency_key of 257');
select is(pg_temp.violation($$insert into boxcar.jobs (queue, spec, webhook_url) values ('q', '{"command":["x"]}', 'http://x/' || repeat('u', 2040))$$),
          'jobs_webhook_url_check: jobs.webhook_url: must be at most 2048 characters', 'a webhook_url of 2049');

-- Updates are checked too.
insert into boxcar.jobs (id, queue, spec) values ('00000000-0000-0000-0000-00000000c0de', 'q', '{"command":["x"]}');
select is(pg_temp.violation($$update boxcar.jobs set status = 'paused' where id = '00000000-0000-0000-0000-00000000c0de'$$),
          'jobs_status_check: jobs.status: must be queued, running, succeeded, failed or cancelled',
          'an update to a status paused');
select is(pg_temp.violation($$update boxcar.jobs set queue = '.' where id = '00000000-0000-0000-0000-00000000c0de'$$),
          'jobs_queue_check: jobs.queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")',
          'an update to a queue .');

-- What the rules allow.
select lives_ok($$insert into boxcar.jobs (queue, spec, idempotency_key, webhook_url, max_attempts, attempts)
                  values ('scope/q.1', '{"command":["x"]}', null, null, 100, 0)$$,
                'NULL idempotency_key and webhook_url pass, max_attempts 100, a scoped queue');
select lives_ok($$insert into boxcar.jobs (queue, spec, idempotency_key, webhook_url)
                  values (repeat('q', 128), '{"command":["x"]}', repeat('k', 256), 'http://x/' || repeat('u', 2039))$$,
                'the longest queue, key and webhook_url pass');
select lives_ok($$update boxcar.jobs set status = s from unnest(array['running', 'succeeded', 'failed', 'cancelled', 'queued']) s
                   where id = '00000000-0000-0000-0000-00000000c0de'$$, 'each status passes');
select isnt(boxcar.enqueue('default', '{"command":["x"]}'), null, 'enqueue still inserts');

-- The claim and the report write through it as before.
truncate boxcar.jobs cascade;
select boxcar.enqueue('rowcheck', '{"command":["x"]}');
select is((select count(*)::int from boxcar.claim('w1', array['rowcheck'], 1)), 1, 'a claim updates the row');
select is((select held from boxcar.report_completions('w1', array[(select id from boxcar.jobs)], array[1],
                                                      array['succeeded'], array['{}'::jsonb],
                                                      array[null::jsonb], array[null::jsonb])), true,
          'a report updates it');
select is((select status from boxcar.jobs), 'succeeded', 'the job succeeded');

select * from finish();
rollback;
