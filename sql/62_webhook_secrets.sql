-- Webhook secrets per scope and per endpoint (issue 48; the table is
-- migrations/0018_webhook_secrets.sql).  A scope's signing secret is
-- derived by the worker from the operator's master key and (scope,
-- endpoint, generation); nothing here is secret.  Rotation adds a
-- generation and keeps the previous ones valid for an overlap, during
-- which every delivery carries one signature per valid generation.

-- At most this many generations of one (scope, endpoint) valid at once:
-- each adds a signature to every delivery (the worker signs with at most
-- 4 master keys x (4 endpoint + 4 scope-wide) secrets).
create or replace function boxcar.webhook_secret_max_valid()
returns integer language sql immutable as $$ select 4 $$;

-- Refuses (22023) what no delivery could ever be signed for, naming it.
create or replace function boxcar.check_webhook_secret_target(scope text, endpoint text)
returns void language plpgsql immutable as $$
begin
    if scope is null or scope !~ '^[A-Za-z0-9_.-]+$' or scope ~ '^\.\.?$' or length(scope) > 128 then
        raise exception 'webhook secret: scope must be a queue scope (letters, digits, _ . -; '
                        'at most 128 characters; not . or ..), e.g. "acme" for queue "acme/q"'
            using errcode = '22023';
    end if;
    if endpoint is null or (endpoint <> '' and (endpoint !~ '^https?://[^[:space:]]+$'
                                                 or length(endpoint) > 2048)) then
        raise exception 'webhook secret: endpoint must be the delivery URL (http or https, '
                        'at most 2048 characters, as the job gives it), or empty for the scope'
            using errcode = '22023';
    end if;
end $$;

-- The generations whose secrets sign a delivery of scope to url now,
-- newest first: endpoint '' is a scope-wide secret, endpoint = url the
-- endpoint's own.  An endpoint has secrets of its own once it has been
-- rotated (a row for it exists); until then, and during the overlap after
-- its first rotation (its generation 0), the scope-wide ones sign.  A
-- scope never rotated has generation 1, implicitly.  valid_until of an
-- inherited scope-wide secret is the sooner of the two ends.
-- plpgsql: called for every delivery of a batch, its plans are kept.
create or replace function boxcar.webhook_signing_generations(scope text, url text)
returns table (endpoint text, generation integer, created_at timestamptz, valid_until timestamptz)
language plpgsql stable rows 2 as $$
#variable_conflict use_column
declare
    s text := webhook_signing_generations.scope;
    inherit_until timestamptz := 'infinity';
begin
    if coalesce(url, '') <> '' and exists (select 1 from boxcar.webhook_secret_generations g
                                            where g.scope = s and g.endpoint = url) then
        return query
            select g.endpoint, g.generation, g.created_at, g.valid_until
              from boxcar.webhook_secret_generations g
             where g.scope = s and g.endpoint = url and g.generation >= 1
               and (g.valid_until is null or g.valid_until > now())
             order by g.generation desc
             limit boxcar.webhook_secret_max_valid();
        select coalesce(g.valid_until, 'infinity') into inherit_until
          from boxcar.webhook_secret_generations g
         where g.scope = s and g.endpoint = url and g.generation = 0;
        if not found or inherit_until <= now() then
            return;
        end if;
    end if;
    if not exists (select 1 from boxcar.webhook_secret_generations g
                    where g.scope = s and g.endpoint = '') then
        return query select ''::text, 1, null::timestamptz,
                            nullif(inherit_until, 'infinity'::timestamptz);
        return;
    end if;
    return query
        select g.endpoint, g.generation, g.created_at,
               nullif(least(coalesce(g.valid_until, 'infinity'), inherit_until), 'infinity')
          from boxcar.webhook_secret_generations g
         where g.scope = s and g.endpoint = '' and g.generation >= 1
           and (g.valid_until is null or g.valid_until > now())
         order by g.generation desc
         limit boxcar.webhook_secret_max_valid();
end $$;

-- Adds the next generation of (scope, endpoint) and ends the valid ones
-- after overlap (never later than they already end: an expired secret
-- stays expired).  overlap 0 revokes them at once (a leaked secret).
-- The first rotation of a scope records its implicit generation 1; the
-- first rotation of an endpoint gives it generation 1 and keeps the
-- scope-wide secrets signing its deliveries for the overlap (generation 0).
-- Returns the new generation.
create or replace function boxcar.rotate_webhook_secret(scope text, endpoint text default '',
                                                        overlap interval default '24 hours')
returns integer language plpgsql volatile as $$
#variable_conflict use_column
declare
    s text := rotate_webhook_secret.scope;
    e text := rotate_webhook_secret.endpoint;
    ends timestamptz;
    next_gen integer;
    n_valid integer;
begin
    perform boxcar.check_webhook_secret_target(s, e);
    if overlap is null or overlap < interval '0' or overlap > interval '365 days' then
        raise exception 'webhook secret: overlap must be from 0 to 365 days'
            using errcode = '22023';
    end if;
    ends := now() + overlap;
    -- One rotation of a (scope, endpoint) at a time: two would both add
    -- the same generation.
    perform pg_advisory_xact_lock(hashtextextended('boxcar.webhook_secret' || chr(31) || s
                                                   || chr(31) || e, 0));
    select max(g.generation) into next_gen
      from boxcar.webhook_secret_generations g where g.scope = s and g.endpoint = e;
    if next_gen is null then
        -- What signed until now: the scope's implicit generation 1, or for
        -- an endpoint the scope-wide secrets (generation 0).
        insert into boxcar.webhook_secret_generations (scope, endpoint, generation, valid_until)
        values (s, e, case when e = '' then 1 else 0 end, ends);
        next_gen := case when e = '' then 2 else 1 end;
    else
        update boxcar.webhook_secret_generations g
           set valid_until = least(coalesce(g.valid_until, 'infinity'), ends)
         where g.scope = s and g.endpoint = e
           and (g.valid_until is null or g.valid_until > now());
        next_gen := next_gen + 1;
    end if;
    insert into boxcar.webhook_secret_generations (scope, endpoint, generation)
    values (s, e, next_gen);
    select count(*) into n_valid from boxcar.webhook_secret_generations g
     where g.scope = s and g.endpoint = e and g.generation >= 1
       and (g.valid_until is null or g.valid_until > now());
    if n_valid > boxcar.webhook_secret_max_valid() then
        raise exception 'webhook secret: % would have % valid secrets, at most %: rotate with a '
                        'shorter overlap, or once the older ones have expired',
                        case when e = '' then 'scope ' || s else 'endpoint ' || e end,
                        n_valid, boxcar.webhook_secret_max_valid()
            using errcode = '54000';
    end if;
    return next_gen;
end $$;

-- For `boxcar webhooks secret`: what signs deliveries of scope (to
-- endpoint, when given) now, newest first, checked like a rotation.
create or replace function boxcar.webhook_secret_list(scope text, endpoint text default '')
returns table (key_endpoint text, generation integer, created_at timestamptz, valid_until timestamptz)
language plpgsql stable as $$
begin
    perform boxcar.check_webhook_secret_target(scope, endpoint);
    return query select * from boxcar.webhook_signing_generations(scope, endpoint);
end $$;

-- Due deliveries (boxcar.claim_deliveries) with what the worker signs each
-- with: its job's scope and the generations of the scope-wide secrets and
-- of the delivery URL's own secrets, read in the claiming transaction so
-- that a rotation counts from the next batch on.  The job is found by a
-- scalar subquery, one primary-key lookup per delivery: joined, it was
-- planned as a hash join over every job (the claim's row count unknown),
-- tripling the claim's time.
create or replace function boxcar.claim_signed_deliveries(worker_id text, n integer default 10,
                                                          lease interval default '60 seconds')
returns table (id text, job_id uuid, url text, body text, attempts integer, scope text,
               scope_generations integer[], endpoint_generations integer[])
language plpgsql volatile rows 10 as $$
begin
    return query
    select c.id, c.job_id, c.url, c.body, c.attempts, s.scope,
           coalesce(k.sg, '{}'), coalesce(k.eg, '{}')
      from boxcar.claim_deliveries(worker_id, n, lease) c
      cross join lateral (select boxcar.queue_scope((select j.queue from boxcar.jobs j
                                                      where j.id = c.job_id)) as scope) s
      cross join lateral (select array_agg(g.generation order by g.generation desc)
                                     filter (where g.endpoint = '') as sg,
                                 array_agg(g.generation order by g.generation desc)
                                     filter (where g.endpoint <> '') as eg
                            from boxcar.webhook_signing_generations(s.scope, c.url) g) k;
end $$;
