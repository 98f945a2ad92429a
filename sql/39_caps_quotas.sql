-- Operator caps per queue and quotas per scope (issue 48, tables in
-- migrations/0019_caps_quotas.sql, docs/tenants.md "Caps and quotas").
--
-- Caps: the most a job of a queue may ask for.  They are applied when a
-- job row is inserted (a BEFORE INSERT trigger, so enqueue, schedules and
-- rows written around the API alike) and when a job is retried by hand: a
-- spec over a cap is refused with BAD_SPEC naming the field, the queue and
-- the cap; a limit the spec leaves out is written into the stored spec as
-- the smaller of the cap and the worker's default, so the row says what
-- the job gets.  Changing caps leaves jobs already queued as they are.
--
-- Quotas: enforced by the claim (boxcar.claim_limited, sql/30_claim.sql):
-- a scope at its max_running, or whose CPU time today (UTC) reached
-- cpu_seconds_per_day, gets no new claim; its jobs wait, enqueue still
-- accepts them, running jobs are never stopped.

-- The numeric caps: the spec field each bounds, its range (the spec's
-- own, sql/10_spec.sql limits_error) and the worker's default for a spec
-- that leaves it out (worker/spec/spec.c).  needs: the spec field without
-- which the limit means nothing (null: always applies).
create or replace function boxcar.cap_fields()
returns table (cap text, path text[], lo numeric, hi numeric, integral boolean, dflt numeric,
               needs text)
language sql immutable as $$
    values ('memory_mb', '{limits,memory_mb}'::text[], 16::numeric, 1048576::numeric, true, 1024::numeric, null::text),
           ('cpus', '{limits,cpus}', 0.01, 256, false, 1.0, null),
           ('pids', '{limits,pids}', 1, 65536, true, 256, null),
           ('disk_mb', '{limits,disk_mb}', 1, 1048576, true, 2048, null),
           ('files', '{limits,files}', 1, 10000000, true, 100000, null),
           ('timeout_s', '{limits,timeout_s}', 1, 86400, false, 600, null),
           ('output_bytes', '{limits,output_bytes}', 0, 16777216, true, 1048576, null),
           ('startup_timeout_s', '{startup_timeout_s}', 1, 600, false, 30, 'startup_script'),
           ('session_idle_s', '{session,idle_timeout_s}', 1, 86400, false, 300, 'session')
$$;

-- The first problem of a caps object, or null.  images: an array of image
-- storage names the queue's jobs may use ([]: none; absent: any);
-- sessions: false refuses session jobs.
create or replace function boxcar.caps_error(caps jsonb)
returns text language plpgsql immutable as $$
declare
    e text;
    f record;
    v jsonb;
begin
    if jsonb_typeof(caps) is distinct from 'object' then
        return 'caps: must be an object';
    end if;
    select 'caps.' || key || ': unknown cap' into e from jsonb_object_keys(caps) key
     where key not in (select x.cap from boxcar.cap_fields() x) and key not in ('images', 'sessions')
     limit 1;
    if e is not null then return e; end if;
    for f in select * from boxcar.cap_fields() x where caps ? x.cap loop
        e := boxcar.number_error('caps.' || f.cap, caps -> f.cap, f.lo, f.hi, f.integral);
        if e is not null then return e; end if;
    end loop;
    if caps ? 'images' then
        v := caps -> 'images';
        if jsonb_typeof(v) <> 'array' or jsonb_array_length(v) > 256 then
            return 'caps.images: must be an array of at most 256 image storage names';
        end if;
        select boxcar.name_error('caps.images[' || (n - 1) || ']', x) into e
          from jsonb_array_elements(v) with ordinality as a(x, n)
         where boxcar.name_error('caps.images', x) is not null
         order by n limit 1;
        if e is not null then return e; end if;
    end if;
    if caps ? 'sessions' and jsonb_typeof(caps -> 'sessions') <> 'boolean' then
        return 'caps.sessions: must be true or false';
    end if;
    return null;
end $$;

create or replace function boxcar.queue_caps_json(queue text)
returns jsonb language plpgsql stable as $$
#variable_conflict use_variable
declare
    c boxcar.queue_caps;
begin
    select * into c from boxcar.queue_caps x where x.queue = queue;
    return jsonb_build_object('queue', queue, 'caps', coalesce(c.caps, '{}'::jsonb),
                              'updated_at', c.updated_at);
end $$;

-- Sets a queue's caps, replacing the ones it had (a cap left out is
-- removed; {} or null removes them all).  Returns boxcar.queue_caps_json.
-- Jobs already queued are left as they are.
create or replace function boxcar.set_queue_caps(queue text, caps jsonb)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_variable
declare
    e text;
begin
    perform boxcar.check_queue_name(queue);
    if caps is null or caps = '{}'::jsonb then
        delete from boxcar.queue_caps x where x.queue = queue;
        return boxcar.queue_caps_json(queue);
    end if;
    e := boxcar.caps_error(caps);
    if e is not null then
        raise exception '%', e using errcode = '22023';
    end if;
    insert into boxcar.queue_caps as x (queue, caps) values (queue, caps)
    on conflict on constraint queue_caps_pkey do update set caps = excluded.caps, updated_at = now();
    return boxcar.queue_caps_json(queue);
end $$;

create or replace function boxcar.queue_caps_ls()
returns setof jsonb language sql stable as $$
    select boxcar.queue_caps_json(c.queue) from boxcar.queue_caps c order by c.queue
$$;

create or replace function boxcar.cap_raise(message text)
returns void language plpgsql volatile as $$
begin
    raise exception 'BAD_SPEC: %', message
        using errcode = '22023', hint = 'the queue''s caps are shown by `boxcar queue show QUEUE`';
end $$;

-- The spec as the queue's caps let it run: raises BAD_SPEC for a field over
-- a cap, an image the queue does not allow or a session where sessions are
-- off; fills each capped limit the spec leaves out (see the head of this
-- file).  A queue without caps costs one probe of queue_caps.  A malformed
-- spec is returned as it is: enqueue refuses it, and the worker fails a
-- row written around enqueue with its BAD_SPEC.
create or replace function boxcar.apply_queue_caps(queue text, spec jsonb)
returns jsonb language plpgsql stable as $$
#variable_conflict use_variable
declare
    caps jsonb;
    f record;
    v jsonb;
    img text;
begin
    select c.caps into caps from boxcar.queue_caps c where c.queue = queue;
    if caps is null or boxcar.spec_error(spec) is not null then
        return spec;
    end if;
    if spec ? 'session' and caps -> 'sessions' = 'false'::jsonb then
        perform boxcar.cap_raise(format('session: the queue "%s" allows no sessions (its caps)', queue));
    end if;
    if spec ? 'image' and caps ? 'images' then
        img := spec #>> '{image,storage}';
        if not caps -> 'images' ? img then
            perform boxcar.cap_raise(case when jsonb_array_length(caps -> 'images') = 0
                then format('image: the queue "%s" allows no image (its caps)', queue)
                else format('image.storage: "%s" is not among the images the queue "%s" allows (%s)',
                            img, queue, (select string_agg(x, ', ')
                                           from jsonb_array_elements_text(caps -> 'images') x)) end);
        end if;
    end if;
    for f in select * from boxcar.cap_fields() x
              where caps ? x.cap and (x.needs is null or spec ? x.needs) loop
        v := spec #> f.path;
        if v is null then
            if f.path[1] = 'limits' and not spec ? 'limits' then
                spec := jsonb_set(spec, '{limits}', '{}'::jsonb);
            end if;
            spec := jsonb_set(spec, f.path, to_jsonb(least((caps ->> f.cap)::numeric, f.dflt)));
        elsif (v #>> '{}')::numeric > (caps ->> f.cap)::numeric then
            perform boxcar.cap_raise(format('%s: %s exceeds the queue "%s" cap of %s (boxcar queue caps)',
                                            array_to_string(f.path, '.'), v, queue, caps -> f.cap));
        end if;
    end loop;
    return spec;
end $$;

-- For enqueue's idempotency check: the stored spec without the capped
-- fields the request leaves out, which the caps filled (with the caps of
-- that time: they may have changed since).
create or replace function boxcar.caps_unfill(stored jsonb, request jsonb)
returns jsonb language plpgsql immutable as $$
declare
    f record;
begin
    for f in select * from boxcar.cap_fields() loop
        if request #> f.path is null and stored #> f.path is not null then
            stored := stored #- f.path;
        end if;
    end loop;
    if jsonb_typeof(request) = 'object' and not request ? 'limits' and stored -> 'limits' = '{}'::jsonb then
        stored := stored - 'limits';
    end if;
    return stored;
end $$;

-- BEFORE INSERT on jobs: every path that makes a job (enqueue, schedules,
-- direct inserts) goes through the caps.  Named to fire first (triggers
-- fire in name order): a refused job makes no session and blocks nothing.
create or replace function boxcar.caps_job() returns trigger
language plpgsql as $$
begin
    if new.status = 'queued' then
        new.spec := boxcar.apply_queue_caps(new.queue, new.spec);
    end if;
    return new;
end $$;

create or replace trigger jobs_0_caps
    before insert on boxcar.jobs
    for each row execute function boxcar.caps_job();

-- And a queued job whose spec or queue is changed in place (no function of
-- the API does; a role that may update jobs could): the caps of its queue
-- hold for the new spec too.
create or replace trigger jobs_0_caps_update
    before update of spec, queue on boxcar.jobs
    for each row
    when (new.status = 'queued' and (old.spec is distinct from new.spec
                                     or old.queue is distinct from new.queue))
    execute function boxcar.caps_job();

-- Quotas ------------------------------------------------------------------

-- The UTC day CPU usage is counted by.
create or replace function boxcar.usage_day()
returns date language sql stable as $$
    select (now() at time zone 'UTC')::date
$$;

-- Why the claim starts none of scope's jobs now, or null: its running
-- jobs or its CPU time today reached its quota.
create or replace function boxcar.scope_wait_reason(scope text)
returns text language plpgsql stable as $$
#variable_conflict use_variable
declare
    q boxcar.scope_quotas;
    running bigint;
    used_ms bigint;
begin
    select * into q from boxcar.scope_quotas x where x.scope = scope;
    if not found then
        return null;
    end if;
    if q.cpu_seconds_per_day is not null then
        select u.cpu_ms into used_ms from boxcar.scope_cpu_usage u
         where u.scope = scope and u.day = boxcar.usage_day();
        if coalesce(used_ms, 0) >= q.cpu_seconds_per_day * 1000 then
            return format('waiting: scope "%s" used its %s CPU-seconds for %s (until 00:00 UTC)',
                          scope, q.cpu_seconds_per_day, boxcar.usage_day());
        end if;
    end if;
    if q.max_running is not null then
        select count(*) into running from boxcar.jobs j
         where j.status = 'running' and boxcar.queue_scope(j.queue) = scope;
        if running >= q.max_running then
            return format('waiting: scope "%s" runs %s jobs, its max_running', scope, running);
        end if;
    end if;
    return null;
end $$;

create or replace function boxcar.scope_quota_json(scope text)
returns jsonb language plpgsql stable as $$
#variable_conflict use_variable
declare
    q boxcar.scope_quotas;
    u boxcar.scope_cpu_usage;
begin
    select * into q from boxcar.scope_quotas x where x.scope = scope;
    select * into u from boxcar.scope_cpu_usage x where x.scope = scope and x.day = boxcar.usage_day();
    return jsonb_build_object(
        'scope', scope, 'max_running', q.max_running,
        'cpu_seconds_per_day', q.cpu_seconds_per_day,
        'running', (select count(*) from boxcar.jobs j
                     where j.status = 'running' and boxcar.queue_scope(j.queue) = scope),
        'queued', (select count(*) from boxcar.jobs j
                    where j.status = 'queued' and boxcar.queue_scope(j.queue) = scope),
        'day', boxcar.usage_day(), 'cpu_seconds_today', round(coalesce(u.cpu_ms, 0) / 1000.0, 3),
        'jobs_charged_today', coalesce(u.jobs, 0),
        'waiting', boxcar.scope_wait_reason(scope), 'updated_at', q.updated_at);
end $$;

-- Sets a scope's quotas (null: none; both null removes the scope's row).
-- Returns boxcar.scope_quota_json.  Workers are woken: a raised quota lets
-- waiting jobs start.
create or replace function boxcar.set_scope_quota(scope text, max_running integer,
                                                  cpu_seconds_per_day bigint)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_variable
begin
    if scope is null or scope !~ '^[A-Za-z0-9_.-]+$' or scope ~ '^\.\.?$' or length(scope) > 128 then
        raise exception 'scope: must be 1-128 letters, digits, "_", "." or "-" (a queue''s part before "/"), not "." or ".."'
            using errcode = '22023';
    end if;
    if max_running is not null and max_running not between 1 and 1000000 then
        raise exception 'max_running: must be between 1 and 1000000' using errcode = '22023';
    end if;
    if cpu_seconds_per_day is not null and cpu_seconds_per_day not between 1 and 100000000000 then
        raise exception 'cpu_seconds_per_day: must be between 1 and 100000000000' using errcode = '22023';
    end if;
    if max_running is null and cpu_seconds_per_day is null then
        delete from boxcar.scope_quotas x where x.scope = scope;
    else
        insert into boxcar.scope_quotas as x (scope, max_running, cpu_seconds_per_day)
        values (scope, max_running, cpu_seconds_per_day)
        on conflict on constraint scope_quotas_pkey do update
           set max_running = excluded.max_running,
               cpu_seconds_per_day = excluded.cpu_seconds_per_day, updated_at = now();
    end if;
    -- Every queue of the scope with a job waiting: the workers serving it
    -- claim again.
    perform pg_notify('boxcar_jobs', q)
       from (select distinct j.queue as q from boxcar.jobs j
              where j.status = 'queued' and boxcar.queue_scope(j.queue) = scope) s;
    return boxcar.scope_quota_json(scope);
end $$;

-- Every scope with a quota, by name.
create or replace function boxcar.scope_quota_ls()
returns setof jsonb language sql stable as $$
    select boxcar.scope_quota_json(q.scope) from boxcar.scope_quotas q order by q.scope
$$;

-- Charges the CPU time (result.cpu_ms) of the jobs ids, which the caller
-- just finished or retried, to their scopes' counters for today, for the
-- scopes with a CPU quota.  Counters are updated in scope order: two
-- reports charging the same scopes never wait on each other in a cycle.
create or replace function boxcar.charge_cpu(ids uuid[])
returns void language plpgsql volatile
set enable_seqscan = off as $$
begin
    insert into boxcar.scope_cpu_usage as u (scope, day, cpu_ms, jobs)
    select q.scope, boxcar.usage_day(), sum(greatest(0, least((j.result ->> 'cpu_ms')::numeric,
                                                              1e15)))::bigint, count(*)
      from boxcar.jobs j
      join boxcar.scope_quotas q on q.scope = boxcar.queue_scope(j.queue)
     where j.id = any (charge_cpu.ids) and q.cpu_seconds_per_day is not null
       and jsonb_typeof(j.result -> 'cpu_ms') = 'number'
     group by q.scope
     order by q.scope
    on conflict on constraint scope_cpu_usage_pkey do update
       set cpu_ms = u.cpu_ms + excluded.cpu_ms, jobs = u.jobs + excluded.jobs;
end $$;

-- `boxcar queue show`: a queue's limits (queue_config), caps and its
-- scope's quota with today's use and, when its jobs wait on it, why.
create or replace function boxcar.queue_show(queue text)
returns jsonb language plpgsql stable as $$
#variable_conflict use_variable
begin
    perform boxcar.check_queue_name(queue);
    return jsonb_build_object(
        'queue', queue, 'scope', boxcar.queue_scope(queue),
        'limits', (select boxcar.queue_config_json(c) from boxcar.queue_config c where c.queue = queue),
        'caps', boxcar.queue_caps_json(queue) -> 'caps',
        'quota', boxcar.scope_quota_json(boxcar.queue_scope(queue)),
        'queued', (select count(*) from boxcar.jobs j where j.queue = queue and j.status = 'queued'),
        'running', (select count(*) from boxcar.jobs j where j.queue = queue and j.status = 'running'));
end $$;
