-- Core queue schema: jobs, their audit trail, and the live workers.
-- boxcar migrate runs this once, inside its transaction and advisory lock.

create table boxcar.jobs (
    id                  uuid primary key default gen_random_uuid(),
    queue               text not null
                        check (queue ~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$' and length(queue) <= 128),
    priority            smallint not null default 0,
    run_at              timestamptz not null default now(),
    status              text not null default 'queued'
                        check (status in ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempts            integer not null default 0 check (attempts >= 0),
    max_attempts        integer not null default 3 check (max_attempts between 1 and 100),
    spec                jsonb not null,
    idempotency_key     text check (length(idempotency_key) between 1 and 256),
    webhook_url         text check (length(webhook_url) <= 2048),
    worker_id           text,
    lease_expires_at    timestamptz,
    cancel_requested_at timestamptz,
    result              jsonb,
    error               jsonb,
    created_at          timestamptz not null default clock_timestamp(),
    started_at          timestamptz,
    finished_at         timestamptz
) with (fillfactor = 70,
        -- High churn: every job is updated 2-3 times within seconds.
        autovacuum_vacuum_scale_factor = 0.02,
        autovacuum_analyze_scale_factor = 0.02);

create unique index jobs_idempotency_key on boxcar.jobs (idempotency_key)
    where idempotency_key is not null;
-- The claim path: only queued rows, in claim order.
create index jobs_claim on boxcar.jobs (queue, priority desc, run_at, id)
    where status = 'queued';
-- Rescue and heartbeat scan running rows only.
create index jobs_running_lease on boxcar.jobs (lease_expires_at)
    where status = 'running';
create index jobs_running_worker on boxcar.jobs (worker_id)
    where status = 'running';
create index jobs_finished on boxcar.jobs (finished_at)
    where status in ('succeeded', 'failed', 'cancelled');

create table boxcar.job_events (
    id         bigint generated always as identity primary key,
    job_id     uuid not null references boxcar.jobs (id) on delete cascade,
    at         timestamptz not null default clock_timestamp(),
    kind       text not null,
    worker_id  text,
    attempt    integer,
    details    jsonb
);
create index job_events_job on boxcar.job_events (job_id, id);

create table boxcar.workers (
    id            text primary key,
    host          text not null,
    pid           integer,
    queues        text[] not null,
    concurrency   integer not null,
    version       text not null,
    started_at    timestamptz not null default now(),
    heartbeat_at  timestamptz not null default now(),
    state         text not null default 'running'
                  check (state in ('running', 'draining', 'stopped')),
    running       integer not null default 0
);
