-- Housekeeping leadership and remote drain.

-- One row per leadership role; the holder renews expires_at.  A lease row
-- rather than a session advisory lock, so leadership also works through
-- PgBouncer in transaction mode, where sessions are not the client's.
create table boxcar.leaders (
    role       text primary key,
    worker_id  text not null,
    since      timestamptz not null default now(),
    expires_at timestamptz not null
);

alter table boxcar.workers add column drain_requested_at timestamptz;
