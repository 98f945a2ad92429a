-- Sessions (issue 47): a job may name a session, a live sandbox that
-- outlives the job and runs the session's next jobs, whose files are
-- checkpointed into the session's artifact storage, "session-<id>".
-- Sessions are keyed by (scope, id), scope being boxcar.queue_scope() of
-- the job's queue; storages are global names, so a session id belongs to
-- the first scope that uses it (storage is unique).  The functions are in
-- sql/75_sessions.sql.
create table boxcar.sessions (
    scope            text not null,
    -- The storage name rules, 8 characters short of 128 for "session-".
    id               text not null check (id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,119}$'),
    storage          text not null unique,
    state            text not null default 'stopped' check (state in ('live', 'stopped', 'ended')),
    -- The worker (name and process instance) whose sandbox it is, until
    -- held_until: the claim gives the session's jobs to that worker only.
    holder           text,
    holder_instance  text,
    held_until       timestamptz,
    idle_timeout_s   double precision not null default 300 check (idle_timeout_s between 1 and 86400),
    created_at       timestamptz not null default now(),
    started_at       timestamptz, -- when it last went live
    last_job_at      timestamptz,
    ended_at         timestamptz,
    end_requested_at timestamptz,
    starts           integer not null default 0, -- sandboxes started for it
    resumes          integer not null default 0, -- of those, started from a checkpoint
    jobs             integer not null default 0,
    idle_ends        integer not null default 0,
    evictions        integer not null default 0,
    forked_from      text,
    forked_version   text check (forked_version ~ '^[0-9a-f]{64}$'),
    primary key (scope, id),
    constraint sessions_storage_check check (storage = 'session-' || id),
    constraint sessions_holder_check check ((holder is null) = (held_until is null))
);
-- A worker's renewal finds its sessions; the housekeeping, the lapsed ones.
create index sessions_holder on boxcar.sessions (holder) where holder is not null;
create index sessions_held_until on boxcar.sessions (held_until) where holder is not null;

-- The claim reads it to keep a session's jobs on its holder.  Stored, as
-- artifact_storage is: computed once per row, not at every claim.
alter table boxcar.jobs add column session_id text
    generated always as (spec #>> '{session,id}') stored;
-- A session's active jobs (session_list's counts, the release's wake-up).
-- The claim needs no index of its own: it filters the rows jobs_claim
-- yields, of which a session has at most one (its artifact storage lets
-- one job at a time through).
create index jobs_session_active on boxcar.jobs (session_id)
    where status in ('queued', 'running') and session_id is not null;
