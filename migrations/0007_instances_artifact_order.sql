-- Liveness by process instance: --worker-id is only a name an operator
-- gives; every worker process gets a new instance id at start, and leases
-- are renewed by instance.  A process restarted under the same name (after
-- kill -9, under systemd or a StatefulSet) no longer keeps its dead
-- predecessor's jobs alive.
alter table boxcar.jobs add column worker_instance text;
alter table boxcar.workers add column instance text;
create index jobs_running_instance on boxcar.jobs (worker_instance)
    where status = 'running';

-- Jobs sharing an artifact storage run one at a time, in enqueue order.
-- Of a storage's queued and running jobs only the first is claimable: the
-- others are "blocked" (set when they are enqueued) until the one before
-- them finishes (sql/35_artifact_order.sql).  A flag, so the claim stays
-- one index scan however long a session's backlog.
alter table boxcar.jobs add column artifact_storage text
    generated always as (spec #>> '{artifact,storage}') stored;
alter table boxcar.jobs add column blocked boolean not null default false;
create index jobs_artifact_active on boxcar.jobs (artifact_storage, created_at, id)
    where status in ('queued', 'running') and artifact_storage is not null;
update boxcar.jobs j set blocked = true
 where j.status = 'queued' and j.artifact_storage is not null
   and exists (select 1 from boxcar.jobs o
                where o.artifact_storage = j.artifact_storage and o.status in ('queued', 'running')
                  and (o.status = 'running' or (o.created_at, o.id) < (j.created_at, j.id)));
drop index boxcar.jobs_claim;
create index jobs_claim on boxcar.jobs (queue, priority desc, run_at, id)
    where status = 'queued' and not blocked;
