-- The webhook outbox (DESIGN §7): one row per event, written in the
-- transaction that finishes the job, delivered by any worker.

create table boxcar.webhook_deliveries (
    -- Standard Webhooks' webhook-id: stable across retries, one per event.
    id               text primary key,
    job_id           uuid not null references boxcar.jobs (id) on delete cascade,
    event_type       text not null,
    url              text not null,
    body             text not null,           -- signed as is, byte for byte, on every try
    status           text not null default 'pending'
                     check (status in ('pending', 'delivered', 'failed')),
    attempts         integer not null default 0,
    next_attempt_at  timestamptz not null default now(),
    worker_id        text,
    lease_expires_at timestamptz,
    last_status      integer,
    last_error       text,
    created_at       timestamptz not null default clock_timestamp(),
    delivered_at     timestamptz
) with (fillfactor = 80);

create unique index webhook_deliveries_event on boxcar.webhook_deliveries (job_id, event_type);
create index webhook_deliveries_due on boxcar.webhook_deliveries (next_attempt_at)
    where status = 'pending';

-- Database-wide settings; default_webhook_url is set by workers started
-- with BOXCAR_WEBHOOK_URL.
create table boxcar.settings (
    name  text primary key,
    value text not null
);
