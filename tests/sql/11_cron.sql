begin;
select plan(30);
set local timezone = 'UTC';

-- Fields: lists, ranges, steps, names, 7 = Sunday.
select is((boxcar.cron_parse('*/15 0-6/2 1,15 jan-mar,DEC mon-fri')).minutes, '{0,15,30,45}', 'minute step');
select is((boxcar.cron_parse('*/15 0-6/2 1,15 jan-mar,DEC mon-fri')).hours, '{0,2,4,6}', 'hour range with step');
select is((boxcar.cron_parse('*/15 0-6/2 1,15 jan-mar,DEC mon-fri')).doms, '{1,15}', 'day-of-month list');
select is((boxcar.cron_parse('*/15 0-6/2 1,15 jan-mar,DEC mon-fri')).months, '{1,2,3,12}', 'month names, any case');
select is((boxcar.cron_parse('*/15 0-6/2 1,15 jan-mar,DEC mon-fri')).dows, '{1,2,3,4,5}', 'weekday names');
select is((boxcar.cron_parse('0 0 * * 7,0')).dows, '{0}', '7 is Sunday, as 0');
select is((boxcar.cron_parse('5/20 * * * *')).minutes, '{5,25,45}', 'N/STEP runs from N to the end');
select is((boxcar.cron_parse('@hourly')).minutes, '{0}', '@hourly');
select is((boxcar.cron_parse('@weekly')).dows, '{0}', '@weekly is Sunday midnight');

-- Refused with a message that names the field.
select throws_like($$select boxcar.cron_parse('* * * *')$$, '%five fields%', 'four fields refused');
select throws_like($$select boxcar.cron_parse('60 * * * *')$$, '%minute field%0 to 59%', 'minute 60 refused');
select throws_like($$select boxcar.cron_parse('* 5-2 * * *')$$, '%hour field%backwards%', 'backwards range refused');
select throws_like($$select boxcar.cron_parse('*/0 * * * *')$$, '%step%', 'step 0 refused');
select throws_like($$select boxcar.cron_parse('* * * foo *')$$, '%month field%', 'unknown name refused');
select throws_like($$select boxcar.cron_parse('*-5 * * * *')$$, '%minute field%', '*-5 refused');
select throws_like($$select boxcar.cron_parse(repeat('1,', 200) || '1 * * * *')$$, '%256%', 'overlong expression refused');

-- Next run.
select is(boxcar.cron_next('*/15 * * * *', 'UTC', '2026-01-01 00:07:00+00'), '2026-01-01 00:15:00+00', 'next quarter hour');
select is(boxcar.cron_next('*/15 * * * *', 'UTC', '2026-01-01 00:15:00+00'), '2026-01-01 00:30:00+00', 'strictly after');
select is(boxcar.cron_next('0 9 * * mon-fri', 'Europe/Paris', '2026-11-21 12:00+00'), '2026-11-23 08:00:00+00',
          'weekdays in the zone: Saturday noon -> Monday 09:00 Paris');
select is(boxcar.cron_next('0 0 29 2 *', 'UTC', '2026-03-01'), '2028-02-29 00:00:00+00', 'next 29 February');
select is(boxcar.cron_next('0 0 30 2 *', 'UTC', '2026-03-01'), null, 'never matches: null');
select is(boxcar.cron_next('0 0 13 * fri', 'UTC', '2026-01-01'), '2026-01-02 00:00:00+00',
          'both day fields restricted: either matches (Friday 2 January)');
select is(boxcar.cron_next('0 0 */10 * fri', 'UTC', '2026-01-01'), '2026-05-01 00:00:00+00',
          'a day field starting with *: both must match (1, 11, 21 or 31, and a Friday)');

-- Daylight saving time (America/New_York: 8 March 2026 02:00 -> 03:00,
-- 1 November 2026 02:00 -> 01:00).
select is(boxcar.cron_next('30 2 * * *', 'America/New_York', '2026-03-08 05:00+00'), '2026-03-08 07:30:00+00',
          'a skipped wall time runs shifted by the jump (03:30 EDT)');
select is(boxcar.cron_next('30 2 * * *', 'America/New_York', '2026-03-08 07:30+00'), '2026-03-09 06:30:00+00',
          'and once: next is the following day');
select is(boxcar.cron_next('30 1 * * *', 'America/New_York', '2026-11-01 04:00+00'), '2026-11-01 05:30:00+00',
          'a repeated wall time runs at its first occurrence (01:30 EDT)');
select is(boxcar.cron_next('30 1 * * *', 'America/New_York', '2026-11-01 05:30+00'), '2026-11-02 06:30:00+00',
          'and not again in the second pass');
select is(boxcar.cron_next('0 * * * *', 'America/New_York', '2026-11-01 05:30+00'), '2026-11-01 06:00:00+00',
          'hour field *: the repeated hour runs again (01:00 EST)');
select is(boxcar.cron_next('*/30 * * * *', 'America/New_York', '2026-11-01 06:00+00'), '2026-11-01 06:30:00+00',
          'hour field *: every 30 minutes in real time through the repeated hour');
select is(boxcar.cron_next('0 12 * * *', 'Europe/Paris', '2026-07-01 00:00+00'), '2026-07-01 10:00:00+00',
          'summer time offset applied');

select * from finish();
rollback;
