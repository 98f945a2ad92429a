begin;
select plan(22);
set local timezone = 'UTC';

select is(boxcar.schedule_add('every5', '*/5 * * * *', 'jobs/x', '{"command":["true"]}') ->> 'queue', 'jobs/x',
          'schedule_add returns the schedule');
select ok((select next_run_at > now() and next_run_at <= now() + interval '5 minutes'
             from boxcar.schedules where name = 'every5'), 'next_run_at is the next matching time');
select throws_like($$select boxcar.schedule_add('every5', '@daily', 'q', '{"command":["true"]}')$$,
                   '%exists already%', 'a second add of a name is refused');
select is(boxcar.schedule_add('every5', '@daily', 'q', '{"command":["true"]}', replace => true) ->> 'cron', '@daily',
          'replace changes it');
select throws_like($$select boxcar.schedule_add('bad', '* * *', 'q', '{"command":["true"]}')$$,
                   '%five fields%', 'a bad cron expression is refused');
select throws_like($$select boxcar.schedule_add('bad', '* * * * *', 'q', '{"command":["true"]}', 'Nowhere/City')$$,
                   '%time_zone%', 'an unknown time zone is refused');
select throws_like($$select boxcar.schedule_add('bad', '* * * * *', 'q', '{"command":["true"]}', 'UTC+2')$$,
                   '%time_zone%', 'a POSIX offset is refused');
select throws_like($$select boxcar.schedule_add('bad', '* * * * *', 'q', '{"commandx":["true"]}')$$,
                   '%commandx%', 'the spec goes through the spec validator');
select throws_like($$select boxcar.schedule_add('bad', '* * * * *', '../q', '{"command":["true"]}')$$,
                   '%queue%', 'a bad queue is refused');
select throws_like($$select boxcar.schedule_add('bad name', '* * * * *', 'q', '{"command":["true"]}')$$,
                   '%name%', 'a bad name is refused');
select throws_like($$select boxcar.schedule_add('bad', '0 0 30 2 *', 'q', '{"command":["true"]}')$$,
                   '%never matches%', 'a schedule that never runs is refused');
select is((select count(*)::int from boxcar.schedule_ls()), 1, 'schedule_ls lists them');

-- The tick: a due schedule runs once, keyed on its scheduled time.
select boxcar.schedule_add('m', '* * * * *', 'q', '{"command":["echo","m"]}');
update boxcar.schedules set next_run_at = '2026-01-01 00:00:00+00' where name = 'm';
select is(boxcar.schedule_tick(), 1, 'the tick enqueues the due run');
select is((select idempotency_key from boxcar.jobs where queue = 'q'), 'schedule:m:2026-01-01T00:00:00Z',
          'keyed on the schedule and the scheduled time');
select ok((select next_run_at > now() from boxcar.schedules where name = 'm'),
          'missed intervals are not made up: the next run is after now');
select is(boxcar.schedule_tick(), 0, 'a second tick enqueues nothing');
select is((select last_run_at from boxcar.schedules where name = 'm'), '2026-01-01 00:00:00+00'::timestamptz,
          'last_run_at is the scheduled time');
-- Moved back to the same time (as a second leader holding an old view
-- would): the key stops a second job.
update boxcar.schedules set next_run_at = '2026-01-01 00:00:00+00' where name = 'm';
select boxcar.schedule_tick();
select is((select count(*)::int from boxcar.jobs where queue = 'q'), 1, 'the idempotency key keeps it to one job');

-- Pause and resume.
select is(boxcar.schedule_pause('m'), true, 'schedule_pause');
update boxcar.schedules set next_run_at = now() - interval '1 hour' where name = 'm';
select is(boxcar.schedule_tick(), 0, 'a paused schedule enqueues nothing');
select is(boxcar.schedule_resume('m'), true, 'schedule_resume');
select is(boxcar.schedule_rm('m') and not boxcar.schedule_rm('m') and not boxcar.schedule_pause('m'), true,
          'schedule_rm removes once; the others answer false for a missing name');

select * from finish();
rollback;
