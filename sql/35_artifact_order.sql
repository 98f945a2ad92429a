-- Artifact storages are sessions: their jobs run one at a time, in
-- enqueue order, across all workers.  Of a storage's queued and running
-- jobs, only the first is unblocked; enqueueing blocks a job behind any
-- active one, and a job that finishes unblocks the next.  Both steps hold
-- a transaction-scoped advisory lock on the storage's name, so they never
-- interleave, whatever the number of enqueuers and workers.
--
-- A job waiting on dependencies (sql/36_dependencies.sql) is blocked but
-- not yet in the line: no job waits behind it, and none of these steps
-- unblocks it.  It joins the line when its dependencies have succeeded.

create or replace function boxcar.lock_artifact_storage(storage text)
returns void language sql volatile as $$
    select pg_advisory_xact_lock(hashtextextended('boxcar.artifact:' || storage, 0))
$$;

-- BEFORE INSERT (the generated artifact_storage is not computed yet, so
-- the spec is read directly).
create or replace function boxcar.block_artifact_job() returns trigger
language plpgsql as $$
declare
    storage text := new.spec #>> '{artifact,storage}';
begin
    -- Blocked already: enqueued with dependencies, it joins the line later.
    if storage is null or new.status <> 'queued' or new.blocked then
        return new;
    end if;
    perform boxcar.lock_artifact_storage(storage);
    new.blocked := exists (select 1 from boxcar.jobs o
                            where o.artifact_storage = storage
                              and (o.status = 'running'
                                   or (o.status = 'queued'
                                       and (not o.blocked or not boxcar.dependencies_pending(o.id)))));
    return new;
end $$;

create or replace trigger jobs_block_artifact
    before insert on boxcar.jobs
    for each row execute function boxcar.block_artifact_job();

-- Unblocks the first blocked job of a storage that has no unblocked active
-- job (the update trigger, boxcar.notify_job_change, wakes the
-- workers of its queue).  Returns its id, or null.
create or replace function boxcar.unblock_artifact_next(storage text)
returns uuid language plpgsql volatile as $$
declare
    next boxcar.jobs;
begin
    perform boxcar.lock_artifact_storage(storage);
    if exists (select 1 from boxcar.jobs o
                where o.artifact_storage = storage
                  and (o.status = 'running' or (o.status = 'queued' and not o.blocked))) then
        return null;
    end if;
    update boxcar.jobs j set blocked = false
     where j.id = (select o.id from boxcar.jobs o
                    where o.artifact_storage = storage and o.status = 'queued' and o.blocked
                      and not boxcar.dependencies_pending(o.id)
                    order by o.created_at, o.id limit 1)
    returning j.* into next;
    return next.id;
end $$;

create or replace function boxcar.artifact_job_done() returns trigger
language plpgsql as $$
begin
    perform boxcar.unblock_artifact_next(new.artifact_storage);
    return null;
end $$;

create or replace trigger jobs_artifact_done
    after update of status on boxcar.jobs
    for each row
    when (new.artifact_storage is not null and not old.blocked
          and old.status in ('queued', 'running')
          and new.status in ('succeeded', 'failed', 'cancelled'))
    execute function boxcar.artifact_job_done();

-- A safety net the housekeeping leader runs with the lease rescue: a
-- storage whose active jobs are all blocked (its first job was deleted by
-- hand, say) gets its next one unblocked.  Returns how many it unblocked.
create or replace function boxcar.unblock_artifact_stalled()
returns integer language plpgsql volatile
-- No sequential scans: see boxcar.claim_ids (tests/sql/20_report_plan.sql).
set enable_seqscan = off as $$
declare
    s text;
    n integer := 0;
begin
    -- artifact_storage is not null: always so for a blocked job, said so
    -- that jobs_artifact_active (whose predicate needs it) serves the scan.
    for s in select distinct j.artifact_storage from boxcar.jobs j
              where j.status = 'queued' and j.blocked and j.artifact_storage is not null
                and not boxcar.dependencies_pending(j.id)
                and not exists (select 1 from boxcar.jobs o
                                 where o.artifact_storage = j.artifact_storage
                                   and (o.status = 'running'
                                        or (o.status = 'queued' and not o.blocked))) loop
        if boxcar.unblock_artifact_next(s) is not null then
            n := n + 1;
        end if;
    end loop;
    return n;
end $$;
