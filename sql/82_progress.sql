-- A running job's progress reports (issue 49; docs/job-spec.md
-- "Progress").  The job writes JSON objects, one a line, to the channel
-- its worker gives it (BOXCAR_PROGRESS); the worker checks them, keeps at
-- most one report per job every 500 ms (the latest wins, the last before
-- the job's exit is always kept) and stores each kept one here: a
-- job_events row of kind 'progress' whose id is the report's seq, a NOTIFY
-- on boxcar_job_updates, and, when the spec asks for it with
-- "webhook": {"progress": true} and the job has a webhook URL, a
-- job.progress delivery.

-- The largest report stored, as jsonb's text: the worker refuses lines
-- over 4 KiB; jsonb's text may be a little longer than the line (its
-- spacing), never this much.
create or replace function boxcar.progress_max_bytes() returns integer
language sql immutable as $$ select 16384 $$;

-- Stores one report of job_id's attempt, made by worker_id.  Returns the
-- report's seq (its event's id), or null when the worker no longer holds
-- that attempt (its lease was lost, the job ended or was taken again):
-- a stale worker's report is ignored, as report_batch ignores its result.
-- The NOTIFY payload is {"id","queue","status":"running","progress":seq},
-- compact and without the report itself (any role may LISTEN): followers
-- read it with boxcar.job_progress.
create or replace function boxcar.report_progress(job_id uuid, worker_id text, attempt integer,
                                                  progress jsonb)
returns bigint language plpgsql volatile
-- No sequential scans: the worker's session keeps the plans (see
-- boxcar.report_batch).
set enable_seqscan = off as $$
#variable_conflict use_variable
declare
    j boxcar.jobs;
    seq bigint;
    url text;
    n integer;
begin
    if progress is null or jsonb_typeof(progress) <> 'object' then
        raise exception 'progress: must be a JSON object' using errcode = '22023';
    end if;
    if octet_length(progress::text) > boxcar.progress_max_bytes() then
        raise exception 'progress: at most % bytes', boxcar.progress_max_bytes()
            using errcode = '22023';
    end if;
    select * into j from boxcar.jobs x
     where x.id = job_id and x.worker_id = worker_id and x.status = 'running'
       and x.attempts = attempt;
    if not found then
        return null;
    end if;
    insert into boxcar.job_events (job_id, kind, worker_id, attempt, details)
    values (job_id, 'progress', worker_id, attempt, progress)
    returning id into seq;
    perform pg_notify('boxcar_job_updates',
                      format('{"id":"%s","queue":%s,"status":"running","progress":%s}',
                             j.id, to_json(j.queue)::text, seq));
    if j.spec -> 'webhook' -> 'progress' = 'true'::jsonb then
        url := boxcar.job_webhook_url(j);
    end if;
    if url is not null then
        -- One delivery per report: its run is the report's number among
        -- the job's (the deliveries' key is job, type and run).
        select count(*) into n from boxcar.job_events e
         where e.job_id = j.id and e.kind = 'progress';
        perform boxcar.add_delivery(j.id, 'job.progress', n, url, clock_timestamp(),
                                    jsonb_build_object('job_id', j.id, 'queue', j.queue,
                                                       'status', 'running', 'attempt', attempt,
                                                       'seq', seq, 'progress', progress));
    end if;
    return seq;
end $$;

-- The job's reports after the cursor seq (0: from the first), in order.
create or replace function boxcar.job_progress(job_id uuid, after bigint default 0)
returns table (seq bigint, attempt integer, at timestamptz, progress jsonb)
language sql stable
set enable_seqscan = off as $$
    select e.id, e.attempt, e.at, e.details from boxcar.job_events e
     where e.job_id = job_progress.job_id and e.id > coalesce(job_progress.after, 0)
       and e.kind = 'progress'
     order by e.id
$$;
