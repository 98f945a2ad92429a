-- boxcar.queue_chart (sql/57_queue_chart.sql): the dashboard's charts.
-- Buckets are aligned and cover the span up to now; a job counts in the
-- bucket it finished in, by status; the percentiles are over the jobs that
-- ran; another queue's, a cancelled or an unfinished job is not counted.
begin;
select plan(9);
set local client_min_messages = warning;
insert into boxcar.jobs (queue, spec, status, run_at, started_at, finished_at)
select q, '{"command":["true"]}', st, f - w - r, f - r, f
  from (values ('charted', 'succeeded', now() - interval '1 minute', interval '1 s', interval '2 s'),
               ('charted', 'succeeded', now() - interval '1 minute', interval '3 s', interval '4 s'),
               ('charted', 'failed',    now() - interval '1 minute', interval '5 s', interval '6 s'),
               ('charted', 'succeeded', now() - interval '2 hours',  interval '1 s', interval '1 s'),
               ('charted', 'cancelled', now() - interval '1 minute', interval '1 s', interval '1 s'),
               ('other',   'succeeded', now() - interval '1 minute', interval '1 s', interval '1 s'))
       v(q, st, f, w, r);

select is((select count(*)::int from boxcar.queue_chart('charted', 'hour')), 12, 'the hour: 12 buckets');
select is((select count(*)::int from boxcar.queue_chart('charted', 'day')), 24, 'the day: 24 buckets');
select ok((select bool_and(bucket_end - bucket_start = interval '5 minutes'
                           and extract(epoch from bucket_start)::bigint % 300 = 0)
             from boxcar.queue_chart('charted', 'hour')), 'five-minute buckets, aligned');
select ok((select max(bucket_end) > now() and min(bucket_start) <= now() - interval '55 minutes'
             from boxcar.queue_chart('charted', 'hour')), 'the last bucket holds now; the first began an hour ago');
select is((select array[sum(succeeded), sum(failed)]::int[] from boxcar.queue_chart('charted', 'hour')),
          array[2, 1], 'the hour counts its succeeded and failed jobs: not the cancelled, the older or another queue''s');
select is((select array[sum(succeeded), sum(failed)]::int[] from boxcar.queue_chart('charted', 'day')),
          array[3, 1], 'the day counts the older one too');
select is((select array[wait_p50_s, run_p50_s, run_p95_s] from boxcar.queue_chart('charted', 'hour')
            where succeeded + failed > 0),
          array[3, 4, 5.8]::float8[], 'the bucket''s median wait and run, and the run''s p95 (interpolated)');
select ok((select bool_and(wait_p50_s is null and run_p95_s is null) from boxcar.queue_chart('charted', 'hour')
            where succeeded + failed = 0), 'an empty bucket has no percentiles');
select throws_ok($$select * from boxcar.queue_chart('charted', 'week')$$, '22023',
                 'span: must be hour or day, not week', 'another span is refused, naming it');
select * from finish();
rollback;
