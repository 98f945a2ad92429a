-- Liveness by process instance: --worker-id is only a name an operator
-- gives; every worker process gets a new instance id at start, and leases
-- are renewed by instance.  A process restarted under the same name (after
-- kill -9, under systemd or a StatefulSet) no longer keeps its dead
-- predecessor's jobs alive.
alter table boxcar.jobs add column worker_instance text;
alter table boxcar.workers add column instance text;
create index jobs_running_instance on boxcar.jobs (worker_instance)
    where status = 'running';

-- Jobs sharing an artifact storage run one at a time, in enqueue order:
-- the claim looks for an earlier queued or a running job on the same
-- storage, through this column and index.
alter table boxcar.jobs add column artifact_storage text
    generated always as (spec #>> '{artifact,storage}') stored;
create index jobs_artifact_active on boxcar.jobs (artifact_storage, created_at, id)
    where status in ('queued', 'running') and artifact_storage is not null;
