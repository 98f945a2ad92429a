-- Cancelling, pruning, reading jobs, and the worker registry.

-- queued → cancelled at once; running → cancel_requested_at plus a NOTIFY
-- on boxcar_cancel so the owning worker kills the job.  Returns the job's
-- status after the call ('cancelled', 'running' while the kill is pending,
-- or the final status it already had).
create or replace function boxcar.cancel(id uuid)
returns text language plpgsql volatile
-- No sequential scans: an app's pooled session keeps this function's plans,
-- and made while ANALYZE had seen jobs nearly empty they read it whole at
-- every cancel (see boxcar.claim_ids, tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
#variable_conflict use_column
declare
    j boxcar.jobs;
begin
    select * into j from boxcar.jobs x where x.id = cancel.id for update;
    if not found then
        raise exception 'job % not found', cancel.id using errcode = 'P0002';
    end if;
    if j.status = 'queued' then
        update boxcar.jobs x
           set status = 'cancelled', finished_at = clock_timestamp(), cancel_requested_at = now(),
               error = jsonb_build_object('code', 'CANCELLED', 'message', 'cancelled before it ran')
         where x.id = j.id;
        perform boxcar.add_event(j.id, 'cancelled', null, j.attempts, null);
        return 'cancelled';
    elsif j.status = 'running' then
        if j.cancel_requested_at is null then
            update boxcar.jobs x set cancel_requested_at = now() where x.id = j.id;
            perform boxcar.add_event(j.id, 'cancel_requested', j.worker_id, j.attempts, null);
        end if;
        perform pg_notify('boxcar_cancel', j.id::text);
        return 'running';
    end if;
    return j.status;
end $$;

-- Deletes finished jobs (with their events, logs and webhook deliveries)
-- that finished before now() - older_than, the oldest first and at most
-- max_rows of them (null: all).  Returns how many jobs it deleted.  The
-- worker's leader prunes in batches: one statement over every expired
-- job (30,000 a quarter of an hour at 50 jobs/s) held its main loop,
-- claims included, for most of a second.
drop function if exists boxcar.prune(interval);
create or replace function boxcar.prune(older_than interval, max_rows integer default null)
returns integer language plpgsql volatile
-- No sequential scans: see boxcar.claim_ids (tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
declare
    n integer := 0;
    k integer;
begin
    if max_rows < 1 then
        raise exception 'max_rows: must be at least 1 (or null: all)' using errcode = '22023';
    end if;
    -- A job whose webhook is still pending stays until it is delivered or
    -- fails, so pruning never loses an event.  The outer conditions are
    -- checked again on a row changed meanwhile (a retry queues it again).
    -- The jobs are picked first and deleted by id (as claim_ids updates),
    -- at most 10,000 a statement: as a semi join, planned on tables
    -- ANALYZE had seen nearly empty, the delete walked every finished job
    -- and, for each, every webhook delivery (3,000 jobs: 9 million rows
    -- read to prune 10).  offset 0 keeps the pending-webhook test a probe
    -- of the job's own deliveries.
    loop
        delete from boxcar.jobs j
         where j.id = any (array(
                   select o.id from boxcar.jobs o
                    where o.status in ('succeeded', 'failed', 'cancelled')
                      and o.finished_at < now() - older_than
                      and not exists (select 1 from boxcar.webhook_deliveries d
                                       where d.job_id = o.id and d.status = 'pending'
                                      offset 0)
                    order by o.finished_at
                    limit least(max_rows - n, 10000)))
           -- The recheck, written so that it does not imply jobs_finished's
           -- predicate: the ids pick the rows through the primary key (a
           -- scan of jobs_finished filtering on the ids read every old job).
           and j.status not in ('queued', 'running')
           and j.finished_at < now() - older_than;
        get diagnostics k = row_count;
        n := n + k;
        -- (least() skips a null; n >= null is not true: no max_rows, all.)
        exit when k = 0 or n >= max_rows;
    end loop;
    return n;
end $$;

-- The job as one JSON document (what `boxcar status` prints), with
-- "depends_on" (its dependencies' ids) when it has any.  A queued
-- job whose scope is at a quota says so in "waiting" (sql/39_caps_quotas.sql).
-- Secrets by name only (boxcar.spec_redacted): sealed values are harmless
-- but mean nothing to a reader.  attempt_events are events
-- (boxcar.job_events_json), not a field.
create or replace function boxcar.job_json(id uuid)
returns jsonb language sql stable as $$
    select (to_jsonb(j) - 'has_dependents' - 'attempt_events')
           || coalesce((select jsonb_build_object('depends_on', array_agg(x.depends_on order by x.depends_on))
                          from boxcar.job_dependencies x where x.job_id = j.id having count(*) > 0), '{}')
           || case when j.spec ? 'secrets' then jsonb_build_object('spec', boxcar.spec_redacted(j.spec))
                   else '{}' end
           || case when w.reason is not null then jsonb_build_object('waiting', w.reason) else '{}' end
           -- The latest progress report (sql/82_progress.sql), once there is one.
           || coalesce((select jsonb_build_object('progress', e.details) from boxcar.job_events e
                         where e.job_id = j.id and e.kind = 'progress'
                         order by e.id desc limit 1), '{}')
      from boxcar.jobs j
      left join lateral (select boxcar.scope_wait_reason(boxcar.queue_scope(j.queue)) as reason
                          where j.status = 'queued') w on w.reason is not null
     where j.id = job_json.id
$$;

-- The events a finished job's row holds instead of rows of job_events
-- (issue 49: fewer inserts, index entries and foreign-key checks per
-- job): the events the worker kept back for its last attempt
-- (jobs.attempt_events, written with the result by report_completions),
-- then its 'finished' event: the final status and error, finished_at, and
-- the worker and attempt that ended it.  No 'finished' for a job that
-- never ended an attempt (cancelled while queued, a dependency's failure:
-- no worker_id; its own event tells), nor for a run that already has a
-- stored one (written before migration 0022).  boxcar.retry stores them
-- all before it clears the row for the next run; job_events_json shows
-- them after the stored ones, as nothing of a run happens after its end.
create or replace function boxcar.row_events(j boxcar.jobs)
returns table (at timestamptz, kind text, worker_id text, attempt integer, details jsonb)
language sql stable as $$
    select * from (
        select (e.v ->> 'at')::timestamptz, e.v ->> 'kind', j.worker_id, j.attempts, e.v -> 'details'
          from jsonb_array_elements(case when j.status in ('succeeded', 'failed', 'cancelled')
                                         then j.attempt_events end) with ordinality as e(v, n)
         order by e.n) k
    union all
    select j.finished_at, 'finished', j.worker_id, j.attempts,
           jsonb_build_object('status', j.status, 'error', j.error)
     where j.status in ('succeeded', 'failed', 'cancelled') and j.worker_id is not null
       and not exists (select from boxcar.job_events e
                        where e.job_id = j.id and e.kind = 'finished'
                          and e.id > coalesce((select max(r.id) from boxcar.job_events r
                                                where r.job_id = j.id
                                                  and r.kind = 'retry_requested'), 0))
$$;

create or replace function boxcar.job_events_json(id uuid)
returns setof jsonb language sql stable as $$
    select x.ev
      from (select e.id, 0::bigint as n,
                   jsonb_build_object('at', e.at, 'kind', e.kind, 'worker_id', e.worker_id,
                                      'attempt', e.attempt, 'details', e.details) as ev
              from boxcar.job_events e where e.job_id = job_events_json.id
            union all
            select null, f.n,
                   jsonb_build_object('at', f.at, 'kind', f.kind, 'worker_id', f.worker_id,
                                      'attempt', f.attempt, 'details', f.details)
              from boxcar.jobs j
                   cross join lateral boxcar.row_events(j) with ordinality as f(at, kind, worker_id, attempt, details, n)
             where j.id = job_events_json.id) x
     order by x.id nulls last, x.n
$$;

-- Ids of running jobs whose cancellation was requested, among the given ones
-- (a worker that missed the NOTIFY while reconnecting catches up with it).
create or replace function boxcar.cancel_requested(ids uuid[])
returns setof uuid language sql stable as $$
    select id from boxcar.jobs
     where id = any (ids) and status = 'running' and cancel_requested_at is not null
$$;

drop function if exists boxcar.register_worker(text, text, integer, text[], integer, text);
drop function if exists boxcar.register_worker(text, text, integer, text[], integer, text,
                                               double precision);
-- A new instance under a known name is a new process: its start time is
-- now, and a drain asked of the old process does not carry over.
create or replace function boxcar.register_worker(id text, host text, pid integer, queues text[],
                                                  concurrency integer, version text,
                                                  lease_s double precision default 30,
                                                  instance text default null)
returns void language sql volatile as $$
    insert into boxcar.workers as w (id, host, pid, queues, concurrency, version, lease_s, instance)
    values (id, host, pid, queues, concurrency, version, lease_s, instance)
    on conflict (id) do update
       set host = excluded.host, pid = excluded.pid, queues = excluded.queues, lease_s = excluded.lease_s,
           concurrency = excluded.concurrency, version = excluded.version, instance = excluded.instance,
           started_at = case when w.state = 'stopped' or w.instance is distinct from excluded.instance
                             then now() else w.started_at end,
           heartbeat_at = now(),
           state = case when w.state = 'draining' and w.instance is not distinct from excluded.instance
                        then 'draining' else 'running' end,
           running = 0,
           drain_requested_at = case when w.state = 'stopped' or w.instance is distinct from excluded.instance
                                     then null else w.drain_requested_at end
$$;

create or replace function boxcar.set_worker_state(id text, state text)
returns void language sql volatile as $$
    update boxcar.workers w set state = set_worker_state.state, heartbeat_at = now()
     where w.id = set_worker_state.id
$$;
