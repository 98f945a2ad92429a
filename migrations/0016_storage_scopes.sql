-- Storages and sessions belong to a scope (issue 48, docs/tenants.md
-- "Storages and sessions belong to a scope").  A scope is
-- boxcar.queue_scope() of a queue: "acme" for "acme/q", the queue itself
-- for a queue without "/".
--
-- Every storage gets an owner scope: the scope of the queue of the job
-- that created it, or the scope given to the CLI (`--scope`, "default"
-- when none is given).  Names stay global (the S3 layout is unchanged): a
-- name another scope owns is refused.  A job may read (volume, image, fork
-- source) only storages its scope owns, or that are shared with its scope
-- (storage_shares) or public; it may write (artifact) only its own.  The
-- functions are in sql/70_storage.sql and sql/68_storage_scopes.sql.
--
-- Existing storages: the owner is the scope of the queue of the job that
-- wrote their first version, when that job is still known; a storage with
-- no known job (pushed with the CLI, or its job pruned) is owned by
-- "default", and a session's storage by its session's scope.  An operator
-- who wants another owner moves it with boxcar.set_storage_owner.
--
-- Sessions: their storage was "session-<id>", a global name, so a session
-- id belonged to the first scope using it.  A new session's storage name
-- now includes its scope (boxcar.session_storage_name), so two scopes may
-- use the same id; existing sessions keep their storage.

alter table boxcar.storages
    add column owner_scope text not null default 'default'
        check (owner_scope ~ '^[A-Za-z0-9_.-]{1,128}$'),
    add column public boolean not null default false;

update boxcar.storages s
   set owner_scope = coalesce(
           (select case when strpos(j.queue, '/') > 0 then split_part(j.queue, '/', 1) else j.queue end
              from boxcar.storage_versions v join boxcar.jobs j on j.id = v.job_id
             where v.storage = s.name
             order by v.id
             limit 1),
           'default');
update boxcar.storages s set owner_scope = x.scope
  from boxcar.sessions x where x.storage = s.name;

create index storages_owner on boxcar.storages (owner_scope, name);

-- The scopes a storage is shared with, read-only.
create table boxcar.storage_shares (
    storage    text not null references boxcar.storages (name) on delete cascade,
    scope      text not null check (scope ~ '^[A-Za-z0-9_.-]{1,128}$'),
    created_at timestamptz not null default now(),
    primary key (storage, scope)
);

-- A session's storage: "session-<id>" (existing rows, and sessions of
-- scope "default"), or a name that includes the scope.
alter table boxcar.sessions drop constraint sessions_storage_check;
alter table boxcar.sessions add constraint sessions_storage_check
    check (storage ~ '^session-[A-Za-z0-9_.-]{1,120}$');
