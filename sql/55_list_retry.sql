-- Finding jobs (a page at a time), re-running a finished one by hand, and
-- the per-queue overview `boxcar queues` and the dashboard show.

-- A failed or cancelled job goes back to the queue with a fresh attempt
-- budget (attempts = 0), due now, its previous error and result cleared
-- (they stay in the 'retry_requested' event).  requested_by names who
-- asked ("alice@host", "ui:admin") for the audit trail.  Anything else
-- is an error: a queued or running job is already going to run, and a
-- succeeded one is not re-run (enqueue it again instead).  The job's
-- webhook event is sent again when it finishes (a new delivery per run).
-- A job on an artifact storage waits behind that storage's active jobs.
-- A job with dependencies waits for them again (one that failed is
-- retried first); the jobs cancelled because this one failed come back
-- (boxcar.dependencies_revive).
-- The new run's attempts count from 1 again, so the previous run's live
-- log (job_logs, keyed by attempt) moves out of their way, below zero:
-- attempt - 1000 * (the retries before this one + 1).  It is kept, but a
-- reader starting from attempt 0 (boxcar logs, the dashboard) shows only
-- the current run, as the job's result does.
-- Returns the job as boxcar.job_json does.
create or replace function boxcar.retry(id uuid, requested_by text)
returns jsonb language plpgsql volatile
-- No sequential scans: see boxcar.claim_ids (tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
#variable_conflict use_column
declare
    j boxcar.jobs;
    wait boolean := false;
    dep boxcar.jobs;
begin
    if requested_by is null or length(btrim(requested_by)) = 0 or length(requested_by) > 200 then
        raise exception 'requested_by: name who asks for the retry (1 to 200 characters)'
            using errcode = '22023';
    end if;
    select * into j from boxcar.jobs x where x.id = retry.id for update;
    if not found then
        raise exception 'job % not found', retry.id using errcode = 'P0002';
    end if;
    if j.status not in ('failed', 'cancelled') then
        raise exception 'job % is %: only a failed or cancelled job can be retried', j.id, j.status
            using errcode = '55000';
    end if;
    -- A job with dependencies runs after them (sql/36_dependencies.sql):
    -- one that failed or was cancelled is retried first (which brings
    -- this one back, if it was cancelled because of it).
    dep := boxcar.dependency_failed(j.id);
    if dep.id is not null then
        raise exception 'job % depends on job %, which %: retry that one first', j.id, dep.id,
                        case dep.status when 'failed' then 'failed' else 'was cancelled' end
            using errcode = '55000';
    end if;
    if boxcar.dependencies_pending(j.id) then
        wait := true;
    elsif j.artifact_storage is not null then
        perform boxcar.lock_artifact_storage(j.artifact_storage);
        wait := exists (select 1 from boxcar.jobs o
                         where o.artifact_storage = j.artifact_storage
                           and (o.status = 'running'
                                or (o.status = 'queued'
                                    and (not o.blocked or not boxcar.dependencies_pending(o.id)))));
    end if;
    -- The queue's caps as they are now (sql/39_caps_quotas.sql): a job
    -- over a cap lowered since is refused, not run again.
    j.spec := boxcar.apply_queue_caps(j.queue, j.spec);
    -- The run's last events were its row's (boxcar.row_events), which the
    -- update below clears: stored now, in order, before the retry's own.
    insert into boxcar.job_events (job_id, at, kind, worker_id, attempt, details)
    select j.id, f.at, f.kind, f.worker_id, f.attempt, f.details
      from boxcar.row_events(j) with ordinality as f order by f.ordinality;
    update boxcar.jobs x
       set status = 'queued', attempts = 0, run_at = now(), blocked = wait, spec = j.spec,
           worker_id = null, worker_instance = null, lease_expires_at = null,
           cancel_requested_at = null, result = null, error = null,
           started_at = null, finished_at = null, manual_retries = x.manual_retries + 1,
           attempt_events = null
     where x.id = j.id;
    update boxcar.job_logs l set attempt = l.attempt - 1000 * (j.manual_retries + 1)
     where l.job_id = j.id and l.attempt > 0;
    perform boxcar.add_event(j.id, 'retry_requested', null, j.attempts,
                             jsonb_build_object('requested_by', requested_by,
                                                'previous_status', j.status,
                                                'previous_error', j.error));
    if j.has_dependents then
        perform boxcar.dependencies_revive(j.id, requested_by);
    end if;
    return boxcar.job_json(j.id);
end $$;

-- One line of a job list: what a table shows, not the spec or the result.
create or replace function boxcar.job_summary(j boxcar.jobs)
returns jsonb language sql stable as $$
    select jsonb_build_object('id', j.id, 'queue', j.queue, 'status', j.status,
                              'priority', j.priority, 'attempts', j.attempts,
                              'max_attempts', j.max_attempts, 'manual_retries', j.manual_retries,
                              'run_at', j.run_at, 'created_at', j.created_at,
                              'started_at', j.started_at, 'finished_at', j.finished_at,
                              'worker_id', j.worker_id, 'error', j.error)
$$;

-- The position of a job in the list order, as an opaque-looking but
-- exact text ("2026-11-23T14:00:00.123456Z,<uuid>").
create or replace function boxcar.job_cursor(j boxcar.jobs)
returns text language sql stable as $$
    select to_char(j.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || ',' || j.id
$$;

-- Jobs newest first (created_at desc, id desc), optionally of one queue,
-- one status, created at or after since; after is the cursor of the last
-- row of the previous page (null for the first page).  Each filter shape
-- is its own statement so each walks its own index (jobs_list,
-- jobs_list_queue, jobs_list_status_but_succeeded) backwards and stops
-- after lim rows.  Succeeded jobs have no index by status (migration 0022:
-- they are most of the table): their list walks jobs_list and skips the
-- others.
create or replace function boxcar.jobs_list(queue text default null, status text default null,
                                            since timestamptz default null, lim integer default 50,
                                            after text default null)
returns table (job jsonb, cursor text) language plpgsql stable
-- No sequential scans: each filter shape has its ordered index
-- (tests/sql/13_jobs_list_plan.sql), and a pooled session keeps the plans
-- (see boxcar.claim_ids, tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
declare
    c_at timestamptz := 'infinity';
    c_id uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff';
    lo timestamptz := coalesce(since, '-infinity');
begin
    if lim is null or lim < 1 or lim > 1000 then
        raise exception 'limit: must be between 1 and 1000' using errcode = '22023';
    end if;
    if status is not null and status not in ('queued', 'running', 'succeeded', 'failed', 'cancelled') then
        raise exception 'status: % is not one of queued, running, succeeded, failed, cancelled', status
            using errcode = '22023';
    end if;
    if after is not null then
        begin
            c_at := split_part(after, ',', 1)::timestamptz;
            c_id := split_part(after, ',', 2)::uuid;
        exception when others then
            raise exception 'after: % is not a cursor printed by a previous page', after
                using errcode = '22023';
        end;
    end if;
    if jobs_list.queue is not null then
        return query select boxcar.job_summary(j), boxcar.job_cursor(j) from boxcar.jobs j
         where j.queue = jobs_list.queue and (jobs_list.status is null or j.status = jobs_list.status)
           and j.created_at >= lo and (j.created_at, j.id) < (c_at, c_id)
         order by j.created_at desc, j.id desc limit lim;
    elsif jobs_list.status <> 'succeeded' then
        -- Written out, so that a generic plan may use the partial index.
        return query select boxcar.job_summary(j), boxcar.job_cursor(j) from boxcar.jobs j
         where j.status <> 'succeeded' and j.status = jobs_list.status
           and j.created_at >= lo and (j.created_at, j.id) < (c_at, c_id)
         order by j.created_at desc, j.id desc limit lim;
    elsif jobs_list.status is not null then
        return query select boxcar.job_summary(j), boxcar.job_cursor(j) from boxcar.jobs j
         where j.status = jobs_list.status
           and j.created_at >= lo and (j.created_at, j.id) < (c_at, c_id)
         order by j.created_at desc, j.id desc limit lim;
    else
        return query select boxcar.job_summary(j), boxcar.job_cursor(j) from boxcar.jobs j
         where j.created_at >= lo and (j.created_at, j.id) < (c_at, c_id)
         order by j.created_at desc, j.id desc limit lim;
    end if;
end $$;

-- boxcar.queue_stats with the last hour's latencies: wait_avg_s from due
-- (run_at) to started, run_avg_s from started to finished, over the jobs
-- that finished in the last hour (null when none did).
create or replace function boxcar.queue_overview()
returns table (queue text, queued bigint, scheduled bigint, running bigint,
               oldest_queued_age_s float8, succeeded_last_hour bigint, failed_last_hour bigint,
               wait_avg_s float8, run_avg_s float8)
language sql stable as $$
    with recent as (
        select j.queue,
               avg(extract(epoch from j.started_at - j.run_at))::float8 as wait_avg_s,
               avg(extract(epoch from j.finished_at - j.started_at))::float8 as run_avg_s
          from boxcar.jobs j
         where j.status in ('succeeded', 'failed', 'cancelled')
           and j.finished_at > now() - interval '1 hour' and j.started_at is not null
         group by j.queue)
    select s.queue, s.queued, s.scheduled, s.running, s.oldest_queued_age_s,
           s.succeeded_last_hour, s.failed_last_hour, r.wait_avg_s, r.run_avg_s
      from boxcar.queue_stats s left join recent r on r.queue = s.queue
     order by s.queue
$$;
