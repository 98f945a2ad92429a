-- Views for dashboards and autoscalers (KEDA's postgresql scaler can point
-- at active_queue_stats: e.g. `select queued + running from
-- boxcar.active_queue_stats where queue = 'default'`).

-- The queue_stats columns over queued and running jobs only, for what
-- asks often: every replica's queue gauges (/metrics, each poll interval)
-- and an autoscaler (deploy/kubernetes/keda-scaledobject.yaml).  queue_stats groups
-- the whole table, finished jobs included (a week of them by default),
-- and a replica's main loop, its claims included, waited for that scan.
-- A queue with nothing queued or running has no row.
create or replace view boxcar.active_queue_stats as
select queue,
       count(*) filter (where status = 'queued' and run_at <= now())              as queued,
       count(*) filter (where status = 'queued' and run_at > now())               as scheduled,
       count(*) filter (where status = 'running')                                 as running,
       coalesce(extract(epoch from now() - min(run_at)
                filter (where status = 'queued' and run_at <= now())), 0)::float8 as oldest_queued_age_s
  from boxcar.jobs
 where status in ('queued', 'running')
 group by queue;

-- Every queue with a job in the table, and the last hour's outcomes.
create or replace view boxcar.queue_stats as
select f.queue, coalesce(a.queued, 0) as queued, coalesce(a.scheduled, 0) as scheduled,
       coalesce(a.running, 0) as running, coalesce(a.oldest_queued_age_s, 0) as oldest_queued_age_s,
       f.succeeded_last_hour, f.failed_last_hour
  from (select queue,
               count(*) filter (where status = 'succeeded' and finished_at > now() - interval '1 hour')
                   as succeeded_last_hour,
               count(*) filter (where status = 'failed' and finished_at > now() - interval '1 hour')
                   as failed_last_hour
          from boxcar.jobs
         group by queue) f
  left join boxcar.active_queue_stats a on a.queue = f.queue;

-- A worker that missed three heartbeats (each lease/3) is reported 'gone'.
create or replace view boxcar.worker_status as
select id, host, pid, queues, concurrency, version, started_at, heartbeat_at,
       case when state <> 'stopped'
                 and heartbeat_at < now() - make_interval(secs => greatest(lease_s, 1)) then 'gone'
            else state end as state,
       running, drain_requested_at,
       exists (select 1 from boxcar.leaders l where l.worker_id = w.id and l.expires_at > now())
           as is_leader
  from boxcar.workers w;
