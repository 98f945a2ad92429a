-- Operator caps per queue and quotas per scope (issue 48; the functions
-- are in sql/39_caps_quotas.sql, docs/tenants.md "Caps and quotas").
--
-- queue_caps: the most a job of the queue may ask for.  caps is the object
-- boxcar.set_queue_caps checked (keys: memory_mb, cpus, pids, disk_mb,
-- files, timeout_s, output_bytes, startup_timeout_s, session_idle_s,
-- images, sessions).  Its own table, not columns of queue_config: a queue
-- with caps only stays on the claim's fast path, which a queue_config row
-- would take it off.
create table boxcar.queue_caps (
    queue      text primary key
               check (queue ~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$' and queue !~ '(^|/)\.\.?(/|$)'
                      and length(queue) <= 128),
    caps       jsonb not null check (jsonb_typeof(caps) = 'object'),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

-- scope_quotas: what a scope (boxcar.queue_scope) may use, enforced by the
-- claim: at most max_running of its jobs running at once, over all its
-- queues, and no new claim once its jobs finished this UTC day used
-- cpu_seconds_per_day.  A scope without a row is unlimited.
create table boxcar.scope_quotas (
    scope               text primary key
                        check (scope ~ '^[A-Za-z0-9_.-]+$' and scope !~ '^\.\.?$' and length(scope) <= 128),
    max_running         integer check (max_running between 1 and 1000000),
    cpu_seconds_per_day bigint check (cpu_seconds_per_day between 1 and 100000000000),
    created_at          timestamptz not null default now(),
    updated_at          timestamptz not null default now()
);

-- The CPU time (the result's cpu_ms) of a scope's jobs that finished (or
-- were retried) on a UTC day, added by the report in its transaction.
-- Kept only for scopes with a CPU quota: the counter is one row per scope
-- and day, which every report of that scope updates.
create table boxcar.scope_cpu_usage (
    scope  text not null,
    day    date not null,
    cpu_ms bigint not null default 0,
    jobs   bigint not null default 0,
    primary key (scope, day)
);
