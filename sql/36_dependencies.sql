-- Job dependencies (README "For web apps", migrations/0020): a job enqueued
-- with depends_on runs only after each of those jobs has succeeded.  It
-- is queued but blocked (the claim's "not blocked") until then, and is
-- unblocked in the transaction of the last dependency's success, by the
-- finish trigger below: no polling.  A dependency that fails for good or
-- is cancelled cancels its waiting dependents, recursively, with error
-- DEPENDENCY_FAILED naming it; a manual retry of it (boxcar.retry) brings
-- them back.
--
-- Locking.  enqueue locks each dependency (in id order, so enqueuers never
-- deadlock) until it commits, so a dependency cannot finish between its
-- status being read and the edge being written; a finishing dependency
-- locks each waiting dependent before reading the others' statuses, so
-- two dependencies succeeding at once cannot both believe the other
-- pending.
--
-- Artifact order (sql/35_artifact_order.sql): a job waiting on
-- dependencies is not in its storage's line yet (nothing waits behind
-- it); once they have succeeded it joins the line, unblocked only if the
-- storage has no other active job.

-- Whether the job waits on a dependency that has not succeeded.  Each
-- dependency is read by its id: a query over the dependencies' statuses
-- could walk a partial index of jobs by status whole (see
-- boxcar.claim_ids, tests/sql/20_report_plan.sql).
create or replace function boxcar.dependencies_pending(id uuid)
returns boolean language plpgsql stable as $$
declare
    dep uuid;
begin
    for dep in select d.depends_on from boxcar.job_dependencies d
                where d.job_id = dependencies_pending.id loop
        if (select a.status from boxcar.jobs a where a.id = dep) is distinct from 'succeeded' then
            return true;
        end if;
    end loop;
    return false;
end $$;

-- The job's dependencies, sorted (null when it has none).
create or replace function boxcar.job_depends_on(id uuid)
returns uuid[] language sql stable as $$
    select array_agg(d.depends_on order by d.depends_on) from boxcar.job_dependencies d
     where d.job_id = job_depends_on.id
$$;

-- A dependency of the job that failed or was cancelled, or null (read
-- by id, as in dependencies_pending).
create or replace function boxcar.dependency_failed(id uuid)
returns boxcar.jobs language plpgsql stable as $$
declare
    dep uuid;
    a boxcar.jobs;
begin
    for dep in select d.depends_on from boxcar.job_dependencies d
                where d.job_id = dependency_failed.id order by d.depends_on loop
        select * into a from boxcar.jobs x where x.id = dep;
        if a.status in ('failed', 'cancelled') then
            return a;
        end if;
    end loop;
    return null;
end $$;

-- The error of a job cancelled because dependency dep ended with status
-- ('failed', else it was cancelled).
create or replace function boxcar.dependency_error(dep uuid, status text)
returns jsonb language sql immutable as $$
    select jsonb_build_object('code', 'DEPENDENCY_FAILED',
                              'message', format('dependency %s %s', dep,
                                                case status when 'failed' then 'failed'
                                                            else 'was cancelled' end),
                              'dependency', dep)
$$;

-- Records that job_id (new, queued, blocked, of queue) depends on deps,
-- which must be jobs of its scope (22023 naming an id that is not), and
-- settles it at once: unblocked if they have all succeeded, cancelled if
-- one failed or was cancelled.  Called by enqueue and enqueue_many.
create or replace function boxcar.add_dependencies(job_id uuid, queue text, deps uuid[])
returns void language plpgsql volatile as $$
declare
    scope text := boxcar.queue_scope(queue);
    dep uuid;
    dep_queue text;
begin
    foreach dep in array (select array_agg(distinct x order by x) from unnest(deps) x) loop
        -- The flag makes the dependency's finish call the trigger below;
        -- the lock (the update's, or a share lock when it is set already)
        -- holds its finish until this commits.
        update boxcar.jobs a set has_dependents = true
         where a.id = dep and not a.has_dependents
         returning a.queue into dep_queue;
        if not found then
            select a.queue into dep_queue from boxcar.jobs a where a.id = dep for share;
        end if;
        -- One message for a job that does not exist and one of another
        -- scope: no scope learns of another's jobs.
        if dep_queue is null or boxcar.queue_scope(dep_queue) <> scope then
            raise exception 'depends_on: job % not found in scope "%"', dep, scope
                using errcode = '22023';
        end if;
        insert into boxcar.job_dependencies (job_id, depends_on) values (add_dependencies.job_id, dep);
    end loop;
    perform boxcar.dependencies_settle(job_id);
end $$;

-- Settles a queued job blocked on its dependencies: cancels it when one
-- failed or was cancelled, unblocks it when all have succeeded (behind
-- its artifact storage's active job, if any), else leaves it waiting.
-- by names the dependency whose end led here (null: at enqueue).
create or replace function boxcar.dependencies_settle(id uuid, by uuid default null)
returns void language plpgsql volatile as $$
declare
    j boxcar.jobs;
    failed boxcar.jobs;
    wait boolean := false;
begin
    -- Locked first, read after: a dependency succeeding concurrently has
    -- committed by the time this lock is granted, and the next statement
    -- sees it.
    select * into j from boxcar.jobs x where x.id = dependencies_settle.id
       and x.status = 'queued' and x.blocked for update;
    if not found then
        return;
    end if;
    failed := boxcar.dependency_failed(j.id);
    if failed.id is not null then
        perform boxcar.dependencies_cancel(array[j.id], failed);
        return;
    end if;
    if boxcar.dependencies_pending(j.id) then
        return;
    end if;
    if j.artifact_storage is not null then
        perform boxcar.lock_artifact_storage(j.artifact_storage);
        wait := exists (select 1 from boxcar.jobs o
                         where o.artifact_storage = j.artifact_storage and o.id <> j.id
                           and (o.status = 'running'
                                or (o.status = 'queued'
                                    and (not o.blocked or not boxcar.dependencies_pending(o.id)))));
    end if;
    update boxcar.jobs x set blocked = wait where x.id = j.id;
    perform boxcar.add_event(j.id, 'dependencies_met', null, j.attempts,
                             jsonb_build_object('dependency', by, 'artifact_wait', wait));
end $$;

-- Cancels the queued jobs ids, whose dependency dep failed or was
-- cancelled, and every queued job that waits on them, at any depth, in
-- one UPDATE: the finish trigger each fires finds nothing left to cancel,
-- so a chain of any length recurses no deeper than one trigger.  Each
-- names the dependency it waited on.  Their storages' next jobs go.
create or replace function boxcar.dependencies_cancel(ids uuid[], dep boxcar.jobs)
returns void language plpgsql volatile
-- Index probes only, whatever the statistics say (see boxcar.claim_ids,
-- tests/sql/20_report_plan.sql): a join with jobs planned on tables that
-- looked empty read every job.
set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off as $$
declare
    todo uuid[] := ids;
    bys uuid[] := array_fill(dep.id, array[cardinality(ids)]);
    frontier uuid[] := ids;
    nxt uuid[];
    nby uuid[];
    r record;
    s text;
    storages text[] := '{}';
begin
    if cardinality(ids) = 0 then
        return;
    end if;
    -- Breadth first, each job once (a diamond is not walked twice).
    loop
        select array_agg(x.job_id), array_agg(x.depends_on) into nxt, nby
          from (select distinct on (e.job_id) e.job_id, e.depends_on
                  from boxcar.job_dependencies e join boxcar.jobs j on j.id = e.job_id
                 where e.depends_on = any (frontier) and j.status = 'queued'
                   and not (e.job_id = any (todo))
                 order by e.job_id, e.depends_on) x;
        exit when nxt is null;
        todo := todo || nxt;
        bys := bys || nby;
        frontier := nxt;
    end loop;
    for r in
        update boxcar.jobs j
           set status = 'cancelled', finished_at = clock_timestamp(), cancel_requested_at = now(),
               -- Deeper ones' dependency was cancelled by this very update.
               error = boxcar.dependency_error(c.by, case when c.by = dep.id then dep.status
                                                          else 'cancelled' end)
          from unnest(todo, bys) c(id, by)
         where j.id = c.id and j.status = 'queued'
        returning j.id, j.attempts, c.by as dep_id, j.artifact_storage
    loop
        perform boxcar.add_event(r.id, 'dependency_failed', null, r.attempts,
                                 jsonb_build_object('dependency', r.dep_id));
        if r.artifact_storage is not null and not r.artifact_storage = any (storages) then
            storages := storages || r.artifact_storage;
        end if;
    end loop;
    -- A job waiting on dependencies is not in its storage's line, but one
    -- that had joined it may have been: the next goes.
    foreach s in array storages loop
        perform boxcar.unblock_artifact_next(s);
    end loop;
end $$;

-- A dependency finished: its waiting dependents are unblocked (when it
-- was their last) or cancelled.
create or replace function boxcar.dependency_done() returns trigger
language plpgsql
-- Index probes only, whatever the statistics say (see boxcar.claim_ids,
-- tests/sql/20_report_plan.sql): a join with jobs planned on tables that
-- looked empty read every job.
set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off as $$
declare
    d uuid;
begin
    if new.status = 'succeeded' then
        for d in select x.job_id from boxcar.job_dependencies x join boxcar.jobs j on j.id = x.job_id
                  where x.depends_on = new.id and j.status = 'queued' and j.blocked
                  order by x.job_id loop
            perform boxcar.dependencies_settle(d, new.id);
        end loop;
    else
        perform boxcar.dependencies_cancel(
            array(select x.job_id from boxcar.job_dependencies x join boxcar.jobs j on j.id = x.job_id
                   where x.depends_on = new.id and j.status = 'queued' order by x.job_id),
            new);
    end if;
    return null;
end $$;

-- WHEN reads the row's flag: a job no one depends on never calls it.
create or replace trigger jobs_dependency_done
    after update of status on boxcar.jobs
    for each row
    when (new.has_dependents and old.status is distinct from new.status
          and new.status in ('succeeded', 'failed', 'cancelled'))
    execute function boxcar.dependency_done();

-- After a manual retry of id (boxcar.retry): the jobs cancelled because
-- it failed come back, queued and blocked on it, and theirs after them.
-- One that waits on another failed dependency as well stays cancelled,
-- its error naming that one (whose retry brings it back).  Returns how
-- many came back.
create or replace function boxcar.dependencies_revive(id uuid, requested_by text)
returns integer language plpgsql volatile
-- Index probes only, whatever the statistics say (see boxcar.claim_ids,
-- tests/sql/20_report_plan.sql): a join with jobs planned on tables that
-- looked empty read every job.
set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off as $$
declare
    todo uuid[] := array[id];
    cur uuid;
    d boxcar.jobs;
    other boxcar.jobs;
    n integer := 0;
begin
    while cardinality(todo) > 0 loop
        cur := todo[1];
        todo := todo[2:];
        for d in select j.* from boxcar.job_dependencies x join boxcar.jobs j on j.id = x.job_id
                  where x.depends_on = cur and j.status = 'cancelled'
                    and j.error ->> 'code' = 'DEPENDENCY_FAILED' and j.error ->> 'dependency' = cur::text
                  order by j.id for update of j loop
            other := boxcar.dependency_failed(d.id);
            if other.id is not null then
                update boxcar.jobs j set error = boxcar.dependency_error(other.id, other.status) where j.id = d.id;
                continue;
            end if;
            -- manual_retries: the new run's webhook is a new delivery.
            update boxcar.jobs j
               set status = 'queued', blocked = true, finished_at = null, cancel_requested_at = null,
                   error = null, result = null, manual_retries = j.manual_retries + 1
             where j.id = d.id;
            perform boxcar.add_event(d.id, 'dependency_retried', null, d.attempts,
                                     jsonb_build_object('dependency', cur, 'requested_by', requested_by,
                                                        'previous_error', d.error));
            todo := todo || d.id;
            n := n + 1;
        end loop;
    end loop;
    return n;
end $$;
