-- Webhook outbox: rows written by a trigger whenever a job reaches a final
-- status (complete, retry_or_fail, rescue_expired, cancel: every path), so
-- the event exists if and only if the job's transition commits.

-- plpgsql, not sql: see boxcar.add_event; generic plans: see boxcar.claim.
create or replace function boxcar.job_webhook_url(j boxcar.jobs)
returns text language plpgsql stable
set plan_cache_mode = force_generic_plan as $$
begin
    return coalesce(j.webhook_url, j.spec -> 'webhook' ->> 'url',
                    (select value from boxcar.settings where name = 'default_webhook_url'));
end $$;

-- One delivery of event kind for a job, in the outbox, and the wake-up of
-- the workers that deliver: its body is {"type", "timestamp" (at),
-- "data"}.  (job, kind, run) is its key: a resent one is not doubled.
create or replace function boxcar.add_delivery(job uuid, kind text, run integer, url text,
                                               at timestamptz, data jsonb)
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    insert into boxcar.webhook_deliveries (id, job_id, event_type, run, url, body)
    values ('msg_' || replace(gen_random_uuid()::text, '-', ''), add_delivery.job, add_delivery.kind,
            add_delivery.run, add_delivery.url,
            jsonb_build_object('type', add_delivery.kind,
                               'timestamp', to_char(add_delivery.at at time zone 'UTC',
                                                    'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                               'data', add_delivery.data)::text)
    on conflict (job_id, event_type, run) do nothing;
    perform pg_notify('boxcar_webhooks', '');
end $$;

create or replace function boxcar.write_webhook() returns trigger
language plpgsql as $$
declare
    url text := boxcar.job_webhook_url(new);
begin
    if url is not null then
        perform boxcar.add_delivery(new.id, 'job.' || new.status, new.manual_retries, url,
                                    coalesce(new.finished_at, clock_timestamp()),
                                    jsonb_build_object('job_id', new.id, 'queue', new.queue,
                                                       'status', new.status, 'attempts', new.attempts,
                                                       'error', new.error, 'result', new.result));
    end if;
    return null;
end $$;

create or replace trigger jobs_webhook
    after update of status on boxcar.jobs
    for each row
    when (old.status is distinct from new.status
          and new.status in ('succeeded', 'failed', 'cancelled'))
    execute function boxcar.write_webhook();

create or replace function boxcar.set_default_webhook_url(url text)
returns void language plpgsql volatile as $$
begin
    if url is null then
        delete from boxcar.settings where name = 'default_webhook_url';
    elsif url !~ '^https?://[^[:space:]]+$' or length(url) > 2048 then
        raise exception 'BOXCAR_WEBHOOK_URL: must be an http(s) URL of at most 2048 characters'
            using errcode = '22023';
    else
        insert into boxcar.settings (name, value) values ('default_webhook_url', url)
        on conflict (name) do update set value = excluded.value;
    end if;
end $$;

-- Due deliveries for one worker, leased so that a worker dying mid-delivery
-- loses nothing: once the lease passes, any worker takes the row again.
create or replace function boxcar.claim_deliveries(worker_id text, n integer default 10,
                                                   lease interval default '60 seconds')
returns setof boxcar.webhook_deliveries language plpgsql volatile
-- Generic plans: see boxcar.claim (the same index scan, not planned again
-- at every batch).  No sequential scans, and the update finds its rows by
-- id alone: see boxcar.claim_ids (planned after ANALYZE had seen the outbox
-- nearly empty, both read every row of it at each batch).
set plan_cache_mode = force_generic_plan
set enable_seqscan = off as $$
#variable_conflict use_column
begin
    return query
    with due as (
        select d.id from boxcar.webhook_deliveries d
         where d.status = 'pending' and d.next_attempt_at <= now()
           and (d.lease_expires_at is null or d.lease_expires_at < now())
         order by d.next_attempt_at
         limit claim_deliveries.n
           for update skip locked
    )
    update boxcar.webhook_deliveries d
       set attempts = d.attempts + 1, worker_id = claim_deliveries.worker_id,
           lease_expires_at = now() + claim_deliveries.lease
     where d.id = any (array(select due.id from due))
    returning d.*;
end $$;

-- Records one attempt.  2xx: delivered.  410 Gone: failed, no more tries.
-- Otherwise the next try waits schedule[attempts] (with +-20% jitter, at
-- least Retry-After), or the row fails once the schedule is used up.
-- Only the worker holding the row records a failure or a retry; a 2xx is
-- recorded whoever reports it, even after its lease passed to another
-- worker (whose attempt may then fail) or the row failed meanwhile: the
-- receiver has the event, and calling it failed would be false.
-- Returns the row's new status, or null when the result changed nothing
-- (the worker lost the lease, or the row was already delivered).
create or replace function boxcar.delivery_result(id text, worker_id text, http_status integer,
                                                  error text, retry_after_s double precision,
                                                  schedule interval[])
returns text language plpgsql volatile as $$
#variable_conflict use_column
declare
    d boxcar.webhook_deliveries;
    delay interval;
begin
    select * into d from boxcar.webhook_deliveries x
     where x.id = delivery_result.id
       for update;
    if not found or d.status = 'delivered' then
        return null;
    end if;
    if http_status between 200 and 299 then
        update boxcar.webhook_deliveries x
           set status = 'delivered', delivered_at = clock_timestamp(), last_status = http_status,
               last_error = null, lease_expires_at = null, worker_id = delivery_result.worker_id
         where x.id = d.id;
        return 'delivered';
    end if;
    if d.worker_id is distinct from delivery_result.worker_id or d.status <> 'pending' then
        return null;
    end if;
    if http_status = 410 or d.attempts > coalesce(array_length(schedule, 1), 0) then
        update boxcar.webhook_deliveries x
           set status = 'failed', last_status = http_status, last_error = error,
               lease_expires_at = null
         where x.id = d.id;
        return 'failed';
    end if;
    delay := schedule[d.attempts] * (0.8 + random() * 0.4);
    if retry_after_s is not null and retry_after_s > extract(epoch from delay) then
        delay := make_interval(secs => least(retry_after_s, 86400));
    end if;
    update boxcar.webhook_deliveries x
       set next_attempt_at = now() + delay, last_status = http_status, last_error = error,
           lease_expires_at = null
     where x.id = d.id;
    return 'pending';
end $$;

-- Redrives a failed (or pending) delivery now, with a fresh schedule and
-- the same webhook-id.
create or replace function boxcar.webhook_retry(id text)
returns text language plpgsql volatile as $$
#variable_conflict use_column
declare
    st text;
begin
    update boxcar.webhook_deliveries x
       set status = 'pending', attempts = 0, next_attempt_at = now(), lease_expires_at = null
     where x.id = webhook_retry.id and x.status <> 'delivered'
    returning x.status into st;
    if not found then
        select x.status into st from boxcar.webhook_deliveries x where x.id = webhook_retry.id;
        if not found then
            raise exception 'webhook delivery % not found', webhook_retry.id using errcode = 'P0002';
        end if;
        return st;
    end if;
    perform pg_notify('boxcar_webhooks', '');
    return 'pending';
end $$;

create or replace function boxcar.webhook_list(failed_only boolean default false, lim integer default 100)
returns setof jsonb language sql stable as $$
    select jsonb_build_object('id', d.id, 'job_id', d.job_id, 'type', d.event_type,
                              'status', d.status, 'attempts', d.attempts,
                              'next_attempt_at', d.next_attempt_at, 'last_status', d.last_status,
                              'last_error', d.last_error, 'created_at', d.created_at,
                              'delivered_at', d.delivered_at)
      from boxcar.webhook_deliveries d
     where not failed_only or d.status = 'failed'
     order by d.created_at desc
     limit lim
$$;
