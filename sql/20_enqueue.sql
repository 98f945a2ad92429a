-- Enqueueing and its notification.

-- The checks of a job's arguments but its spec (boxcar.check_spec, after
-- these) that enqueue and enqueue_many share: the first problem as a
-- message, or null.  Every one is SQLSTATE 22023 where raised.
create or replace function boxcar.enqueue_error(queue text, priority integer,
                                                run_at timestamptz, max_attempts integer,
                                                idempotency_key text, webhook_url text,
                                                depends_on uuid[])
returns text language plpgsql stable as $$
begin
    -- "." and ".." are refused as names: queue names end up in paths and
    -- metric labels, where they would mean "here" and "the parent".
    if queue is null or queue !~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$'
       or queue ~ '(^|/)\.\.?(/|$)' or length(queue) > 128 then
        return 'queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")';
    end if;
    -- infinity would never run (or always jump the queue), and a date
    -- decades away is a unit mistake (milliseconds read as seconds).
    if run_at is not null and (not isfinite(run_at)
            or run_at not between now() - interval '10 years' and now() + interval '10 years') then
        return 'run_at: must be a finite time within 10 years of now';
    end if;
    if priority is null or priority not between -32768 and 32767 then
        return 'priority: must be between -32768 and 32767';
    end if;
    if max_attempts is null or max_attempts not between 1 and 100 then
        return 'max_attempts: must be between 1 and 100';
    end if;
    if webhook_url is not null and (webhook_url !~ '^https?://[^[:space:]]+$'
                                    or length(webhook_url) > 2048) then
        return 'webhook_url: must be an http(s) URL of at most 2048 characters';
    end if;
    -- Checked here, not left to the table's constraint, whose error DETAIL
    -- would print the whole row.
    if idempotency_key is not null and length(idempotency_key) not between 1 and 256 then
        return 'idempotency_key: must be 1 to 256 characters';
    end if;
    if cardinality(depends_on) > 1000 then
        return 'depends_on: at most 1000 jobs';
    end if;
    if array_position(depends_on, null) is not null then
        return 'depends_on: a job id may not be null';
    end if;
    return null;
end $$;

-- What an enqueue under an existing idempotency key asks differently
-- from the job that holds the key (null: the same request), for enqueue
-- and enqueue_many alike.  run_at is not compared: the default is now()
-- and retries move it.  A session job's stored spec has its artifact
-- filled in (boxcar.session_job): the request is compared filled as well;
-- the capped limits it leaves out (boxcar.caps_job) are not compared, and
-- secrets by name: each sealing of the same value differs.
create or replace function boxcar.enqueue_differs(existing boxcar.jobs, queue text, spec jsonb,
                                                  priority integer, max_attempts integer,
                                                  webhook_url text, depends_on uuid[])
returns text language plpgsql stable as $$
begin
    return case
        when boxcar.spec_redacted(boxcar.caps_unfill(existing.spec, spec))
             is distinct from boxcar.spec_redacted(
                 boxcar.session_fill_spec(spec, boxcar.queue_scope(queue))) then 'spec'
        when existing.queue is distinct from queue then 'queue'
        when existing.priority is distinct from priority then 'priority'
        when existing.max_attempts is distinct from max_attempts then 'max_attempts'
        when existing.webhook_url is distinct from webhook_url then 'webhook_url'
        when coalesce(boxcar.job_depends_on(existing.id), '{}')
             is distinct from (select coalesce(array_agg(distinct d order by d), '{}')
                                 from unnest(depends_on) d) then 'depends_on'
    end;
end $$;

-- The job under idempotency_key, when the request matches it; raises
-- 23505 naming what differs otherwise.
create or replace function boxcar.enqueue_existing(queue text, spec jsonb, priority integer,
                                                   max_attempts integer, idempotency_key text,
                                                   webhook_url text, depends_on uuid[])
returns uuid language plpgsql stable as $$
#variable_conflict use_column
declare
    existing boxcar.jobs;
    differs text;
begin
    select * into existing from boxcar.jobs j where j.idempotency_key = enqueue_existing.idempotency_key;
    differs := boxcar.enqueue_differs(existing, queue, spec, priority, max_attempts, webhook_url,
                                      depends_on);
    if differs is not null then
        raise exception 'idempotency_key: already used by job % with a different %', existing.id, differs
            using errcode = '23505',
                  hint = 'use a new key, or resend the same request to get that job''s id';
    end if;
    return existing.id;
end $$;

-- depends_on: the job runs only after each of these jobs (of its scope)
-- has succeeded (sql/36_dependencies.sql).
drop function if exists boxcar.enqueue(text, jsonb, integer, timestamptz, integer, text, text);
create or replace function boxcar.enqueue(
    queue           text,
    spec            jsonb,
    priority        integer     default 0,
    run_at          timestamptz default null,
    max_attempts    integer     default 3,
    idempotency_key text        default null,
    webhook_url     text        default null,
    depends_on      uuid[]      default null)
returns uuid language plpgsql volatile as $$
#variable_conflict use_column
declare
    new_id uuid;
    e text := boxcar.enqueue_error(enqueue.queue, enqueue.priority, enqueue.run_at,
                                   enqueue.max_attempts, enqueue.idempotency_key,
                                   enqueue.webhook_url, enqueue.depends_on);
    waits boolean := cardinality(enqueue.depends_on) > 0;
begin
    if e is not null then
        raise exception '%', e using errcode = '22023';
    end if;
    perform boxcar.check_spec(enqueue.spec);
    -- A job with dependencies is inserted blocked; add_dependencies
    -- unblocks it if they have all succeeded already.
    insert into boxcar.jobs (queue, spec, priority, run_at, max_attempts, idempotency_key,
                             webhook_url, blocked)
    values (enqueue.queue, enqueue.spec, enqueue.priority, coalesce(enqueue.run_at, now()),
            enqueue.max_attempts, enqueue.idempotency_key, enqueue.webhook_url, coalesce(waits, false))
    on conflict (idempotency_key) where idempotency_key is not null do nothing
    returning id into new_id;
    if new_id is null then
        -- The key exists (possibly just committed by a concurrent enqueue,
        -- which ON CONFLICT waited for): the same request gets that job; a
        -- different one under the same key is a mistake, never silently
        -- answered with a job that does something else.
        return boxcar.enqueue_existing(enqueue.queue, enqueue.spec, enqueue.priority,
                                       enqueue.max_attempts, enqueue.idempotency_key,
                                       enqueue.webhook_url, enqueue.depends_on);
    end if;
    if waits then
        perform boxcar.add_dependencies(new_id, enqueue.queue, enqueue.depends_on);
    end if;
    return new_id;
end $$;

-- Many jobs in one call: each element of jobs is an object with enqueue's
-- arguments as keys (queue and spec required; run_at as ISO-8601 text;
-- depends_on entries are job ids, or the 0-based index of an earlier
-- element).  Returns the ids in input order.  All or nothing: the first
-- bad element refuses the call, its message prefixed "jobs[<index>]: "
-- with the SQLSTATE enqueue would give.  One INSERT for all the rows: the
-- statement trigger sends one NOTIFY per queue, and the per-row triggers
-- (caps, secrets, sessions, storages) run as for enqueue.
create or replace function boxcar.enqueue_many(jobs jsonb[])
returns uuid[] language plpgsql volatile as $$
declare
    n integer := coalesce(cardinality(jobs), 0);
    ids uuid[] := '{}';
    qs text[] := '{}'; specs jsonb[] := '{}'; prios integer[] := '{}'; runs timestamptz[] := '{}';
    maxes integer[] := '{}'; keys text[] := '{}'; urls text[] := '{}'; blocks boolean[] := '{}';
    deps jsonb[];          -- each element's depends_on as given
    later integer[] := '{}';  -- the elements with a key or dependencies
    dep uuid[];
    el jsonb; v jsonb;
    i integer; k integer;
    cur integer;           -- the element being looked at, for the message
    bad text;
    st text; msg text; hint text;
begin
    if n > 10000 then
        raise exception 'jobs: at most 10000 in one call (got %)', n using errcode = '22023';
    end if;
    begin
        -- FOREACH: jobs[i] would walk the array from its start each time.
        i := 0;
        foreach el in array coalesce(jobs, '{}') loop
            i := i + 1;
            cur := i;
            if el is null or jsonb_typeof(el) <> 'object' then
                raise exception 'must be a JSON object' using errcode = '22023';
            end if;
            -- An operator, not a query over the keys: this runs per element.
            if el - '{queue,spec,priority,run_at,max_attempts,idempotency_key,webhook_url,depends_on}'::text[]
               <> '{}' then
                select key || ': unknown field' into bad from jsonb_object_keys(el) key
                 where key not in ('queue', 'spec', 'priority', 'run_at', 'max_attempts',
                                   'idempotency_key', 'webhook_url', 'depends_on')
                 limit 1;
                raise exception '%', bad using errcode = '22023';
            end if;
            if jsonb_typeof(coalesce(el -> 'queue', 'null')) not in ('string', 'null')
               or jsonb_typeof(coalesce(el -> 'idempotency_key', 'null')) not in ('string', 'null')
               or jsonb_typeof(coalesce(el -> 'webhook_url', 'null')) not in ('string', 'null') then
                select f || ': must be a string' into bad
                  from unnest(array['queue', 'idempotency_key', 'webhook_url']) f
                 where jsonb_typeof(coalesce(el -> f, 'null')) not in ('string', 'null') limit 1;
                raise exception '%', bad using errcode = '22023';
            end if;
            qs[i] := el ->> 'queue';
            keys[i] := el ->> 'idempotency_key';
            urls[i] := el ->> 'webhook_url';
            specs[i] := el -> 'spec';
            -- A number that is not an integer fails as one out of range.
            prios[i] := case when coalesce(el -> 'priority', 'null') = 'null' then 0
                             else boxcar.jobs_int(el, 'priority') end;
            maxes[i] := case when coalesce(el -> 'max_attempts', 'null') = 'null' then 3
                             else boxcar.jobs_int(el, 'max_attempts') end;
            v := el -> 'run_at';
            if v is not null and v <> 'null' then
                if jsonb_typeof(v) <> 'string' or v #>> '{}' !~ '^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d{1,6})?)?(Z|[+-]\d\d(:?\d\d)?)?)?$' then
                    raise exception 'run_at: must be an ISO-8601 time as text ("2026-01-02T03:04:05Z")'
                        using errcode = '22023';
                end if;
                runs[i] := (v #>> '{}')::timestamptz;
            end if;
            v := el -> 'depends_on';
            if v is not null and v <> 'null' then
                if jsonb_typeof(v) <> 'array' then
                    raise exception 'depends_on: must be an array of job ids and indexes of earlier elements'
                        using errcode = '22023';
                end if;
                select format('depends_on[%s]: must be a job id or the index of an earlier element (0 to %s)',
                              o - 1, i - 2)
                  into bad
                  from jsonb_array_elements(v) with ordinality e(x, o)
                 where not ((jsonb_typeof(x) = 'string'
                             and x #>> '{}' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')
                            or (jsonb_typeof(x) = 'number' and x::numeric = trunc(x::numeric)
                                and x::numeric between 0 and i - 2))
                 limit 1;
                if bad is not null then
                    raise exception '%', bad using errcode = '22023';
                end if;
                if jsonb_array_length(v) > 1000 then
                    raise exception 'depends_on: at most 1000 jobs' using errcode = '22023';
                end if;
                deps[i] := v;
                blocks[i] := jsonb_array_length(v) > 0;
            end if;
            bad := boxcar.enqueue_error(qs[i], prios[i], runs[i], maxes[i], keys[i], urls[i], null);
            if bad is not null then
                raise exception '%', bad using errcode = '22023';
            end if;
            perform boxcar.check_spec(specs[i]);
            ids[i] := gen_random_uuid();
            runs[i] := coalesce(runs[i], now());
            blocks[i] := coalesce(blocks[i], false);
            if blocks[i] or keys[i] is not null then
                later := later || i;
            end if;
        end loop;

        cur := null;
        insert into boxcar.jobs (id, queue, spec, priority, run_at, max_attempts, idempotency_key,
                                 webhook_url, blocked)
        select * from unnest(ids, qs, specs, prios, runs, maxes, keys, urls, blocks)
        on conflict (idempotency_key) where idempotency_key is not null do nothing;

        -- In input order: an element's dependencies on earlier ones are
        -- their final ids (an existing job's, under an idempotency key).
        -- Only those with a key or dependencies: reading an element of an
        -- array with nulls (keys) walks it from the start.
        foreach i in array later loop
            cur := i;
            dep := null;
            if blocks[i] then
                select array_agg(case when jsonb_typeof(x) = 'number' then ids[(x::numeric)::integer + 1]
                                      else (x #>> '{}')::uuid end)
                  into dep from jsonb_array_elements(deps[i]) x;
            end if;
            if keys[i] is not null
               and (select j.id from boxcar.jobs j where j.idempotency_key = keys[i]) <> ids[i] then
                ids[i] := boxcar.enqueue_existing(qs[i], specs[i], prios[i], maxes[i], keys[i], urls[i], dep);
            elsif dep is not null then
                perform boxcar.add_dependencies(ids[i], qs[i], dep);
            end if;
        end loop;
    exception when others then
        get stacked diagnostics st = returned_sqlstate, msg = message_text, hint = pg_exception_hint;
        if cur is null then
            -- The INSERT's triggers refused a row (caps, secrets, a
            -- session, a storage of another scope): find which, one at a
            -- time (only on this error path).
            for i in 1 .. n loop
                begin
                    insert into boxcar.jobs (id, queue, spec, priority, run_at, max_attempts,
                                             idempotency_key, webhook_url, blocked)
                    values (ids[i], qs[i], specs[i], prios[i], runs[i], maxes[i], keys[i], urls[i], blocks[i])
                    on conflict (idempotency_key) where idempotency_key is not null do nothing;
                exception when others then
                    get stacked diagnostics st = returned_sqlstate, msg = message_text,
                                            hint = pg_exception_hint;
                    cur := i;
                    exit;
                end;
            end loop;
            if cur is null then
                perform boxcar.raise_error(st, msg, hint);
            end if;
        end if;
        perform boxcar.raise_error(st, format('jobs[%s]: %s', cur - 1, msg), hint);
    end;
    return ids;
end $$;

-- Raises msg with SQLSTATE st and hint (none when null or empty).
create or replace function boxcar.raise_error(st text, msg text, hint text)
returns void language plpgsql immutable as $$
begin
    if coalesce(hint, '') = '' then
        raise exception '%', msg using errcode = st;
    end if;
    raise exception '%', msg using errcode = st, hint = hint;
end $$;

-- An element's integer field, null when absent, null, or not an integer
-- (enqueue_error then names the field's range).
create or replace function boxcar.jobs_int(el jsonb, field text)
returns integer language plpgsql immutable as $$
declare
    v jsonb := el -> field;
begin
    if v is null or jsonb_typeof(v) <> 'number' or v::numeric <> trunc(v::numeric)
       or v::numeric not between -2147483648 and 2147483647 then
        return null;
    end if;
    return v::numeric::integer;
end $$;

-- One NOTIFY per statement and queue, whatever the number of rows: a bulk
-- insert of 10,000 jobs wakes each worker once, not 10,000 times.
create or replace function boxcar.notify_jobs() returns trigger
language plpgsql as $$
begin
    perform pg_notify('boxcar_jobs', q.queue)
       from (select distinct queue from new_rows
              where status = 'queued' and run_at <= now() and not blocked) q;
    return null;
end $$;

create or replace trigger jobs_notify_insert
    after insert on boxcar.jobs
    referencing new table as new_rows
    for each statement execute function boxcar.notify_jobs();

-- After an update, only the rows a worker may be waiting for: a job queued
-- and due (retried, rescued, unblocked, moved), or one that finished in a
-- queue with max_running (a place frees up for the next, which may wait on
-- another replica); and every finish, for the apps waiting on it.  Claims,
-- heartbeats and the rest do not call it (the trigger's condition is
-- checked without it).  pg_notify sends a queue's
-- notification once per transaction however many rows repeat it.  This
-- was a statement trigger over a transition table, like the insert's: a
-- third of every claim's cost in the database (0.53 against 0.37 ms).
create or replace function boxcar.notify_job_change() returns trigger
language plpgsql as $$
begin
    -- The completion push (README, "For web apps"): a job's final status,
    -- on channel boxcar_job_updates, for apps waiting on it.  An automatic
    -- retry (running to queued) is not an end and sends nothing.  Ids and
    -- names only: NOTIFY is database-wide and any role may LISTEN, so the
    -- app reads the job itself (boxcar.job_json).  At most ~150 bytes (a
    -- queue is at most 128 characters), far below NOTIFY's 8000.
    if new.status in ('succeeded', 'failed', 'cancelled') and old.status is distinct from new.status then
        perform pg_notify('boxcar_job_updates',
                          format('{"id":"%s","queue":%s,"status":"%s"}',
                                 new.id, to_json(new.queue), new.status));
    end if;
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
