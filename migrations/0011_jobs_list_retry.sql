-- Listing jobs newest first, a page at a time, and re-running a finished
-- job by hand (boxcar.jobs_list, boxcar.retry in sql/55_list_retry.sql).

-- Keyset pagination over (created_at desc, id desc): each filter shape
-- (none, queue, status) walks one index backwards from the cursor and
-- stops after a page.  created_at, id and queue never change; status does,
-- but a status change is already a non-HOT update (the claim index's
-- predicate names it), so this index adds one entry per change, not HOT
-- updates lost.
create index jobs_list on boxcar.jobs (created_at, id);
create index jobs_list_queue on boxcar.jobs (queue, created_at, id);
create index jobs_list_status on boxcar.jobs (status, created_at, id);

-- A job retried by hand runs again with a fresh attempt budget; it may then
-- finish a second time, and its webhook event is sent again: deliveries are
-- unique per (job, event type, run), run being the job's manual_retries
-- when the event was written.
alter table boxcar.jobs add column manual_retries integer not null default 0;
alter table boxcar.webhook_deliveries add column run integer not null default 0;
create unique index webhook_deliveries_event_run
    on boxcar.webhook_deliveries (job_id, event_type, run);
drop index boxcar.webhook_deliveries_event;
