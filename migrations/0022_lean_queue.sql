-- A leaner queue (issue 49): fewer index entries per job.
--
-- Every status change of a job is a non-HOT update (status is in the
-- predicates and keys of its indexes), so each new row version gets an
-- entry in every index whose predicate it meets: a claim wrote seven.
-- Three partial indexes held the running rows, one per column the worker's
-- statements filter on.  Running rows are few (at most the cluster's job
-- slots), so one is enough: jobs_running_worker serves the heartbeat and
-- the orphan rescue by worker_id (the instance is checked on the row), and
-- the lease rescue and the running counts read it whole, a few hundred
-- entries at most (tests/sql/20_report_plan.sql checks the reads).
--
-- Plain DROP INDEX, in the migration's transaction: it takes the table's
-- ACCESS EXCLUSIVE lock until the migration commits, which waits for the
-- statements in flight (all short: claims, reports, heartbeats) and holds
-- the next ones back for as long as the rest of the migration takes, well
-- under a second.  DROP INDEX CONCURRENTLY cannot run inside the
-- transaction every migration runs in (boxcar migrate applies them all or
-- none), and nothing here builds an index, which is what would hold the
-- table for long.
drop index if exists boxcar.jobs_running_instance;
drop index if exists boxcar.jobs_running_lease;

-- The list by status (boxcar.jobs_list) and the active queues' counts
-- (boxcar.active_queue_stats) walk an index by status; succeeded jobs
-- leave it.  They are most of the table, so a list of them walks
-- jobs_list (created_at, id) and skips the few others; and a job's
-- success, the end of nearly every job, writes no entry here (the full
-- index took one at each change of status: enqueue, claim, end).
--
-- Building it reads the table and holds its writes back until the
-- migration commits.  On a large table, build it first beside the running
-- replicas, with the same name and definition:
--   create index concurrently jobs_list_status_but_succeeded
--       on boxcar.jobs (status, created_at, id) where status <> 'succeeded';
-- and this migration finds it (if not exists) and only drops the old one.
create index if not exists jobs_list_status_but_succeeded on boxcar.jobs (status, created_at, id)
    where status <> 'succeeded';
drop index if exists boxcar.jobs_list_status;

-- The events a worker kept back for a job's last attempt (started,
-- exited...: [{"kind", "at", "details"}], as it sent them), written with
-- the job's result in its row instead of as rows of job_events (two
-- inserts, four index entries and two foreign-key checks less a job).
-- boxcar.job_events_json shows them in place; boxcar.retry moves them to
-- job_events before it clears the row.  A new nullable column: no table
-- rewrite.
alter table boxcar.jobs add column if not exists attempt_events jsonb;
