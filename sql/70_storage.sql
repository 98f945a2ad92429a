-- Storages for web apps and workers.  Nothing here presigns: the worker and
-- the CLI do that with the S3 credentials SQL never sees.
--
-- A version is format 'tarball' (made before layered versions: named by
-- its tarball's SHA-256, its one layer) or 'tree' (named by its tree
-- manifest's SHA-256, stored as layers, bottom first, its whole-tree
-- tarball s3_key built only when asked for).  Versions and storages are
-- removed softly (removed_at): a removed one is invisible to every reader
-- here, and its row is kept until boxcar.purge_removed_storage_versions
-- (sql/72_storage_gc.sql) deletes it once no queued or running job names
-- its storage, so such a job never loses the objects it may still read.
-- Whoever moves a storage's head, or adds, removes or purges versions,
-- locks the storage's row first, so retention and removal never
-- interleave with a push or a job's new version.

-- Functions whose result columns changed (layers, format, bottom_tree
-- were appended) cannot be replaced in place: drop the older ones, only
-- when they are older, so a migration run beside working replicas does not
-- drop them every time.
do $$
declare
    f regprocedure;
begin
    foreach f in array array[to_regprocedure('boxcar.resolve_storage_version(text, text)'),
                             to_regprocedure('boxcar.resolve_image(text, text)'),
                             to_regprocedure('boxcar.artifact_start(text, text)')] loop
        if f is not null and not exists (select from pg_proc p
                                          where p.oid = f and 'bottom_tree' = any (p.proargnames)) then
            execute format('drop function %s', f);
        end if;
    end loop;
end $$;
-- The signatures before layers go: beside the new ones, calls would be ambiguous.
drop function if exists boxcar.add_storage_version(text, text, text, bigint, bigint, text, uuid, boolean);
drop function if exists boxcar.add_artifact_version(text, text, text, bigint, bigint, text, uuid, text);
-- The signatures before owner scopes (migrations/0016_storage_scopes.sql).
drop function if exists boxcar.create_storage(text, text);
drop function if exists boxcar.resolve_storage_version(text, text);
drop function if exists boxcar.resolve_image(text, text);
drop function if exists boxcar.artifact_start(text, text);
drop function if exists boxcar.storages_json(text);
drop function if exists boxcar.add_storage_version(text, text, text, bigint, bigint, text, uuid, boolean,
                                                   text[], text);
drop function if exists boxcar.add_artifact_version(text, text, text, bigint, bigint, text, uuid, text,
                                                    text[], text);

-- Creates a storage (idempotent for the same kind).  A removed storage of
-- that name is created anew: it comes back without head and retention,
-- of the kind asked (its removed versions stay removed).  A new storage is
-- owned by scope; one owned by another scope (removed or not) is refused
-- (42501): names are global (sql/68_storage_scopes.sql).  Returns its name.
create or replace function boxcar.create_storage(name text, kind text default 'artifact',
                                                 scope text default 'default')
returns text language plpgsql volatile as $$
#variable_conflict use_column
declare
    existing text;
begin
    if create_storage.name is null or create_storage.name !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$' then
        raise exception 'storage name: must be 1-128 letters, digits, "_", "." or "-"'
            using errcode = '22023';
    end if;
    if create_storage.kind not in ('volume', 'artifact', 'image') then
        raise exception 'storage kind: must be volume, artifact or image' using errcode = '22023';
    end if;
    if create_storage.scope is null or create_storage.scope !~ '^[A-Za-z0-9_.-]{1,128}$' then
        raise exception 'scope: must be 1-128 letters, digits, "_", "." or "-"' using errcode = '22023';
    end if;
    perform boxcar.storage_check_owner(create_storage.name, create_storage.scope);
    update boxcar.storages s
       set removed_at = null, head_version = null, kind = create_storage.kind,
           keep_last = null, keep_within = null, updated_at = now()
     where s.name = create_storage.name and s.removed_at is not null;
    insert into boxcar.storages (name, kind, owner_scope)
    values (create_storage.name, create_storage.kind, create_storage.scope)
    on conflict (name) do nothing;
    -- Taken meanwhile by another scope.
    perform boxcar.storage_check_owner(create_storage.name, create_storage.scope);
    select s.kind into existing from boxcar.storages s where s.name = create_storage.name;
    if existing <> create_storage.kind then
        raise exception 'storage % exists as a %', create_storage.name, existing using errcode = '23505';
    end if;
    return create_storage.name;
end $$;

-- Records a version (a no-op when it exists) and makes it the head unless
-- move_head is false; creates the storage (an artifact) when there is
-- none, or brings a removed one back.  layers null: a 'tarball' version,
-- its one layer its sha256 and s3_key its tarball; otherwise a 'tree'
-- version: sha256 is its tree's id, layers its stack (bottom first, 1 to
-- 16), bottom_tree the tree of the bottom layer alone (required), s3_key
-- its whole-tree tarball or null.  A removed version of that sha256 is
-- replaced by this call's (it is a new version: a new id and created_at,
-- and the objects its caller just registered, not the removed row's,
-- which the collector may have deleted).  Malformed layers or a tree
-- without bottom_tree: the table's checks (23514).  scope: the writer's;
-- a storage another scope owns is refused (42501).  Returns the sha256.
create or replace function boxcar.add_storage_version(storage text, sha256 text, s3_key text, size bigint,
                                                      file_count bigint, parent_sha256 text default null,
                                                      job_id uuid default null, move_head boolean default true,
                                                      layers text[] default null, bottom_tree text default null,
                                                      scope text default 'default')
returns text language plpgsql volatile as $$
#variable_conflict use_column
begin
    perform boxcar.create_storage(add_storage_version.storage,
                                  coalesce((select kind from boxcar.storages s
                                             where s.name = add_storage_version.storage), 'artifact'),
                                  add_storage_version.scope);
    perform from boxcar.storages s where s.name = add_storage_version.storage for update;
    delete from boxcar.storage_versions v
     where v.storage = add_storage_version.storage and v.sha256 = add_storage_version.sha256
       and v.removed_at is not null;
    insert into boxcar.storage_versions (storage, sha256, s3_key, size, file_count, parent_sha256, job_id,
                                         format, layers, bottom_tree)
    values (add_storage_version.storage, add_storage_version.sha256, add_storage_version.s3_key,
            add_storage_version.size, add_storage_version.file_count, add_storage_version.parent_sha256,
            add_storage_version.job_id,
            case when add_storage_version.layers is null then 'tarball' else 'tree' end,
            coalesce(add_storage_version.layers, array[add_storage_version.sha256]),
            add_storage_version.bottom_tree)
    on conflict (storage, sha256) do nothing;
    if move_head then
        update boxcar.storages s set head_version = add_storage_version.sha256, updated_at = now()
         where s.name = add_storage_version.storage;
    end if;
    return add_storage_version.sha256;
end $$;

-- The version 'latest' (the head) or a given sha256 resolves to, with its
-- S3 key (null for a tree version whose tarball was never built) and its
-- layers; no row when the storage or version does not exist or was
-- removed (or 'latest' of a storage without versions).  With scope (a
-- job's), none either when that scope may not read the storage
-- (boxcar.storage_readable): a storage unshared since the job was queued.
create or replace function boxcar.resolve_storage_version(storage text, version text default 'latest',
                                                          scope text default null)
returns table (sha256 text, s3_key text, size bigint, file_count bigint,
               layers text[], format text, bottom_tree text)
language sql stable as $$
    select v.sha256, v.s3_key, v.size, v.file_count, v.layers, v.format, v.bottom_tree
      from boxcar.storages s
      join boxcar.storage_versions v on v.storage = s.name and v.removed_at is null
     where s.name = resolve_storage_version.storage and s.removed_at is null
       and (resolve_storage_version.scope is null
            or boxcar.storage_readable(s.name, resolve_storage_version.scope))
       and v.sha256 = case when resolve_storage_version.version = 'latest' then s.head_version
                           else resolve_storage_version.version end
$$;

-- The versions of a storage, newest first, as JSON (what `boxcar storage ls
-- NAME` prints); is_head marks the head, has_tarball whether s3_key holds
-- the whole tree as one tarball.  Removed versions are left out.  With
-- kind, nothing when the storage is of another kind.
drop function if exists boxcar.storage_versions_json(text);
create or replace function boxcar.storage_versions_json(storage text, kind text default null)
returns setof jsonb language sql stable as $$
    select jsonb_build_object('sha256', v.sha256, 'size', v.size, 'file_count', v.file_count,
                              'parent_sha256', v.parent_sha256, 'job_id', v.job_id,
                              'created_at', v.created_at, 'is_head', v.sha256 = s.head_version,
                              'format', v.format, 'layers', to_jsonb(v.layers),
                              'bottom_tree', v.bottom_tree, 'has_tarball', v.s3_key is not null)
      from boxcar.storage_versions v join boxcar.storages s on s.name = v.storage
     where v.storage = storage_versions_json.storage
       and v.removed_at is null and s.removed_at is null
       and (storage_versions_json.kind is null or s.kind = storage_versions_json.kind)
     order by v.id desc
$$;

-- Every storage not removed, or those of one kind (`boxcar storage ls
-- [--kind K]`), with its live versions counted and its retention
-- (keep_within as text, e.g. "7 days"; nulls: keep everything), its owner
-- scope, whether it is public and the scopes it is shared with.  With
-- scope, only the storages that scope may read.
drop function if exists boxcar.storages_json();
create or replace function boxcar.storages_json(kind text default null, scope text default null)
returns setof jsonb language sql stable as $$
    select jsonb_build_object('name', s.name, 'kind', s.kind, 'head_version', s.head_version,
                              'owner', s.owner_scope, 'public', s.public,
                              'shared_with', coalesce((select jsonb_agg(x.scope order by x.scope)
                                                         from boxcar.storage_shares x
                                                        where x.storage = s.name), '[]'),
                              'versions', (select count(*) from boxcar.storage_versions v
                                            where v.storage = s.name and v.removed_at is null),
                              'updated_at', s.updated_at,
                              'keep_last', s.keep_last, 'keep_within', s.keep_within::text)
      from boxcar.storages s
     where s.removed_at is null
       and (storages_json.kind is null or s.kind = storages_json.kind)
       and (storages_json.scope is null or boxcar.storage_readable(s.name, storages_json.scope))
     order by s.name
$$;

-- What a job's "image" resolves to: one row when the storage exists (and
-- is not removed), with its kind, and the version's columns (null when
-- there is no such live version or the storage is not an image), so the
-- worker can say which it was.  With scope, no row when that scope may
-- not read it, as resolve_storage_version.
create or replace function boxcar.resolve_image(storage text, version text default 'latest',
                                                scope text default null)
returns table (kind text, sha256 text, s3_key text, size bigint, file_count bigint,
               layers text[], format text, bottom_tree text)
language sql stable as $$
    select s.kind, v.sha256, v.s3_key, v.size, v.file_count, v.layers, v.format, v.bottom_tree
      from boxcar.storages s
      left join boxcar.storage_versions v
        on v.storage = s.name and s.kind = 'image' and v.removed_at is null
       and v.sha256 = case when resolve_image.version = 'latest' then s.head_version
                           else resolve_image.version end
     where s.name = resolve_image.storage and s.removed_at is null
       and (resolve_image.scope is null or boxcar.storage_readable(s.name, resolve_image.scope))
$$;

-- Where a job's artifact starts, in one read: the storage's head now (null
-- when the storage or its first version does not exist yet, or the
-- storage was removed), and the base version ('latest' meaning that very
-- head, 'empty' none) with its S3 key and layers, or nulls when there is
-- no such live version.  Always one row.  With scope (the job's), a
-- storage another scope owns is as one that does not exist: the job's
-- version is then refused when it is recorded.
drop function if exists boxcar.storage_head(text);
create or replace function boxcar.artifact_start(storage text, base text, scope text default null)
returns table (head text, sha256 text, s3_key text, size bigint, file_count bigint,
               layers text[], format text, bottom_tree text)
language sql stable as $$
    select case when h.mine then h.head end, v.sha256, v.s3_key, v.size, v.file_count, v.layers,
           v.format, v.bottom_tree
      from (select (select s.head_version from boxcar.storages s
                     where s.name = artifact_start.storage and s.removed_at is null) as head,
                   not exists (select from boxcar.storages s
                                where s.name = artifact_start.storage
                                  and s.owner_scope <> artifact_start.scope) as mine) h
      left join boxcar.storage_versions v
        on v.storage = artifact_start.storage and artifact_start.base <> 'empty' and h.mine
       and v.removed_at is null
       and v.sha256 = case when artifact_start.base = 'latest' then h.head
                           else artifact_start.base end
$$;

-- Records a job's new artifact version and moves the head to it only if
-- the head is still expected_head, the one the job started from (null for
-- a storage without versions): a compare-and-swap, so a version someone
-- else made the head meanwhile is never silently replaced.  Otherwise the
-- new version is kept as a branch (its parent_sha256 says where it came
-- from) and the head stays.  Concurrent calls serialise on the storage's
-- row, and the loser re-reads the head before deciding.  layers and
-- bottom_tree as add_storage_version's.  Returns true when the head is
-- this version afterwards.  (A storage removed while the job ran comes
-- back without a head: a job that started from one then conflicts.)
create or replace function boxcar.add_artifact_version(storage text, sha256 text, s3_key text,
                                                       size bigint, file_count bigint,
                                                       parent_sha256 text, job_id uuid,
                                                       expected_head text,
                                                       layers text[] default null,
                                                       bottom_tree text default null,
                                                       scope text default 'default')
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    perform boxcar.add_storage_version(add_artifact_version.storage, add_artifact_version.sha256,
                                       add_artifact_version.s3_key, add_artifact_version.size,
                                       add_artifact_version.file_count,
                                       add_artifact_version.parent_sha256,
                                       add_artifact_version.job_id, false,
                                       add_artifact_version.layers, add_artifact_version.bottom_tree,
                                       add_artifact_version.scope);
    update boxcar.storages s set head_version = add_artifact_version.sha256, updated_at = now()
     where s.name = add_artifact_version.storage
       and s.head_version is not distinct from add_artifact_version.expected_head;
    if found then
        return true;
    end if;
    return coalesce((select s.head_version = add_artifact_version.sha256 from boxcar.storages s
                      where s.name = add_artifact_version.storage), false);
end $$;

-- A finishing job's artifact version, recorded (and the head moved to it
-- by compare-and-swap, as add_artifact_version does) in the transaction
-- that records the job's end, and only while worker_id still holds the
-- job's attempt.  An attempt lost after its upload (kill -9, a lost lease)
-- thus leaves no version and the head where it was: its retry starts from
-- the head the lost attempt started from, and the job's changes are
-- applied once.  artifact: {"sha256", "s3_key", "size", "file_count",
-- "parent_sha256", "expected_head"} (the head the job started from, null
-- for a storage without versions), on the job's own artifact storage; a
-- tree version adds "layers" (an array of SHA-256s, bottom first) and
-- "bottom_tree", and its "s3_key" may be null or absent.  Without
-- "layers" (or null) it is a tarball version.  With retrying (the
-- attempt's outcome is a retry, see retry_or_fail), the version is
-- recorded only when no attempt is left (the job then fails); otherwise
-- it is not, and the next attempt starts over from the same base: result
-- loses its "artifact" then.  Returns result with artifact.conflict set
-- (true: the head had moved, the version is kept as a branch), or result
-- as it was when artifact is null or the worker no longer holds the job
-- (complete and retry_or_fail then refuse it).
create or replace function boxcar.record_job_artifact(id uuid, worker_id text, attempt integer,
                                                      result jsonb, artifact jsonb,
                                                      retrying boolean default false)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_column
declare
    a jsonb := record_job_artifact.artifact;
    j boxcar.jobs;
    is_head boolean;
    layers text[];
begin
    if a is null then
        return record_job_artifact.result;
    end if;
    select * into j from boxcar.jobs x
     where x.id = record_job_artifact.id and x.worker_id = record_job_artifact.worker_id
       and x.status = 'running'
       and (record_job_artifact.attempt is null or x.attempts = record_job_artifact.attempt)
       for update;
    if not found then
        return record_job_artifact.result;
    end if;
    if j.artifact_storage is null then
        raise exception 'job % has no artifact storage', j.id using errcode = '22023';
    end if;
    if retrying and j.attempts < j.max_attempts then
        return record_job_artifact.result - 'artifact';
    end if;
    case jsonb_typeof(a->'layers')
        when 'array' then
            layers := array(select jsonb_array_elements_text(a->'layers'));
        when 'null' then
        else
            if a ? 'layers' then
                raise exception 'artifact.layers: must be an array of sha256' using errcode = '22023';
            end if;
    end case;
    is_head := boxcar.add_artifact_version(j.artifact_storage, a->>'sha256', a->>'s3_key',
                                           (a->>'size')::bigint, (a->>'file_count')::bigint,
                                           a->>'parent_sha256', j.id, a->>'expected_head',
                                           layers, a->>'bottom_tree', boxcar.queue_scope(j.queue));
    return jsonb_set(coalesce(record_job_artifact.result, '{}'), '{artifact}',
                     coalesce(record_job_artifact.result->'artifact', '{}')
                     || jsonb_build_object('conflict', not is_head));
end $$;

-- Records the whole-tree tarball of a live version (a tree version's,
-- built after it was made): its S3 key.  The version's size stays the
-- bytes of the layer it added (what it cost to store); the tarball's own
-- size is in storage_objects, where the caller registered it
-- (register_storage_objects) before uploading it.  size is accepted for
-- that record's sake and not stored here.  No such live storage or
-- version: P0002.
create or replace function boxcar.set_storage_tarball(storage text, sha256 text, s3_key text, size bigint)
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    if set_storage_tarball.s3_key is null then
        raise exception 'tarball: an S3 key is required' using errcode = '22023';
    end if;
    update boxcar.storage_versions v
       set s3_key = set_storage_tarball.s3_key
      from boxcar.storages s
     where s.name = v.storage and s.removed_at is null
       and v.storage = set_storage_tarball.storage and v.sha256 = set_storage_tarball.sha256
       and v.removed_at is null;
    if not found then
        raise exception 'storage % has no version %', set_storage_tarball.storage, set_storage_tarball.sha256
            using errcode = 'P0002';
    end if;
end $$;

-- Removes one version (given by its sha256) of a live storage, softly (see
-- the head of this file).  The head is refused (55006): what 'latest'
-- means would vanish.  No such storage or version: P0002.  Returns true.
create or replace function boxcar.remove_storage_version(storage text, version text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
declare
    head text;
begin
    select s.head_version into head from boxcar.storages s
     where s.name = remove_storage_version.storage and s.removed_at is null
       for update;
    if not found then
        raise exception 'no such storage: %', remove_storage_version.storage using errcode = 'P0002';
    end if;
    if head = remove_storage_version.version then
        raise exception 'version % is the head of storage %: push or run another version first, '
                        'or remove the whole storage', remove_storage_version.version,
                        remove_storage_version.storage
            using errcode = '55006';
    end if;
    update boxcar.storage_versions v set removed_at = now()
     where v.storage = remove_storage_version.storage and v.sha256 = remove_storage_version.version
       and v.removed_at is null;
    if not found then
        raise exception 'storage % has no version %', remove_storage_version.storage,
                        remove_storage_version.version
            using errcode = 'P0002';
    end if;
    update boxcar.storages s set updated_at = now() where s.name = remove_storage_version.storage;
    return true;
end $$;

-- Removes a storage and every version of it, softly (see the head of this
-- file): it no longer exists for readers, and create_storage or a new
-- version brings it back empty.  No such storage: P0002.  Returns how many
-- versions it removed.
create or replace function boxcar.remove_storage(storage text)
returns integer language plpgsql volatile as $$
#variable_conflict use_column
declare
    n integer;
begin
    update boxcar.storages s set removed_at = now(), head_version = null, updated_at = now()
     where s.name = remove_storage.storage and s.removed_at is null;
    if not found then
        raise exception 'no such storage: %', remove_storage.storage using errcode = 'P0002';
    end if;
    update boxcar.storage_versions v set removed_at = now()
     where v.storage = remove_storage.storage and v.removed_at is null;
    get diagnostics n = row_count;
    return n;
end $$;

-- A storage's retention, applied by apply_storage_retention: keep the
-- keep_last newest versions, and those made within keep_within (either or
-- both; both null, the default, keeps everything).  Heads and branch tips
-- are always kept.  A value that is not positive: 22023; no such storage:
-- P0002.
create or replace function boxcar.set_storage_retention(storage text, keep_last integer, keep_within interval)
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    if set_storage_retention.keep_last <= 0 then
        raise exception 'keep_last: must be a positive number of versions' using errcode = '22023';
    end if;
    if set_storage_retention.keep_within <= interval '0' then
        raise exception 'keep_within: must be a positive interval' using errcode = '22023';
    end if;
    update boxcar.storages s
       set keep_last = set_storage_retention.keep_last, keep_within = set_storage_retention.keep_within,
           updated_at = now()
     where s.name = set_storage_retention.storage and s.removed_at is null;
    if not found then
        raise exception 'no such storage: %', set_storage_retention.storage using errcode = 'P0002';
    end if;
end $$;

-- Applies retention to every storage that has a policy, or to the one
-- given: removes (softly) each live version that is none of the head, a
-- branch tip (no live version of the storage names it as parent: the end
-- of a line someone may still want, such as a job's version that lost
-- the head), one of the keep_last newest (by id), or made within
-- keep_within.  Idempotent: what it keeps, it keeps the next time (but
-- for time passing).  Each storage's row is locked, so a concurrent push
-- or job's version is seen before or after, never in between.  Returns
-- how many versions it removed.
create or replace function boxcar.apply_storage_retention(storage text default null)
returns integer language plpgsql volatile as $$
#variable_conflict use_column
declare
    s boxcar.storages;
    k integer;
    n integer := 0;
begin
    for s in select * from boxcar.storages x
              where x.removed_at is null and (x.keep_last is not null or x.keep_within is not null)
                and (apply_storage_retention.storage is null or x.name = apply_storage_retention.storage)
              order by x.name
                for update loop
        update boxcar.storage_versions v set removed_at = now()
          from (select l.id, row_number() over (order by l.id desc) as rank
                  from boxcar.storage_versions l
                 where l.storage = s.name and l.removed_at is null) r
         where v.id = r.id
           and v.sha256 is distinct from s.head_version
           and exists (select from boxcar.storage_versions c
                        where c.storage = s.name and c.removed_at is null and c.parent_sha256 = v.sha256)
           and (s.keep_last is null or r.rank > s.keep_last)
           and (s.keep_within is null or v.created_at < now() - s.keep_within);
        get diagnostics k = row_count;
        n := n + k;
    end loop;
    return n;
end $$;
