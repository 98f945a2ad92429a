-- Periodic jobs and per-queue limits.
--
-- schedules: one row per periodic job, managed with boxcar.schedule_add/
-- ls/rm/pause/resume (sql/45_schedules.sql).  The housekeeping leader
-- enqueues a run when next_run_at passes and moves next_run_at on, in one
-- transaction; the run's idempotency key is the schedule's name and
-- scheduled time, so a run is enqueued once whatever happens to leaders.
create table boxcar.schedules (
    name        text primary key check (name ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    cron        text not null check (length(cron) <= 256),
    time_zone   text not null default 'UTC' check (length(time_zone) <= 64),
    queue       text not null
                check (queue ~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$' and queue !~ '(^|/)\.\.?(/|$)'
                       and length(queue) <= 128),
    spec        jsonb not null,
    priority    smallint not null default 0,
    max_attempts integer not null default 3 check (max_attempts between 1 and 100),
    enabled     boolean not null default true,
    next_run_at timestamptz,
    last_run_at timestamptz,
    last_job_id uuid,
    last_error  text,
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now()
);
-- The leader's tick looks for due, enabled schedules.
create index schedules_due on boxcar.schedules (next_run_at) where enabled;

-- queue_config: limits that hold across every replica, enforced by
-- boxcar.claim (sql/30_claim.sql).  A queue without a row is unlimited.
-- tokens/tokens_at are the rate limit's token bucket, written by the claim
-- under this row's lock.
create table boxcar.queue_config (
    queue       text primary key
                check (queue ~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$' and queue !~ '(^|/)\.\.?(/|$)'
                       and length(queue) <= 128),
    max_running integer check (max_running between 1 and 1000000),
    rate_per_s  double precision check (rate_per_s > 0 and rate_per_s <= 1000000),
    paused      boolean not null default false,
    tokens      double precision not null default 0,
    tokens_at   timestamptz,
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now()
);
