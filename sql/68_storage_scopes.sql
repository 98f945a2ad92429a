-- Storages belong to a scope (migrations/0016_storage_scopes.sql,
-- docs/tenants.md "Storages and sessions belong to a scope").  A job may
-- read (a volume, its image, a session's fork source) a storage its
-- queue's scope owns, one shared with that scope, or a public one; it may
-- write (its artifact) only one its scope owns.  Every job row a worker may
-- run is checked here, whatever wrote it: enqueue, schedules, direct
-- inserts (a BEFORE INSERT trigger), and a manual retry (a BEFORE UPDATE
-- trigger).  A refusal never tells a storage of another scope from one
-- that does not exist: both are "not found in scope".  Only an artifact
-- name another scope took is told as "not writable": names are global, a
-- taken one cannot be had, and the answer says nothing of its content.

-- Whether scope may read storage: a live storage it owns, shares or that
-- is public.
create or replace function boxcar.storage_readable(storage text, scope text)
returns boolean language sql stable as $$
    select exists (select from boxcar.storages s
                    where s.name = storage_readable.storage and s.removed_at is null
                      and (s.owner_scope = storage_readable.scope or s.public
                           or exists (select from boxcar.storage_shares x
                                       where x.storage = s.name and x.scope = storage_readable.scope)))
$$;

-- Whether version ("latest" or a sha256) is a live version of storage:
-- "latest" always is (a storage without versions fails at run time, as it
-- did before, with the worker's message).
create or replace function boxcar.storage_has_version(storage text, version text)
returns boolean language sql stable as $$
    select coalesce(version, 'latest') = 'latest'
        or exists (select from boxcar.storage_versions v
                    where v.storage = storage_has_version.storage and v.sha256 = storage_has_version.version
                      and v.removed_at is null)
$$;

-- The first storage of spec that its job (of scope) may not use, as a
-- spec error, or null.  A malformed spec is left to check_spec and the
-- worker (no field is trusted to be of its type here).
create or replace function boxcar.storage_scope_error(spec jsonb, scope text)
returns text language plpgsql stable as $$
declare
    vol jsonb;
    i integer := 0;
    st text;
    ver text;
    owner text;
begin
    if jsonb_typeof(spec -> 'volumes') = 'array' then
        for vol in select * from jsonb_array_elements(spec -> 'volumes') loop
            if jsonb_typeof(vol -> 'storage') = 'string' then
                st := vol ->> 'storage';
                ver := coalesce(vol ->> 'version', 'latest');
                if not boxcar.storage_readable(st, scope) then
                    return format('volumes[%s].storage: storage "%s" not found in scope "%s"', i, st, scope);
                end if;
                if not boxcar.storage_has_version(st, ver) then
                    return format('volumes[%s].version: storage "%s" has no version %s', i, st, ver);
                end if;
            end if;
            i := i + 1;
        end loop;
    end if;
    if jsonb_typeof(spec #> '{image,storage}') = 'string' then
        st := spec #>> '{image,storage}';
        ver := coalesce(spec #>> '{image,version}', 'latest');
        if not boxcar.storage_readable(st, scope) then
            return format('image.storage: storage "%s" not found in scope "%s"', st, scope);
        end if;
        if not boxcar.storage_has_version(st, ver) then
            return format('image.version: storage "%s" has no version %s', st, ver);
        end if;
    end if;
    if jsonb_typeof(spec #> '{artifact,storage}') = 'string' then
        st := spec #>> '{artifact,storage}';
        ver := coalesce(spec #>> '{artifact,base}', 'latest');
        select s.owner_scope into owner from boxcar.storages s where s.name = st;
        if found and owner <> scope then
            return format('artifact.storage: storage "%s" is not writable in scope "%s"', st, scope);
        end if;
        if ver not in ('latest', 'empty') and not boxcar.storage_has_version(st, ver) then
            return format('artifact.base: storage "%s" has no version %s', st, ver);
        end if;
    end if;
    return null;
end $$;

-- BEFORE INSERT of a job a worker may run (queued or running), BEFORE
-- UPDATE of a finished one queued again (a manual retry), and of the spec
-- or queue (the scope) of one that may run: raises BAD_SPEC
-- for a storage the job's scope may not use (storage_scope_error), and
-- reserves the job's artifact storage for its scope when there is none
-- yet, so that no other scope takes the name before the job's version is
-- recorded.  Fires after jobs_a_session (names fire in order), which fills
-- a session job's artifact.
create or replace function boxcar.jobs_storage_scope() returns trigger
language plpgsql as $$
declare
    sc text := boxcar.queue_scope(new.queue);
    e text;
    art text;
begin
    if new.status not in ('queued', 'running') then
        return new;
    end if;
    e := boxcar.storage_scope_error(new.spec, sc);
    -- A malformed spec (a row written around enqueue, which checks it) is
    -- the worker's to fail at claim, naming the field, before it resolves
    -- any storage; spec_error only then: enqueue ran it already.
    if e is not null then
        if boxcar.spec_error(new.spec) is null then
            raise exception 'BAD_SPEC: %', e
                using errcode = '22023', hint = 'the job spec is documented in docs/job-spec.md';
        end if;
        return new;
    end if;
    art := case when jsonb_typeof(new.spec #> '{artifact,storage}') = 'string'
                then new.spec #>> '{artifact,storage}' end;
    if art ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$' then
        insert into boxcar.storages (name, kind, owner_scope) values (art, 'artifact', sc)
        on conflict (name) do nothing;
        -- A concurrent reservation by another scope won: refused as above.
        if (select s.owner_scope from boxcar.storages s where s.name = art) <> sc then
            raise exception 'BAD_SPEC: artifact.storage: storage "%" is not writable in scope "%"', art, sc
                using errcode = '22023', hint = 'the job spec is documented in docs/job-spec.md';
        end if;
    end if;
    return new;
end $$;

create or replace trigger jobs_b_storage_scope
    before insert on boxcar.jobs
    for each row when (new.spec ?| array['volumes', 'image', 'artifact', 'session'])
    execute function boxcar.jobs_storage_scope();

create or replace trigger jobs_b_storage_scope_retry
    before update of status on boxcar.jobs
    for each row when (old.status in ('succeeded', 'failed', 'cancelled') and new.status = 'queued'
                       and new.spec ?| array['volumes', 'image', 'artifact', 'session'])
    execute function boxcar.jobs_storage_scope();

-- Only statements that set spec or queue (no API function does on a job
-- that may run; an UPDATE written by hand might): claims and reports,
-- which set neither, never evaluate it.
create or replace trigger jobs_b_storage_scope_change
    before update of spec, queue on boxcar.jobs
    for each row when (new.status in ('queued', 'running')
                       and new.spec ?| array['volumes', 'image', 'artifact', 'session'])
    execute function boxcar.jobs_storage_scope();

-- The storage a job of scope writes to, or raises (42501) when scope does
-- not own it.  Called by every writer of versions (add_storage_version):
-- the enqueue check makes it hold for jobs; this makes it hold for the
-- CLI and whatever else calls the SQL API.
create or replace function boxcar.storage_check_owner(storage text, scope text)
returns void language plpgsql stable as $$
declare
    owner text;
begin
    select s.owner_scope into owner from boxcar.storages s where s.name = storage_check_owner.storage;
    if found and owner <> storage_check_owner.scope then
        raise exception 'storage "%": the name belongs to another scope than "%"',
                        storage_check_owner.storage, storage_check_owner.scope
            using errcode = '42501';
    end if;
end $$;

-- The owner shares storage, read-only, with scope (idempotent).  No such
-- storage: P0002; sharing with its own scope: 22023.
create or replace function boxcar.share_storage(storage text, scope text)
returns void language plpgsql volatile as $$
#variable_conflict use_column
declare
    owner text;
begin
    if share_storage.scope is null or share_storage.scope !~ '^[A-Za-z0-9_.-]{1,128}$' then
        raise exception 'scope: must be 1-128 letters, digits, "_", "." or "-"' using errcode = '22023';
    end if;
    select s.owner_scope into owner from boxcar.storages s
     where s.name = share_storage.storage and s.removed_at is null for update;
    if not found then
        raise exception 'no such storage: %', share_storage.storage using errcode = 'P0002';
    end if;
    if owner = share_storage.scope then
        raise exception 'storage % is owned by scope %: nothing to share', share_storage.storage, owner
            using errcode = '22023';
    end if;
    insert into boxcar.storage_shares (storage, scope) values (share_storage.storage, share_storage.scope)
    on conflict do nothing;
end $$;

-- Stops sharing storage with scope.  Jobs of scope enqueued since can no
-- longer name it; those already queued fail when the worker resolves it.
-- Returns whether it was shared.
create or replace function boxcar.unshare_storage(storage text, scope text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    delete from boxcar.storage_shares x
     where x.storage = unshare_storage.storage and x.scope = unshare_storage.scope;
    return found;
end $$;

-- Makes storage readable by every scope (on) or only by its owner and
-- those it is shared with (off).  No such storage: P0002.
create or replace function boxcar.set_storage_public(storage text, public boolean)
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    if set_storage_public.public is null then
        raise exception 'public: must be true or false' using errcode = '22023';
    end if;
    update boxcar.storages s set public = set_storage_public.public, updated_at = now()
     where s.name = set_storage_public.storage and s.removed_at is null;
    if not found then
        raise exception 'no such storage: %', set_storage_public.storage using errcode = 'P0002';
    end if;
end $$;

-- The operator gives storage to another scope (an existing storage the
-- migration gave to "default", say).  Its shares stay.  No such storage:
-- P0002.
create or replace function boxcar.set_storage_owner(storage text, scope text)
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    if set_storage_owner.scope is null or set_storage_owner.scope !~ '^[A-Za-z0-9_.-]{1,128}$' then
        raise exception 'scope: must be 1-128 letters, digits, "_", "." or "-"' using errcode = '22023';
    end if;
    update boxcar.storages s set owner_scope = set_storage_owner.scope, updated_at = now()
     where s.name = set_storage_owner.storage;
    if not found then
        raise exception 'no such storage: %', set_storage_owner.storage using errcode = 'P0002';
    end if;
    delete from boxcar.storage_shares x
     where x.storage = set_storage_owner.storage and x.scope = set_storage_owner.scope;
end $$;

-- The storage of session scope/id: the existing session's, or for a new
-- one a name that is unique per (scope, id) and never another form's:
-- "session-<id>" in scope "default" (an id without "."; the name sessions
-- had before scopes), "session-<scope>.<id>" for a scope without "." when
-- it fits the 128 characters of a name (split at its first "."), else
-- "session--" and the SHA-256 of scope/id (no ".", and an id never starts
-- with "-").
create or replace function boxcar.session_storage_name(scope text, id text)
returns text language sql stable as $$
    select coalesce(
        (select s.storage from boxcar.sessions s
          where s.scope = session_storage_name.scope and s.id = session_storage_name.id),
        case
            when session_storage_name.scope = 'default' and strpos(session_storage_name.id, '.') = 0
                then 'session-' || session_storage_name.id
            when session_storage_name.scope <> 'default' and strpos(session_storage_name.scope, '.') = 0
                 and length(session_storage_name.scope) + length(session_storage_name.id) <= 119
                then 'session-' || session_storage_name.scope || '.' || session_storage_name.id
            else 'session--' || encode(sha256(convert_to(session_storage_name.scope || '/'
                                                          || session_storage_name.id, 'UTF8')), 'hex')
        end)
$$;
