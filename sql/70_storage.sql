-- Storages for web apps and workers.  Nothing here presigns: the worker and
-- the CLI do that with the S3 credentials SQL never sees.

-- Creates a storage (idempotent for the same kind).  Returns its name.
create or replace function boxcar.create_storage(name text, kind text default 'artifact')
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
    insert into boxcar.storages (name, kind) values (create_storage.name, create_storage.kind)
    on conflict (name) do nothing;
    select s.kind into existing from boxcar.storages s where s.name = create_storage.name;
    if existing <> create_storage.kind then
        raise exception 'storage % exists as a %', create_storage.name, existing using errcode = '23505';
    end if;
    return create_storage.name;
end $$;

-- Records a version (a no-op when it exists) and makes it the head unless
-- move_head is false.  Returns the version's sha256.
create or replace function boxcar.add_storage_version(storage text, sha256 text, s3_key text, size bigint,
                                                      file_count bigint, parent_sha256 text default null,
                                                      job_id uuid default null, move_head boolean default true)
returns text language plpgsql volatile as $$
#variable_conflict use_column
begin
    perform boxcar.create_storage(add_storage_version.storage,
                                  coalesce((select kind from boxcar.storages s
                                             where s.name = add_storage_version.storage), 'artifact'));
    insert into boxcar.storage_versions (storage, sha256, s3_key, size, file_count, parent_sha256, job_id)
    values (add_storage_version.storage, add_storage_version.sha256, add_storage_version.s3_key,
            add_storage_version.size, add_storage_version.file_count, add_storage_version.parent_sha256,
            add_storage_version.job_id)
    on conflict (storage, sha256) do nothing;
    if move_head then
        update boxcar.storages s set head_version = add_storage_version.sha256, updated_at = now()
         where s.name = add_storage_version.storage;
    end if;
    return add_storage_version.sha256;
end $$;

-- The version 'latest' (the head) or a given sha256 resolves to, with its
-- S3 key; no row when the storage or version does not exist (or 'latest'
-- of a storage without versions).
create or replace function boxcar.resolve_storage_version(storage text, version text default 'latest')
returns table (sha256 text, s3_key text, size bigint, file_count bigint)
language sql stable as $$
    select v.sha256, v.s3_key, v.size, v.file_count
      from boxcar.storages s
      join boxcar.storage_versions v on v.storage = s.name
     where s.name = resolve_storage_version.storage
       and v.sha256 = case when resolve_storage_version.version = 'latest' then s.head_version
                           else resolve_storage_version.version end
$$;

-- The versions of a storage, newest first, as JSON (what `boxcar storage ls
-- NAME` prints); is_head marks the head.  With kind, nothing when the
-- storage is of another kind.
drop function if exists boxcar.storage_versions_json(text);
create or replace function boxcar.storage_versions_json(storage text, kind text default null)
returns setof jsonb language sql stable as $$
    select jsonb_build_object('sha256', v.sha256, 'size', v.size, 'file_count', v.file_count,
                              'parent_sha256', v.parent_sha256, 'job_id', v.job_id,
                              'created_at', v.created_at, 'is_head', v.sha256 = s.head_version)
      from boxcar.storage_versions v join boxcar.storages s on s.name = v.storage
     where v.storage = storage_versions_json.storage
       and (storage_versions_json.kind is null or s.kind = storage_versions_json.kind)
     order by v.id desc
$$;

-- Every storage, or those of one kind (`boxcar storage ls [--kind K]`).
drop function if exists boxcar.storages_json();
create or replace function boxcar.storages_json(kind text default null)
returns setof jsonb language sql stable as $$
    select jsonb_build_object('name', s.name, 'kind', s.kind, 'head_version', s.head_version,
                              'versions', (select count(*) from boxcar.storage_versions v where v.storage = s.name),
                              'updated_at', s.updated_at)
      from boxcar.storages s
     where storages_json.kind is null or s.kind = storages_json.kind
     order by s.name
$$;

-- What a job's "image" resolves to: one row when the storage exists, with
-- its kind, and the version's columns (null when there is no such version
-- or the storage is not an image), so the worker can say which it was.
create or replace function boxcar.resolve_image(storage text, version text default 'latest')
returns table (kind text, sha256 text, s3_key text, size bigint, file_count bigint)
language sql stable as $$
    select s.kind, v.sha256, v.s3_key, v.size, v.file_count
      from boxcar.storages s
      left join boxcar.storage_versions v
        on v.storage = s.name and s.kind = 'image'
       and v.sha256 = case when resolve_image.version = 'latest' then s.head_version
                           else resolve_image.version end
     where s.name = resolve_image.storage
$$;

-- Where a job's artifact starts, in one read: the storage's head now (null
-- when the storage or its first version does not exist yet), and the base
-- version ('latest' meaning that very head, 'empty' none) with its S3 key,
-- or nulls when there is no such version.  Always one row.
drop function if exists boxcar.storage_head(text);
create or replace function boxcar.artifact_start(storage text, base text)
returns table (head text, sha256 text, s3_key text, size bigint, file_count bigint)
language sql stable as $$
    select h.head, v.sha256, v.s3_key, v.size, v.file_count
      from (select (select s.head_version from boxcar.storages s
                     where s.name = artifact_start.storage) as head) h
      left join boxcar.storage_versions v
        on v.storage = artifact_start.storage and artifact_start.base <> 'empty'
       and v.sha256 = case when artifact_start.base = 'latest' then h.head
                           else artifact_start.base end
$$;

-- Records a job's new artifact version and moves the head to it only if
-- the head is still expected_head, the one the job started from (null for
-- a storage without versions): a compare-and-swap, so a version someone
-- else made the head meanwhile is never silently replaced.  Otherwise the
-- new version is kept as a branch (its parent_sha256 says where it came
-- from) and the head stays.  Concurrent calls serialise on the storage's
-- row, and the loser re-reads the head before deciding.  Returns true when
-- the head is this version afterwards.
create or replace function boxcar.add_artifact_version(storage text, sha256 text, s3_key text,
                                                       size bigint, file_count bigint,
                                                       parent_sha256 text, job_id uuid,
                                                       expected_head text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    perform boxcar.add_storage_version(add_artifact_version.storage, add_artifact_version.sha256,
                                       add_artifact_version.s3_key, add_artifact_version.size,
                                       add_artifact_version.file_count,
                                       add_artifact_version.parent_sha256,
                                       add_artifact_version.job_id, false);
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
-- for a storage without versions), on the job's own artifact storage.
-- With retrying (the attempt's outcome is a retry, see retry_or_fail), the
-- version is recorded only when no attempt is left (the job then fails);
-- otherwise it is not, and the next attempt starts over from the same
-- base: result loses its "artifact" then.  Returns result with
-- artifact.conflict set (true: the head had moved, the version is kept as
-- a branch), or result as it was when artifact is null or the worker no
-- longer holds the job (complete and retry_or_fail then refuse it).
create or replace function boxcar.record_job_artifact(id uuid, worker_id text, attempt integer,
                                                      result jsonb, artifact jsonb,
                                                      retrying boolean default false)
returns jsonb language plpgsql volatile as $$
#variable_conflict use_column
declare
    a jsonb := record_job_artifact.artifact;
    j boxcar.jobs;
    is_head boolean;
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
    is_head := boxcar.add_artifact_version(j.artifact_storage, a->>'sha256', a->>'s3_key',
                                           (a->>'size')::bigint, (a->>'file_count')::bigint,
                                           a->>'parent_sha256', j.id, a->>'expected_head');
    return jsonb_set(coalesce(record_job_artifact.result, '{}'), '{artifact}',
                     coalesce(record_job_artifact.result->'artifact', '{}')
                     || jsonb_build_object('conflict', not is_head));
end $$;
