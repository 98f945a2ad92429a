-- Queue limits that hold across every replica (boxcar.queue_config,
-- migrations/0009), enforced by boxcar.claim (sql/30_claim.sql):
--   max_running  at most this many jobs of the queue running at once,
--                cluster-wide;
--   rate_per_s   a token bucket: in any T seconds at most
--                rate_per_s * T + burst jobs start, burst being
--                max(1, rate_per_s / 10);
--   paused       no job of the queue is claimed (running ones go on).

create or replace function boxcar.check_queue_name(queue text)
returns void language plpgsql immutable as $$
begin
    if queue is null or queue !~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$'
       or queue ~ '(^|/)\.\.?(/|$)' or length(queue) > 128 then
        raise exception 'queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")'
            using errcode = '22023';
    end if;
end $$;

create or replace function boxcar.queue_config_json(c boxcar.queue_config)
returns jsonb language sql stable as $$
    select jsonb_build_object('queue', c.queue, 'max_running', c.max_running,
                              'rate_per_s', c.rate_per_s, 'paused', c.paused,
                              'updated_at', c.updated_at)
$$;

-- The burst of the rate limit's token bucket.
create or replace function boxcar.rate_burst(rate_per_s double precision)
returns double precision language sql immutable as $$
    select greatest(1, rate_per_s / 10)
$$;

-- A row with no limit left and not paused is deleted: the queue is back on
-- the claim's fast path.
create or replace function boxcar.queue_config_tidy(queue text)
returns void language sql volatile as $$
    delete from boxcar.queue_config c
     where c.queue = queue_config_tidy.queue and c.max_running is null and c.rate_per_s is null
       and not c.paused
$$;

-- Sets a queue's limits (null or left out: none) and returns its
-- configuration as JSON.  Workers are woken: a raised limit lets waiting
-- jobs start.
create or replace function boxcar.queue_config(queue text, max_running integer default null,
                                               rate_per_s double precision default null)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_variable
declare
    c boxcar.queue_config;
begin
    perform boxcar.check_queue_name(queue);
    if max_running is not null and max_running not between 1 and 1000000 then
        raise exception 'max_running: must be between 1 and 1000000 (pause the queue to run none)'
            using errcode = '22023';
    end if;
    if rate_per_s is not null and (rate_per_s = 'NaN' or rate_per_s <= 0 or rate_per_s > 1000000) then
        raise exception 'rate_per_s: must be more than 0 and at most 1000000' using errcode = '22023';
    end if;
    insert into boxcar.queue_config as x (queue, max_running, rate_per_s, tokens, tokens_at)
    values (queue, max_running, rate_per_s, coalesce(boxcar.rate_burst(rate_per_s), 0), clock_timestamp())
    on conflict on constraint queue_config_pkey do update
       set max_running = excluded.max_running, rate_per_s = excluded.rate_per_s,
           tokens = case when x.rate_per_s is null then excluded.tokens
                         else least(x.tokens, excluded.tokens) end,
           tokens_at = case when x.rate_per_s is null then excluded.tokens_at else x.tokens_at end,
           updated_at = now()
    returning x.* into c;
    perform boxcar.queue_config_tidy(queue);
    perform pg_notify('boxcar_jobs', queue);
    return boxcar.queue_config_json(c);
end $$;

-- Pausing: the claim skips the queue until it is resumed.  Both return
-- the queue's configuration as JSON.
create or replace function boxcar.pause_queue(queue text)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_variable
declare
    c boxcar.queue_config;
begin
    perform boxcar.check_queue_name(queue);
    insert into boxcar.queue_config as x (queue, paused) values (queue, true)
    on conflict on constraint queue_config_pkey do update set paused = true, updated_at = now()
    returning x.* into c;
    return boxcar.queue_config_json(c);
end $$;

create or replace function boxcar.resume_queue(queue text)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_variable
declare
    c boxcar.queue_config;
begin
    perform boxcar.check_queue_name(queue);
    update boxcar.queue_config x set paused = false, updated_at = now()
     where x.queue = queue
    returning x.* into c;
    perform boxcar.queue_config_tidy(queue);
    perform pg_notify('boxcar_jobs', queue);
    return coalesce(boxcar.queue_config_json(c),
                    jsonb_build_object('queue', queue, 'max_running', null, 'rate_per_s', null,
                                       'paused', false, 'updated_at', null));
end $$;

-- Every configured queue, by name, as JSON.
create or replace function boxcar.queue_config_ls()
returns setof jsonb language sql stable as $$
    select boxcar.queue_config_json(c) from boxcar.queue_config c order by c.queue
$$;

-- For a worker whose claim came back short: in how many milliseconds a
-- rate-limited queue among queues (not paused, with a job waiting) has its
-- next token (0: none is waiting on its rate), or null when none of queues
-- has a rate at all, so that the worker need not ask again until its next
-- poll.  The worker claims again then instead of at its next poll.
create or replace function boxcar.claim_delay_ms(queues text[])
returns integer language sql stable as $$
    select case when exists (select from boxcar.queue_config c
                              where c.queue = any (queues) and c.rate_per_s is not null)
           then coalesce((
    select ceil(greatest(0, min((1 - least(1, c.tokens + extract(epoch from clock_timestamp() - c.tokens_at)
                                                           * c.rate_per_s))
                                / c.rate_per_s)) * 1000)::integer + 1
      from boxcar.queue_config c
     where c.queue = any (queues) and c.rate_per_s is not null and not c.paused
       and exists (select from boxcar.jobs j
                    where j.queue = c.queue and j.status = 'queued' and j.run_at <= now())
    having count(*) > 0), 0)
           end
$$;
