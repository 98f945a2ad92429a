-- Enqueueing and its notification.

create or replace function boxcar.enqueue(
    queue           text,
    spec            jsonb,
    priority        integer     default 0,
    run_at          timestamptz default null,
    max_attempts    integer     default 3,
    idempotency_key text        default null,
    webhook_url     text        default null)
returns uuid language plpgsql volatile as $$
#variable_conflict use_column
declare
    new_id uuid;
    existing boxcar.jobs;
    differs text;
begin
    -- "." and ".." are refused as names: queue names end up in paths and
    -- metric labels, where they would mean "here" and "the parent".
    if enqueue.queue is null or enqueue.queue !~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$'
       or enqueue.queue ~ '(^|/)\.\.?(/|$)' or length(enqueue.queue) > 128 then
        raise exception 'queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")'
            using errcode = '22023';
    end if;
    -- infinity would never run (or always jump the queue), and a date
    -- decades away is a unit mistake (milliseconds read as seconds).
    if enqueue.run_at is not null and (not isfinite(enqueue.run_at)
            or enqueue.run_at not between now() - interval '10 years' and now() + interval '10 years') then
        raise exception 'run_at: must be a finite time within 10 years of now'
            using errcode = '22023';
    end if;
    if enqueue.priority is null or enqueue.priority not between -32768 and 32767 then
        raise exception 'priority: must be between -32768 and 32767' using errcode = '22023';
    end if;
    if enqueue.max_attempts is null or enqueue.max_attempts not between 1 and 100 then
        raise exception 'max_attempts: must be between 1 and 100' using errcode = '22023';
    end if;
    if enqueue.webhook_url is not null and (enqueue.webhook_url !~ '^https?://[^[:space:]]+$'
                                            or length(enqueue.webhook_url) > 2048) then
        raise exception 'webhook_url: must be an http(s) URL of at most 2048 characters'
            using errcode = '22023';
    end if;
    -- Checked here, not left to the table's constraint, whose error DETAIL
    -- would print the whole row.
    if enqueue.idempotency_key is not null and length(enqueue.idempotency_key) not between 1 and 256 then
        raise exception 'idempotency_key: must be 1 to 256 characters' using errcode = '22023';
    end if;
    perform boxcar.check_spec(enqueue.spec);

    insert into boxcar.jobs (queue, spec, priority, run_at, max_attempts, idempotency_key, webhook_url)
    values (enqueue.queue, enqueue.spec, enqueue.priority, coalesce(enqueue.run_at, now()),
            enqueue.max_attempts, enqueue.idempotency_key, enqueue.webhook_url)
    on conflict (idempotency_key) where idempotency_key is not null do nothing
    returning id into new_id;
    if new_id is null then
        -- The key exists (possibly just committed by a concurrent enqueue,
        -- which ON CONFLICT waited for): the same request gets that job; a
        -- different one under the same key is a mistake, never silently
        -- answered with a job that does something else.  run_at is not
        -- compared: the default is now() and retries move it.
        select * into existing from boxcar.jobs j where j.idempotency_key = enqueue.idempotency_key;
        -- A session job's stored spec has its artifact filled in
        -- (boxcar.session_job): the request is compared filled as well;
        -- the capped limits it leaves out (boxcar.caps_job) are not
        -- compared, and secrets by name: each sealing of the same value
        -- differs.
        differs := case
            when boxcar.spec_redacted(boxcar.caps_unfill(existing.spec, enqueue.spec))
                 is distinct from boxcar.spec_redacted(
                     boxcar.session_fill_spec(enqueue.spec, boxcar.queue_scope(enqueue.queue))) then 'spec'
            when existing.queue is distinct from enqueue.queue then 'queue'
            when existing.priority is distinct from enqueue.priority then 'priority'
            when existing.max_attempts is distinct from enqueue.max_attempts then 'max_attempts'
            when existing.webhook_url is distinct from enqueue.webhook_url then 'webhook_url'
        end;
        if differs is not null then
            raise exception 'idempotency_key: already used by job % with a different %', existing.id, differs
                using errcode = '23505',
                      hint = 'use a new key, or resend the same request to get that job''s id';
        end if;
        new_id := existing.id;
    end if;
    return new_id;
end $$;

-- One NOTIFY per statement and queue, whatever the number of rows: a bulk
-- insert of 10,000 jobs wakes each worker once, not 10,000 times.
create or replace function boxcar.notify_jobs() returns trigger
language plpgsql as $$
begin
    perform pg_notify('boxcar_jobs', q.queue)
       from (select distinct queue from new_rows
              where status = 'queued' and run_at <= now()) q;
    return null;
end $$;

create or replace trigger jobs_notify_insert
    after insert on boxcar.jobs
    referencing new table as new_rows
    for each statement execute function boxcar.notify_jobs();

-- After an update, only the rows a worker may be waiting for: a job queued
-- and due (retried, rescued, unblocked, moved), or one that finished in a
-- queue with max_running (a place frees up for the next, which may wait on
-- another replica).  Claims, heartbeats and the rest do not call it (the
-- trigger's condition is checked without it).  pg_notify sends a queue's
-- notification once per transaction however many rows repeat it.  This
-- was a statement trigger over a transition table, like the insert's: a
-- third of every claim's cost in the database (0.53 against 0.37 ms).
create or replace function boxcar.notify_job_change() returns trigger
language plpgsql as $$
begin
    if new.status = 'queued'
       or exists (select from boxcar.queue_config c
                   where c.queue = new.queue and c.max_running is not null)
       or exists (select from boxcar.scope_quotas s
                   where s.scope = boxcar.queue_scope(new.queue) and s.max_running is not null) then
        perform pg_notify('boxcar_jobs', new.queue);
    end if;
    return null;
end $$;

do $$
begin
    -- Only when it is there: dropping a trigger locks the table, which a
    -- migration run beside working replicas should not do every time.
    if exists (select from pg_trigger where tgrelid = 'boxcar.jobs'::regclass
                                        and tgname = 'jobs_notify_update') then
        drop trigger jobs_notify_update on boxcar.jobs;
    end if;
end $$;

create or replace trigger jobs_notify_change
    after update on boxcar.jobs
    for each row
    when ((new.status = 'queued' and new.run_at <= now() and not new.blocked)
          or (new.status in ('succeeded', 'failed', 'cancelled')
              and old.status is distinct from new.status))
    execute function boxcar.notify_job_change();
