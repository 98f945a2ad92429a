-- A queue's recent history for the dashboard's charts (`boxcar ui`,
-- worker/http/ui_chart.c): the jobs that finished, succeeded or failed, in
-- each bucket of the last hour (12 of 5 minutes) or the last day (24 of an
-- hour), and the median and 95th percentile of their wait (due, run_at, to
-- started) and run (started to finished) times, null when no job of the
-- bucket ran.  Buckets are aligned to their width (UTC) and the last one
-- holds now(), so a chart's bars keep their place between reloads.
-- Cancelled jobs are not counted: a chart of work done and failed.
create or replace function boxcar.queue_chart(queue text, span text)
returns table (bucket_start timestamptz, bucket_end timestamptz, succeeded bigint, failed bigint,
               wait_p50_s float8, wait_p95_s float8, run_p50_s float8, run_p95_s float8)
language plpgsql stable as $$
#variable_conflict use_column
declare
    width interval;
    n integer;
    last_end timestamptz;
    origin constant timestamptz := '2000-01-01 00:00:00+00';
begin
    if span = 'hour' then
        width := interval '5 minutes';
        n := 12;
    elsif span = 'day' then
        width := interval '1 hour';
        n := 24;
    else
        raise exception 'span: must be hour or day, not %', coalesce(span, 'null')
            using errcode = '22023';
    end if;
    last_end := date_bin(width, now(), origin) + width;
    return query
    with b as (
        select last_end - width * (n - g) as lo, last_end - width * (n - g - 1) as hi
          from generate_series(0, n - 1) g
    ), j as (
        select date_bin(width, x.finished_at, origin) as lo, x.status,
               extract(epoch from x.started_at - x.run_at)::float8 as w,
               extract(epoch from x.finished_at - x.started_at)::float8 as r
          from boxcar.jobs x
         where x.queue = queue_chart.queue and x.status in ('succeeded', 'failed')
           and x.finished_at >= last_end - width * n and x.finished_at < last_end
    )
    select b.lo, b.hi,
           count(j.status) filter (where j.status = 'succeeded'),
           count(j.status) filter (where j.status = 'failed'),
           percentile_cont(0.5) within group (order by j.w),
           percentile_cont(0.95) within group (order by j.w),
           percentile_cont(0.5) within group (order by j.r),
           percentile_cont(0.95) within group (order by j.r)
      from b left join j on j.lo = b.lo
     group by b.lo, b.hi
     order by b.lo;
end $$;
