-- The worker side of the queue: claim, heartbeat, complete, retry, release.
-- Every write is fenced by worker_id (and the attempt, when given): a
-- worker that lost its lease can no longer change the job.
--
-- Exactly once, and why (tests: tests/sql/02_claim.sql, 10_report_batch.sql;
-- tests/e2e t_claim_commit, t_claim_unseen, t_report_batch, t_nothing_lost,
-- t_scale; tests/chaos):
-- - One holder at a time.  A claim takes queued rows with FOR UPDATE SKIP
--   LOCKED and, in the same statement's transaction, sets them running
--   with attempts + 1, worker_id and a lease (claim_ids).  A second claim
--   skips the locked rows and, once the first commits, no longer sees them
--   as queued (status = 'queued' and not blocked is the claim's predicate).
--   Each claim writes one 'claimed' row of job_events, the evidence the
--   tests count (one per attempt).
-- - A stale worker's report is refused.  Every transition out of running
--   (complete, report_completions, retry_or_fail, release) matches
--   worker_id, status = 'running' and the attempt it was given; a worker
--   whose lease ran out and whose job was rescued and claimed again
--   (attempts moved on) changes nothing, and its report answers held =
--   false.
-- - All or nothing.  A claim's rows, their 'claimed' events and their
--   lease commit together; a report's result, the job's kept-back events
--   (in its row: attempt_events), its live-log tail, webhook outbox row and
--   NOTIFY commit together.  A transaction that fails halfway leaves the
--   job as it was: queued (no attempt counted) or running under its lease,
--   and the worker retries the call or the heartbeat hands the job back
--   (README, "Running and scaling").  A resent call whose first try did
--   commit finds the job no longer running for that attempt (held =
--   false) and writes no event twice.
-- - A report and the next claim stay two transactions, on two connections
--   (the reporter thread's and the main loop's): a failure of one never
--   undoes the other, so neither can lose or double a job.

-- Exponential backoff with jitter: 2 s, 4 s, 8 s … capped at one hour,
-- each scaled by a random factor in [0.75, 1.25) so retries spread out.
create or replace function boxcar.backoff(attempts integer)
returns interval language sql volatile as $$
    select make_interval(secs => least(2 * power(2, greatest(attempts, 1) - 1), 3600)
                                 * (0.75 + random() * 0.5))
$$;

-- The functions on every job's path are plpgsql, not sql: plpgsql keeps
-- its statements' plans for the session, a sql function called from
-- plpgsql parses and plans its body again at every call.
create or replace function boxcar.add_event(job_id uuid, kind text, worker_id text default null,
                                            attempt integer default null, details jsonb default null)
returns void language plpgsql volatile as $$
begin
    insert into boxcar.job_events (job_id, kind, worker_id, attempt, details)
    values (job_id, kind, worker_id, attempt, details);
end $$;

-- A queued row whose attempts already reached max_attempts (written by
-- hand, or left by an older version) is failed, not run.  Blocked jobs
-- wait behind an earlier one on their artifact storage
-- (sql/35_artifact_order.sql).  A job of a session another worker instance
-- holds is left to that instance (sql/75_sessions.sql).
--
-- Two paths.  The fast one, for queues with no row in queue_config and of
-- one scope without a quota, is a single SKIP LOCKED index scan.  The other
-- (claim_limited, below) honours pause, max_running and rate_per_s, the
-- scopes' quotas, and shares the slots fairly between the scopes of
-- "scope/name" queues.
drop function if exists boxcar.claim(text, text[], integer, interval);
create or replace function boxcar.claim(worker_id text, queues text[], n integer default 1,
                                        lease interval default '30 seconds',
                                        instance text default null)
returns setof boxcar.jobs language plpgsql volatile
-- A claim returns at most n rows, n the caller's free slots: priced at
-- PostgreSQL's default of 1000, the worker's claim statement (a probe of
-- job_logs per row, worker/daemon/queue.c) passed jit_above_cost once
-- an attempt held about 25 rows of live output on average, and was
-- compiled at every claim (sql/97_no_jit.sql).
rows 10
-- Generic plans: a custom plan (PostgreSQL's choice here, as ids = any ($1)
-- and limit $n look cheaper with the values known) is planned again at
-- every claim, about 0.6 ms of the database's CPU per job; the generic
-- plans are the same index scans.  claim_limited goes back to auto.
-- No sequential scans: see claim_ids.
set plan_cache_mode = force_generic_plan
set enable_seqscan = off as $$
#variable_conflict use_column
begin
    if claim.n < 1 or claim.n > 1000 then
        raise exception 'n: must be between 1 and 1000' using errcode = '22023';
    end if;
    -- Past the first two tests the queues are of one scope: one probe of
    -- scope_quotas (sql/39_caps_quotas.sql) for it.
    if exists (select from boxcar.queue_config c where c.queue = any (claim.queues))
       or exists (select from unnest(claim.queues) q
                   where boxcar.queue_scope(q) <> boxcar.queue_scope(claim.queues[1]))
       or exists (select from boxcar.scope_quotas s
                   where s.scope = boxcar.queue_scope(claim.queues[1])) then
        return query select * from boxcar.claim_limited(claim.worker_id, claim.queues, claim.n,
                                                        claim.lease, claim.instance);
        return;
    end if;
    -- One ordered index scan per queue (queue = any (queues) cannot use
    -- the index's order: with 100,000 jobs queued it read and sorted them
    -- all, about a second per claim).  Each queue locks at most n; those
    -- not taken are unlocked when the claim's transaction ends.
    return query
    select * from boxcar.claim_ids(claim.worker_id, array(
        select o.id
          from (select distinct q from unnest(claim.queues) q) u
         cross join lateral (
               select j.id, j.priority, j.run_at
                 from boxcar.jobs j
                where j.status = 'queued' and not j.blocked and j.queue = u.q
                  and j.run_at <= now()
                  -- A session's job goes to the worker instance holding the
                  -- session (sql/75_sessions.sql).  Written out, not in
                  -- a function, so that its plan is this one: a probe of
                  -- sessions_pkey per session job the scan meets, and one
                  -- null test per other job.  offset 0 keeps it a probe:
                  -- without it, the generic plan hashed every held
                  -- session at each claim.
                  and (j.session_id is null
                       or not exists (select from boxcar.sessions s
                                       where s.scope = boxcar.queue_scope(j.queue)
                                         and s.id = j.session_id
                                         and s.holder is not null and s.held_until > now()
                                         and (s.holder, coalesce(s.holder_instance, ''))
                                             is distinct from (claim.worker_id,
                                                               coalesce(claim.instance, ''))
                                      offset 0))
                order by j.priority desc, j.run_at, j.id
                limit claim.n
                  for update skip locked) o
         order by o.priority desc, o.run_at, o.id
         limit claim.n), claim.lease, claim.instance);
end $$;

-- The tenant of a queue: "a" for "a/x"; a queue without a scope is its own.
create or replace function boxcar.queue_scope(queue text)
returns text language sql immutable as $$
    select case when strpos(queue, '/') > 0 then split_part(queue, '/', 1) else queue end
$$;

-- Claims the jobs ids, which the caller picked and locked (both claim
-- paths end here).  plpgsql, not sql: a sql function called from plpgsql
-- is planned again at every call, this statement's plan is kept.
create or replace function boxcar.claim_ids(worker_id text, ids uuid[], lease interval,
                                            instance text)
returns setof boxcar.jobs language plpgsql volatile
-- Generic plans: see claim().  A session keeps them for as long as it
-- lives (until an ANALYZE of the table), and made while the table was
-- empty (a worker started against an empty queue) they read every row of
-- it at each claim: seq scans are priced out, the plans go by the primary
-- key whatever the table held (tests/sql/17_claim_plan.sql).
set plan_cache_mode = force_generic_plan
set enable_seqscan = off as $$
#variable_conflict use_column
begin
    -- The update finds its rows by id alone, not through a join with the
    -- picked rows: planned while the statistics said the table was (nearly)
    -- empty, such a join was a merge join reading all of jobs_pkey at every
    -- claim (tests/sql/20_report_plan.sql).  The caller holds the rows'
    -- locks, so it sees the attempts the pick saw.
    --
    -- One update for both kinds of rows: a job whose attempts already
    -- reached max_attempts is failed, the others start an attempt (one
    -- read of each row by id, not one per kind).  The failed ones keep no
    -- 'finished' event row: the job row holds it (job_events_json).
    return query
    with picked as (
        update boxcar.jobs j
           set status = case when j.attempts < j.max_attempts then 'running' else 'failed' end,
               attempts = j.attempts + case when j.attempts < j.max_attempts then 1 else 0 end,
               worker_id = claim_ids.worker_id,
               worker_instance = case when j.attempts < j.max_attempts then claim_ids.instance end,
               lease_expires_at = case when j.attempts < j.max_attempts
                                       then now() + claim_ids.lease end,
               started_at = case when j.attempts < j.max_attempts then clock_timestamp()
                                 else j.started_at end,
               finished_at = case when j.attempts < j.max_attempts then null
                                  else clock_timestamp() end,
               error = case when j.attempts < j.max_attempts then j.error
                            else jsonb_build_object('code', 'ATTEMPTS_EXHAUSTED', 'message',
                                     format('not run: attempts (%s) already at max_attempts (%s)',
                                            j.attempts, j.max_attempts)) end
         where j.id = any (claim_ids.ids)
        returning j.*
    ), events as (
        insert into boxcar.job_events (job_id, kind, worker_id, attempt)
        select c.id, 'claimed', claim_ids.worker_id, c.attempts from picked c
         where c.status = 'running'
    )
    select * from picked c where c.status = 'running' order by c.priority desc, c.run_at, c.id;
end $$;

-- The claim with limits and fair share.
--
-- Limits: the queue_config rows of the claimed queues are locked (in name
-- order, so two claims never wait on each other in a cycle), so every
-- claim of a limited queue, on any replica, sees the running count and the
-- tokens the previous one left: max_running and rate_per_s hold however
-- many workers claim at once.  Paused queues are left out.
--
-- Fair share: each queue offers its first jobs (as many as it may start),
-- and the slots go first to the scope with the fewest jobs running,
-- counting those taken in this claim (its second job counts one more): a
-- scope with a million jobs queued gets no more slots than one with a few.
-- Priority orders jobs within a scope.  Running jobs are counted from the
-- running rows (as many as the cluster's slots), not from the queue.
--
-- Scope quotas (boxcar.scope_quotas, sql/39_caps_quotas.sql): the rows of
-- the claimed queues' scopes are locked after the queues' (in scope
-- order), so a scope's max_running holds across replicas as a queue's
-- does; a scope at it, or whose CPU time today reached its
-- cpu_seconds_per_day, is offered no job (scope_allows).
create or replace function boxcar.claim_limited(worker_id text, queues text[], n integer,
                                                lease interval, instance text)
returns setof boxcar.jobs language plpgsql volatile
-- Not claim()'s generic plans: these depend on the queue_config rows.
set plan_cache_mode = auto as $$
#variable_conflict use_variable
declare
    c boxcar.queue_config;
    allow integer;
    now_at timestamptz;
    names text[] := '{}';
    allows integer[] := '{}';
    limited text[] := '{}';
    ids uuid[];
    sq boxcar.scope_quotas;
    scopes text[] := '{}';
    scope_allows integer[] := '{}';
begin
    for c in select * from boxcar.queue_config x where x.queue = any (queues)
              order by x.queue for update loop
        continue when c.paused;
        allow := n;
        if c.max_running is not null then
            allow := least(allow, c.max_running - (select count(*) from boxcar.jobs j
                                                   where j.status = 'running' and j.queue = c.queue));
        end if;
        if c.rate_per_s is not null then
            now_at := clock_timestamp();
            update boxcar.queue_config x
               set tokens = least(boxcar.rate_burst(c.rate_per_s),
                                  c.tokens + greatest(0, extract(epoch from now_at - coalesce(c.tokens_at, now_at)))
                                             * c.rate_per_s),
                   tokens_at = now_at
             where x.queue = c.queue
            returning x.tokens into c.tokens;
            allow := least(allow, floor(c.tokens)::integer);
            limited := limited || c.queue;
        end if;
        names := names || c.queue;
        allows := allows || greatest(allow, 0);
    end loop;
    -- Queues without a row: as many as asked.
    select names || coalesce(array_agg(q), '{}'), allows || coalesce(array_agg(n), '{}')
      into names, allows
      from (select distinct q from unnest(queues) q
             where not exists (select from boxcar.queue_config x where x.queue = q)) u;
    for sq in select * from boxcar.scope_quotas x
               where x.scope in (select boxcar.queue_scope(q) from unnest(queues) q)
               order by x.scope for update loop
        allow := n;
        if sq.max_running is not null then
            allow := least(allow, sq.max_running - (select count(*) from boxcar.jobs j
                                                    where j.status = 'running'
                                                      and boxcar.queue_scope(j.queue) = sq.scope));
        end if;
        if sq.cpu_seconds_per_day is not null
           and exists (select from boxcar.scope_cpu_usage u
                        where u.scope = sq.scope and u.day = boxcar.usage_day()
                          and u.cpu_ms >= sq.cpu_seconds_per_day * 1000) then
            allow := 0;
        end if;
        scopes := scopes || sq.scope;
        scope_allows := scope_allows || greatest(allow, 0);
    end loop;
    -- A queue offers no more than its scope may start.
    select array_agg(least(q.allow, coalesce(s.allow, q.allow)) order by q.i) into allows
      from unnest(names, allows) with ordinality as q(queue, allow, i)
      left join unnest(scopes, scope_allows) as s(scope, allow) on s.scope = boxcar.queue_scope(q.queue);

    ids := array(
        with offer as (
            select o.id, o.priority, o.run_at, boxcar.queue_scope(q.queue) as scope
              from unnest(names, allows) as q(queue, allow)
              cross join lateral (
                  select j.id, j.priority, j.run_at from boxcar.jobs j
                   where j.status = 'queued' and not j.blocked and j.queue = q.queue
                     and j.run_at <= now()
                     -- A held session's job is its holder's: see claim().
                     and (j.session_id is null
                          or not exists (select from boxcar.sessions s
                                          where s.scope = boxcar.queue_scope(j.queue)
                                            and s.id = j.session_id
                                            and s.holder is not null and s.held_until > now()
                                            and (s.holder, coalesce(s.holder_instance, ''))
                                                is distinct from (claim_limited.worker_id,
                                                                  coalesce(claim_limited.instance, ''))
                                         offset 0))
                   order by j.priority desc, j.run_at, j.id
                   limit q.allow
                     for update skip locked) o
             where q.allow > 0
        ), running as (
            select boxcar.queue_scope(j.queue) as scope, count(*) as n
              from boxcar.jobs j
             where j.status = 'running' and j.queue = any (names)
             group by 1
        ), ranked as (
            select o.*, row_number() over (partition by o.scope
                                           order by o.priority desc, o.run_at, o.id) as r
              from offer o
        )
        select r.id from ranked r left join running u on u.scope = r.scope
          left join unnest(scopes, scope_allows) as s(scope, allow) on s.scope = r.scope
         where r.r <= coalesce(s.allow, n)
         order by coalesce(u.n, 0) + r.r, r.priority desc, r.run_at, r.id
         limit n);

    return query select * from boxcar.claim_ids(worker_id, ids, lease, instance);

    -- The tokens the claimed jobs used.
    update boxcar.queue_config x set tokens = x.tokens - u.used
      from (select j.queue, count(*) as used from boxcar.jobs j
             where j.id = any (ids) and j.status = 'running' and j.queue = any (limited)
             group by j.queue) u
     where x.queue = u.queue;
end $$;

-- Extends the lease of every job the worker instance holds and returns
-- their ids; a job missing from the answer is no longer this worker's to
-- run.  Leases are renewed by instance, never by name alone: a process
-- restarted under a dead one's name must not keep the dead one's jobs
-- alive.  (Without an instance, as from older callers, by name.)
drop function if exists boxcar.heartbeat(text, interval);
create or replace function boxcar.heartbeat(worker_id text, lease interval default '30 seconds',
                                            instance text default null)
returns setof uuid language plpgsql volatile
-- No sequential scans, and the jobs' update finds its rows by id alone: see
-- claim_ids (planned while ANALYZE had seen jobs nearly empty, a heartbeat
-- read it whole twice, tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
#variable_conflict use_column
begin
    update boxcar.workers w
       set heartbeat_at = now(),
           running = (select count(*) from boxcar.jobs j
                       where j.worker_id = heartbeat.worker_id and j.status = 'running'
                         and (heartbeat.instance is null or j.worker_instance = heartbeat.instance))
     where w.id = heartbeat.worker_id
       and (heartbeat.instance is null or w.instance is not distinct from heartbeat.instance);
    -- Rows locked in id order, as report_batch() takes them: the two run
    -- at once on a worker's connections and must not deadlock.
    return query
    update boxcar.jobs j
       set lease_expires_at = now() + heartbeat.lease
     where j.id = any (array(
               select x.id from boxcar.jobs x
                where x.worker_id = heartbeat.worker_id and x.status = 'running'
                  and (heartbeat.instance is null or x.worker_instance = heartbeat.instance)
                order by x.id
                  for update))
    returning j.id;
end $$;

-- Finishes a job the caller holds.  Returns false (and changes nothing)
-- when the worker no longer holds it: rescued, cancelled or reclaimed.
create or replace function boxcar.complete(id uuid, worker_id text, status text,
                                           result jsonb default null, error jsonb default null,
                                           attempt integer default null)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    if complete.status not in ('succeeded', 'failed', 'cancelled') then
        raise exception 'status: must be succeeded, failed or cancelled' using errcode = '22023';
    end if;
    update boxcar.jobs j
       set status = complete.status, result = complete.result, error = complete.error,
           finished_at = clock_timestamp(), lease_expires_at = null
     where j.id = complete.id and j.worker_id = complete.worker_id and j.status = 'running'
       and (complete.attempt is null or j.attempts = complete.attempt);
    -- No 'finished' event row: the job row holds it (job_events_json).
    return found;
end $$;

-- An infrastructure failure: back to the queue after a backoff, or failed
-- once max_attempts is used up.  Returns the new status, or null when the
-- worker does not hold the job.
create or replace function boxcar.retry_or_fail(id uuid, worker_id text, error jsonb,
                                                attempt integer default null,
                                                result jsonb default null)
returns text language plpgsql volatile as $$
#variable_conflict use_column
declare
    j boxcar.jobs;
    delay interval;
begin
    select * into j from boxcar.jobs x
     where x.id = retry_or_fail.id and x.worker_id = retry_or_fail.worker_id and x.status = 'running'
       and (retry_or_fail.attempt is null or x.attempts = retry_or_fail.attempt)
       for update;
    if not found then
        return null;
    end if;
    if j.attempts < j.max_attempts then
        delay := boxcar.backoff(j.attempts);
        update boxcar.jobs x
           set status = 'queued', run_at = now() + delay, worker_id = null, worker_instance = null,
               lease_expires_at = null, error = retry_or_fail.error, result = retry_or_fail.result
         where x.id = j.id;
        perform boxcar.add_event(j.id, 'retried', retry_or_fail.worker_id, j.attempts,
                                 jsonb_build_object('error', retry_or_fail.error,
                                                    'delay_s', extract(epoch from delay)));
        return 'queued';
    end if;
    -- Its 'finished' event is the row's (job_events_json).
    update boxcar.jobs x
       set status = 'failed', error = retry_or_fail.error, result = retry_or_fail.result,
           finished_at = clock_timestamp(), lease_expires_at = null
     where x.id = j.id;
    return 'failed';
end $$;

-- Hands a job back untouched (a draining worker that had to stop it): the
-- attempt is not counted against the job, and it is due at once.
create or replace function boxcar.release(id uuid, worker_id text, attempt integer default null)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
declare
    n integer;
begin
    update boxcar.jobs j
       set status = 'queued', run_at = now(), worker_id = null, worker_instance = null,
           lease_expires_at = null, attempts = greatest(j.attempts - 1, 0)
     where j.id = release.id and j.worker_id = release.worker_id and j.status = 'running'
       and (release.attempt is null or j.attempts = release.attempt);
    get diagnostics n = row_count;
    if n > 0 then
        perform boxcar.add_event(release.id, 'released', release.worker_id, release.attempt, null);
    end if;
    return n > 0;
end $$;

-- Puts one running job back (retried after a backoff) or fails it with
-- WORKER_LOST once its attempts are used up.  The caller holds its row lock.
create or replace function boxcar.rescue_job(j boxcar.jobs, message text)
returns void language plpgsql volatile as $$
declare
    err jsonb := jsonb_build_object('code', 'WORKER_LOST', 'message', message);
    delay interval;
begin
    if j.attempts < j.max_attempts then
        delay := boxcar.backoff(j.attempts);
        update boxcar.jobs set status = 'queued', run_at = now() + delay, worker_id = null,
                               worker_instance = null, lease_expires_at = null, error = err
         where id = j.id;
        perform boxcar.add_event(j.id, 'rescued', j.worker_id, j.attempts,
                                 jsonb_build_object('error', err, 'delay_s', extract(epoch from delay)));
    else
        -- Its 'finished' event is the row's (job_events_json).
        update boxcar.jobs set status = 'failed', lease_expires_at = null,
                               error = err, finished_at = clock_timestamp()
         where id = j.id;
    end if;
end $$;

-- Running jobs that no live worker holds: their lease ran out (the worker
-- died or lost the database), or they have no lease at all (a row written
-- by hand or by a tool).  SKIP LOCKED makes it safe to run from every
-- worker at once.  Returns how many jobs it rescued.  It also unblocks
-- stalled artifact storages and drops the sessions' lapsed holds
-- (sessions_expire, sql/75_sessions.sql).
create or replace function boxcar.rescue_expired()
returns integer language plpgsql volatile
-- No sequential scans: see boxcar.claim_ids (tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
declare
    j boxcar.jobs;
    n integer := 0;
begin
    for j in select * from boxcar.jobs
              where status = 'running' and (lease_expires_at is null or lease_expires_at < now())
                for update skip locked loop
        perform boxcar.rescue_job(j, case
            when j.lease_expires_at is null
                then format('running without a lease (worker %s)', coalesce(j.worker_id, 'unknown'))
            else format('worker %s stopped renewing its lease', j.worker_id) end);
        n := n + 1;
    end loop;
    perform boxcar.unblock_artifact_stalled();
    -- Sessions whose holder stopped renewing (sql/75_sessions.sql).
    perform boxcar.sessions_expire();
    return n;
end $$;

-- Called by a worker process at start, before it claims: the jobs its name
-- still holds belong to an earlier process of that name (it was killed, or
-- its host restarted), which is gone; they are rescued now rather than
-- after their leases.  Names are unique among live workers: a second live
-- process under the same name takes over the first one's jobs (they are
-- retried; the first one stops them at its next heartbeat), and so are
-- its sessions (sessions_orphaned).  Returns how many jobs it rescued.
create or replace function boxcar.rescue_orphans(worker_id text, instance text)
returns integer language plpgsql volatile
-- No sequential scans: see boxcar.claim_ids (tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
#variable_conflict use_column
declare
    j boxcar.jobs;
    n integer := 0;
begin
    for j in select * from boxcar.jobs x
              where x.status = 'running' and x.worker_id = rescue_orphans.worker_id
                and x.worker_instance is distinct from rescue_orphans.instance
                for update skip locked loop
        perform boxcar.rescue_job(j, format('worker %s restarted: the process that ran the job is gone',
                                            j.worker_id));
        n := n + 1;
    end loop;
    -- And the sessions it held (sql/75_sessions.sql): their sandboxes died
    -- with it.
    perform boxcar.sessions_orphaned(rescue_orphans.worker_id, rescue_orphans.instance);
    return n;
end $$;

-- Internal (the worker's, not part of the public API): the events a worker
-- kept back to send with a later call, in the order they happened.  events
-- is a JSON array of {"kind", "at", "details"}; "at" is the worker's clock
-- at the moment (the command's spawn, its exit).  An event already written
-- for the job, attempt, kind and instant is skipped: a call resent after
-- its answer was lost (the database restarted) writes each event once.
create or replace function boxcar.add_worker_events(job_id uuid, worker_id text, attempt integer,
                                                    events jsonb)
returns void language plpgsql volatile
-- Generic plans and no sequential scans: see claim_ids() and report_batch().
set plan_cache_mode = force_generic_plan
set enable_seqscan = off as $$
begin
    insert into boxcar.job_events (job_id, at, kind, worker_id, attempt, details)
    select add_worker_events.job_id, (e.v ->> 'at')::timestamptz, e.v ->> 'kind',
           add_worker_events.worker_id, add_worker_events.attempt, e.v -> 'details'
      from jsonb_array_elements(coalesce(add_worker_events.events, '[]'::jsonb))
           with ordinality as e(v, n)
     where not exists (select from boxcar.job_events o
                        where o.job_id = add_worker_events.job_id
                          and o.kind = e.v ->> 'kind'
                          and o.attempt is not distinct from add_worker_events.attempt
                          and o.at = (e.v ->> 'at')::timestamptz)
     order by e.n;
end $$;

-- Internal (the worker's): records the results of several jobs in one
-- call, row i being ids[i].  Each row is fenced on its own, as complete(),
-- retry_or_fail() and release() fence it (worker and attempt): a job the
-- worker no longer holds is left as it is and answers held = false, and
-- the other rows are recorded all the same.  events[i] are the job's
-- events the worker kept back (see add_worker_events), written before the
-- transition's own ('retried', 'released'; a job's 'finished' is its row,
-- shown last by job_events_json), so the trail keeps the order things
-- happened in.  actions[i]: 'complete' (statuses[i] is
-- the final status), 'retry', 'release', or 'none' (only the events: a
-- job the worker lost).  Rows are taken in id order, as heartbeat() locks
-- them, so two calls of one worker never wait on each other in a cycle.
-- (A job with an artifact storage takes that storage's advisory lock when
-- it finishes: the worker sends such a job in a call of its own.)
-- artifacts[i]: the artifact version the job uploaded, recorded with a
-- 'complete' or a 'retry' (see boxcar.record_job_artifact), or null;
-- artifacts itself may be null.
-- logs[i]: the job's last output chunks, not yet in job_logs, as
-- {"seq": first seq, "chunks": [[stream, "hex bytes"], ...]}, or null
-- (see boxcar.append_report_logs); logs itself may be null.  Written
-- whether the worker still holds the job or not (they are that attempt's
-- output, as append_logs writes them), in the same transaction as the
-- result: a follower never sees a job finished before its last output.
-- Returns one row per input row: its position (ord) and whether the worker
-- still held the job.
--
-- The common batch (every row a 'complete' without an artifact, each job
-- once) is recorded set-based: one insert of all the kept-back events and
-- one update of all the jobs.  Per row,
-- the calls of complete() and add_worker_events() and the statement
-- trigger of each update cost the database about a third of a job's
-- report.  Any other batch takes the rows one by one.
drop function if exists boxcar.report_batch(text, uuid[], integer[], text[], text[], jsonb[], jsonb[],
                                            jsonb[]);
drop function if exists boxcar.report_batch(text, uuid[], integer[], text[], text[], jsonb[], jsonb[],
                                            jsonb[], jsonb[]);
create or replace function boxcar.report_batch(worker_id text, ids uuid[], attempts integer[],
                                               actions text[], statuses text[], results jsonb[],
                                               errors jsonb[], events jsonb[],
                                               artifacts jsonb[] default null,
                                               logs jsonb[] default null)
returns table (ord integer, held boolean) language plpgsql volatile
-- No sequential scans, in anything it calls or fires: as for claim_ids, its
-- statements' plans (and the foreign-key checks of its inserts) live as long
-- as the worker's session, and made while ANALYZE had seen the tables empty
-- they read job_events and jobs whole for every event written
-- (tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
#variable_conflict use_variable
declare
    n integer := coalesce(cardinality(ids), 0);
    i integer;
    completions boolean;
    charged uuid[] := '{}';
begin
    if coalesce(cardinality(attempts), 0) <> n or coalesce(cardinality(actions), 0) <> n
       or coalesce(cardinality(statuses), 0) <> n or coalesce(cardinality(results), 0) <> n
       or coalesce(cardinality(errors), 0) <> n or coalesce(cardinality(events), 0) <> n
       or (artifacts is not null and cardinality(artifacts) <> n)
       or (logs is not null and cardinality(logs) <> n) then
        raise exception 'report_batch: the arrays must have the same length' using errcode = '22023';
    end if;
    select min(s.i) filter (where actions[s.i] is null
                                or actions[s.i] not in ('complete', 'retry', 'release', 'none')),
           coalesce(bool_and(actions[s.i] = 'complete' and artifacts[s.i] is null), false)
           and count(distinct ids[s.i]) = n
      into i, completions
      from generate_subscripts(ids, 1) s(i);
    if i is not null then
        raise exception 'actions[%]: must be complete, retry, release or none', i
            using errcode = '22023';
    end if;
    if completions then
        return query select * from boxcar.report_completions(worker_id, ids, attempts, statuses,
                                                             results, errors, events);
    end if;
    for i in select s.i from generate_subscripts(ids, 1) s(i)
              where not completions order by ids[s.i], s.i loop
        perform boxcar.add_worker_events(ids[i], worker_id, attempts[i], events[i]);
        ord := i;
        held := case actions[i]
            when 'complete' then boxcar.complete(ids[i], worker_id, statuses[i],
                                                 boxcar.record_job_artifact(ids[i], worker_id,
                                                                            attempts[i], results[i],
                                                                            artifacts[i]),
                                                 errors[i], attempts[i])
            when 'retry' then boxcar.retry_or_fail(ids[i], worker_id, errors[i], attempts[i],
                                                   boxcar.record_job_artifact(ids[i], worker_id,
                                                                              attempts[i],
                                                                              results[i],
                                                                              artifacts[i], true))
                              is not null
            when 'release' then boxcar.release(ids[i], worker_id, attempts[i])
            else false end;
        if held and actions[i] in ('complete', 'retry') then
            charged := charged || ids[i];
        end if;
        return next;
    end loop;
    -- The jobs' CPU time, to their scopes' quotas (sql/39_caps_quotas.sql).
    if cardinality(charged) > 0 then
        perform boxcar.charge_cpu(charged);
    end if;
    -- After the rows' locks, which the jobs' transitions take in id order.
    if logs is not null then
        perform boxcar.append_report_logs(ids, attempts, logs);
    end if;
end $$;

-- Internal (report_batch's set-based path): completes the jobs ids, each
-- at most once, fenced as complete() fences one, after writing their
-- kept-back events as add_worker_events() does.  Their 'finished' events
-- are the rows' own (job_events_json), not rows of job_events.  The rows the worker holds
-- are locked first, in id order, as heartbeat() locks them (the update
-- alone would lock them in its join's order).
--
-- The rarer work (the events of jobs the worker lost, the CPU charged to
-- quotas) is in statements of their own, run only when there is some:
-- PostgreSQL sets up every part of a statement at each execution, used or
-- not, and as parts of the update they were set up at every report
-- (replayed on an idle server, a two-job report_batch went from 909 to
-- 848 us, within the spread between runs).
create or replace function boxcar.report_completions(worker_id text, ids uuid[], attempts integer[],
                                                     statuses text[], results jsonb[],
                                                     errors jsonb[], events jsonb[])
returns table (ord integer, held boolean) language plpgsql volatile
-- Generic plans: see claim().
set plan_cache_mode = force_generic_plan as $$
#variable_conflict use_column
declare
    done_i integer[];
    done_ids uuid[];
    done_scopes text[];
begin
    if exists (select from unnest(statuses) s
                where s is null or s not in ('succeeded', 'failed', 'cancelled')) then
        raise exception 'status: must be succeeded, failed or cancelled' using errcode = '22023';
    end if;
    perform from boxcar.jobs j
     where j.id = any (report_completions.ids) and j.worker_id = report_completions.worker_id
       and j.status = 'running'
     order by j.id
       for update;
    -- A held job's kept-back events go in its row (attempt_events, shown by
    -- job_events_json), not in job_events: two inserts fewer a job, with
    -- their index entries and foreign-key checks.  Those already written
    -- (a call resent after its answer was lost) are left out, as
    -- add_worker_events leaves them out; offset 0 keeps that a probe of
    -- job_events_job per event (as an anti join it was planned as a hash of
    -- the whole table).
    with done as (
        update boxcar.jobs j
           set status = r.status, result = r.result, error = r.error,
               finished_at = clock_timestamp(), lease_expires_at = null,
               attempt_events = (select jsonb_agg(e.v order by e.n)
                                   from jsonb_array_elements(r.evs) with ordinality as e(v, n)
                                  where not exists (select from boxcar.job_events o
                                                     where o.job_id = r.id
                                                       and o.kind = e.v ->> 'kind'
                                                       and o.attempt is not distinct from r.attempt
                                                       and o.at = (e.v ->> 'at')::timestamptz
                                                    offset 0))
          from unnest(report_completions.ids, report_completions.attempts,
                      report_completions.statuses, report_completions.results,
                      report_completions.errors, report_completions.events)
               with ordinality as r(id, attempt, status, result, error, evs, i)
         -- id = any (ids) as well: whatever the join's plan, jobs is read
         -- by id (see claim_ids).
         where j.id = r.id and j.id = any (report_completions.ids)
           and j.worker_id = report_completions.worker_id and j.status = 'running'
           and (r.attempt is null or j.attempts = r.attempt)
        returning r.i, j.id, j.queue
    )
    select coalesce(array_agg(d.i), '{}'), coalesce(array_agg(d.id), '{}'),
           array_agg(distinct boxcar.queue_scope(d.queue))
      into done_i, done_ids, done_scopes
      from done d;
    -- The CPU time of scopes with a CPU quota (sql/39_caps_quotas.sql).
    -- Probed by scope: the primary key's index (a scan of the whole table
    -- is priced out here, and so priced it was compiled by JIT at every
    -- call, 50 ms).
    if exists (select from boxcar.scope_quotas q
                where q.scope = any (done_scopes) and q.cpu_seconds_per_day is not null) then
        perform boxcar.charge_cpu(done_ids);
    end if;
    -- The events of a row not held (a job the worker lost) are rows of
    -- job_events, as before, written once: not when the job's row already
    -- holds that attempt's (this call, resent).
    if cardinality(done_i) < cardinality(report_completions.ids) then
        insert into boxcar.job_events (job_id, at, kind, worker_id, attempt, details)
        select r.id, (e.v ->> 'at')::timestamptz, e.v ->> 'kind', report_completions.worker_id,
               r.attempt, e.v -> 'details'
          from unnest(report_completions.ids, report_completions.attempts,
                      report_completions.events) with ordinality as r(id, attempt, evs, i)
         cross join lateral jsonb_array_elements(coalesce(r.evs, '[]'::jsonb))
               with ordinality as e(v, n)
         where r.i <> all (done_i)
           and not exists (select from boxcar.jobs j
                            where j.id = r.id and j.attempts = r.attempt
                              and j.attempt_events is not null
                           offset 0)
           and not exists (select from boxcar.job_events o
                            where o.job_id = r.id
                              and o.kind = e.v ->> 'kind'
                              and o.attempt is not distinct from r.attempt
                              and o.at = (e.v ->> 'at')::timestamptz
                           offset 0)
         order by r.id, e.n;
    end if;
    return query
    select s.i::integer, s.i = any (done_i)
      from generate_subscripts(report_completions.ids, 1) s(i);
end $$;
