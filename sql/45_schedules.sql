-- Periodic jobs: boxcar.schedules (migrations/0009) and the leader's tick.
--
-- Exactly once: schedule_tick() locks each due schedule's row, enqueues the
-- run with the idempotency key "schedule:<name>:<scheduled time>" and moves
-- next_run_at on, all in one transaction.  A leader that dies mid-tick
-- commits all of it or none of it; two replicas that both believe they
-- lead (one's lease ran out while it was busy) serialise on the row lock,
-- and the second finds next_run_at moved on (or the key taken).
--
-- Missed runs: a schedule whose next_run_at passed long ago (every worker
-- was down) runs once, keyed on the first time it missed, and its next run
-- is the first matching time after now: never once per missed interval.

create or replace function boxcar.schedule_json(s boxcar.schedules)
returns jsonb language sql stable as $$
    select jsonb_build_object('name', s.name, 'cron', s.cron, 'time_zone', s.time_zone,
                              'queue', s.queue, 'spec', boxcar.spec_redacted(s.spec), 'priority', s.priority,
                              'max_attempts', s.max_attempts, 'enabled', s.enabled,
                              'next_run_at', s.next_run_at, 'last_run_at', s.last_run_at,
                              'last_job_id', s.last_job_id, 'last_error', s.last_error,
                              'created_at', s.created_at, 'updated_at', s.updated_at)
$$;

-- Adds a schedule (or, with replace, changes the one of that name) and
-- returns it as JSON.  Validates the name, the cron expression, the time
-- zone, the queue and the spec (boxcar.check_spec, as enqueue does); a
-- cron expression that matches nothing within 8 years is refused.
create or replace function boxcar.schedule_add(name text, cron text, queue text, spec jsonb,
                                               time_zone text default 'UTC',
                                               priority integer default 0,
                                               max_attempts integer default 3,
                                               replace boolean default false)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_variable
declare
    nxt timestamptz;
    s boxcar.schedules;
begin
    if name is null or name !~ '^[A-Za-z0-9_.:-]{1,128}$' then
        raise exception 'name: must be 1 to 128 letters, digits, "_", ".", ":" or "-"'
            using errcode = '22023';
    end if;
    perform boxcar.check_queue_name(queue);
    if priority is null or priority not between -32768 and 32767 then
        raise exception 'priority: must be between -32768 and 32767' using errcode = '22023';
    end if;
    if max_attempts is null or max_attempts not between 1 and 100 then
        raise exception 'max_attempts: must be between 1 and 100' using errcode = '22023';
    end if;
    perform boxcar.check_spec(spec);
    -- Refused now rather than at every firing (each run is checked again:
    -- caps may change).
    perform boxcar.apply_queue_caps(queue, spec);
    perform boxcar.check_time_zone(time_zone);
    nxt := boxcar.cron_next(cron, time_zone, now());
    if nxt is null then
        raise exception 'cron: "%" never matches (within 8 years)', cron using errcode = '22023';
    end if;
    insert into boxcar.schedules as x (name, cron, time_zone, queue, spec, priority, max_attempts,
                                       next_run_at)
    values (name, btrim(cron), time_zone, queue, spec, priority, max_attempts, nxt)
    on conflict on constraint schedules_pkey do update
       set cron = excluded.cron, time_zone = excluded.time_zone, queue = excluded.queue,
           spec = excluded.spec, priority = excluded.priority,
           max_attempts = excluded.max_attempts,
           next_run_at = case when x.enabled then excluded.next_run_at end,
           last_error = null, updated_at = now()
     where replace
    returning x.* into s;
    if s.name is null then
        raise exception 'schedule "%" exists already', name using errcode = '23505',
            hint = 'remove it first, or replace it (boxcar schedule add --replace)';
    end if;
    return boxcar.schedule_json(s);
end $$;

-- Every schedule, by name, as JSON.
create or replace function boxcar.schedule_ls()
returns setof jsonb language sql stable as $$
    select boxcar.schedule_json(s) from boxcar.schedules s order by s.name
$$;

-- Removes a schedule; false when there was none of that name.  Jobs it
-- already enqueued are left alone.
create or replace function boxcar.schedule_rm(name text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_variable
begin
    delete from boxcar.schedules s where s.name = name;
    return found;
end $$;

-- A paused schedule enqueues nothing.  False when there is no such
-- schedule.
create or replace function boxcar.schedule_pause(name text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_variable
begin
    update boxcar.schedules s set enabled = false, next_run_at = null, updated_at = now()
     where s.name = name;
    return found;
end $$;

-- Resumes from now: the runs it missed while paused are not made up.
create or replace function boxcar.schedule_resume(name text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_variable
begin
    update boxcar.schedules s
       set enabled = true, updated_at = now(),
           next_run_at = case when s.enabled then s.next_run_at
                              else boxcar.cron_next(s.cron, s.time_zone, now()) end
     where s.name = name;
    return found;
end $$;

-- The leader's tick: enqueues one run of every due schedule and returns
-- how many it enqueued.  A run that cannot be enqueued (its spec no longer
-- passes the validator, its key is taken by a different job) is recorded
-- in last_error and skipped; the schedule moves on either way.
create or replace function boxcar.schedule_tick()
returns integer language plpgsql volatile as $$
declare
    s boxcar.schedules;
    job uuid;
    n integer := 0;
    key text;
    failure text;
begin
    for s in select * from boxcar.schedules x
              where x.enabled and x.next_run_at <= now()
              order by x.next_run_at
                for update skip locked loop
        key := format('schedule:%s:%s', s.name,
                      to_char(s.next_run_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
        job := null;
        failure := null;
        begin
            job := boxcar.enqueue(s.queue, s.spec, s.priority, null, s.max_attempts, key);
        exception when others then
            failure := sqlerrm;
        end;
        update boxcar.schedules x
           set last_run_at = s.next_run_at, last_job_id = coalesce(job, x.last_job_id),
               last_error = failure,
               next_run_at = boxcar.cron_next(s.cron, s.time_zone, greatest(now(), s.next_run_at))
         where x.name = s.name;
        if job is not null then
            n := n + 1;
        end if;
    end loop;
    return n;
end $$;
