-- Job dependencies (issue 49; the functions are in sql/36_dependencies.sql,
-- README "For web apps").
--
-- job_dependencies: job_id runs only after depends_on has succeeded.  A
-- row per edge, indexed both ways: the primary key finds a job's
-- dependencies (is it still waiting?), job_dependencies_on its dependents
-- (whom does a finish unblock or cancel?).  Deleting either job (prune)
-- deletes the edge.
create table boxcar.job_dependencies (
    job_id     uuid not null references boxcar.jobs (id) on delete cascade,
    depends_on uuid not null references boxcar.jobs (id) on delete cascade,
    primary key (job_id, depends_on),
    check (job_id <> depends_on)
);
create index job_dependencies_on on boxcar.job_dependencies (depends_on);

-- has_dependents: set on a job when a dependent is enqueued on it, never
-- cleared.  The finish trigger's WHEN reads it from the row, so a job no
-- one depends on (nearly all) finishes without calling any dependency
-- function.  A boolean with a constant default: adding it rewrites
-- nothing, it is in no index (updates stay HOT-eligible), and it fits in
-- the row's existing alignment padding.
alter table boxcar.jobs add column has_dependents boolean not null default false;
