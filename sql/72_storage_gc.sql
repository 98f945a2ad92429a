-- What storages keep in the bucket, and the garbage collector's side of it.
--
-- boxcar.storage_objects lists every object boxcar put in the bucket:
-- layers and tarballs (kind 'layer') and tree manifests (kind 'tree'),
-- with when they were last registered.  An object is referenced while a
-- live version uses it, or a removed version of a protected storage (one
-- a queued or running job names: the job may read what it resolved before
-- the removal); the collector deletes those that are not, once they have
-- gone unregistered for a grace period.
--
-- The protocol, so that an object is never deleted under a version that
-- needs it:
--   * A worker or the CLI registers every object a version it is making
--     will reference (register_storage_objects) BEFORE it checks whether
--     the object is in the bucket or uploads it, and records the version
--     within the grace period.  The registration makes the object no
--     candidate for that long.
--   * The collector takes one object at a time, each in its own
--     transaction: storage_gc_claim (which locks the object's row when it
--     is still a candidate, skipping it when someone holds it), deletes
--     the object from S3, storage_gc_forget, commit.  A registration
--     racing with it waits on that row lock and, once the collector has
--     committed, inserts the row anew: the worker then finds the object
--     gone and uploads it again; it never assumes present an object the
--     collector is deleting.

-- Whether a queued or running job names the storage anywhere in its spec
-- (as a volume, artifact or image, or anywhere else: a false positive only
-- keeps rows longer).  Its removed versions then stay, and keep their
-- objects referenced.
create or replace function boxcar.storage_version_protected(storage text)
returns boolean language sql stable as $$
    select exists (select from boxcar.jobs j
                    where j.status in ('queued', 'running')
                      and strpos(j.spec::text, to_jsonb(storage_version_protected.storage)::text) > 0)
$$;

-- Deletes the removed versions of storages no queued or running job names,
-- then the removed storages left without versions that none names.  Run by
-- the collector before it looks for candidates.  Each storage's row is
-- locked before its versions, as every writer of a storage does (a
-- storage someone else holds is left for the next run), so a purge never
-- deadlocks with a push bringing a removed storage or version back.
-- Returns how many versions it deleted.
create or replace function boxcar.purge_removed_storage_versions()
returns integer language plpgsql volatile as $$
declare
    s text;
    k integer;
    n integer := 0;
begin
    for s in select st.name from boxcar.storages st
              where st.removed_at is not null
                 or exists (select from boxcar.storage_versions v
                             where v.storage = st.name and v.removed_at is not null)
              order by st.name
                for update skip locked loop
        continue when boxcar.storage_version_protected(s);
        delete from boxcar.storage_versions v where v.storage = s and v.removed_at is not null;
        get diagnostics k = row_count;
        n := n + k;
        delete from boxcar.storages st
         where st.name = s and st.removed_at is not null
           and not exists (select from boxcar.storage_versions v where v.storage = s);
    end loop;
    return n;
end $$;

-- Registers objects (the arrays, one object per index: its key, kind
-- 'layer' or 'tree', SHA-256 and compressed size) before they are checked
-- or uploaded, see the protocol above: a new key is inserted, a known one
-- gets last_used_at now and the larger of both sizes.  Keys are taken in
-- order, so two registrations never deadlock.  Arrays of different
-- lengths: 22023.
create or replace function boxcar.register_storage_objects(keys text[], kinds text[], shas text[],
                                                           sizes bigint[])
returns void language plpgsql volatile as $$
begin
    if cardinality(keys) is distinct from cardinality(kinds)
       or cardinality(keys) is distinct from cardinality(shas)
       or cardinality(keys) is distinct from cardinality(sizes) then
        raise exception 'storage objects: keys, kinds, shas and sizes must have as many elements'
            using errcode = '22023';
    end if;
    insert into boxcar.storage_objects as o (key, kind, sha256, size)
    select distinct on (x.key) x.key, x.kind, x.sha256, coalesce(x.size, 0)
      from unnest(keys, kinds, shas, sizes) as x (key, kind, sha256, size)
     order by x.key, x.size desc nulls last
    on conflict (key) do update set last_used_at = now(), size = greatest(o.size, excluded.size);
end $$;

-- Whether an object is referenced (see the head of this file): a live
-- version, or a removed version of a protected storage, has it as one of
-- its layers (kind 'layer'), as its tarball (s3_key = key, whatever kind),
-- or as its tree or bottom tree (kind 'tree').
create or replace function boxcar.storage_object_referenced(kind text, sha256 text, key text)
returns boolean language sql stable as $$
    select exists (select from boxcar.storage_versions v
                    where storage_object_referenced.kind = 'layer'
                      and v.layers @> array[storage_object_referenced.sha256]
                      and (v.removed_at is null or boxcar.storage_version_protected(v.storage)))
        or exists (select from boxcar.storage_versions v
                    where v.s3_key = storage_object_referenced.key
                      and (v.removed_at is null or boxcar.storage_version_protected(v.storage)))
        or exists (select from boxcar.storage_versions v
                    where storage_object_referenced.kind = 'tree' and v.format = 'tree'
                      and v.sha256 = storage_object_referenced.sha256
                      and (v.removed_at is null or boxcar.storage_version_protected(v.storage)))
        or exists (select from boxcar.storage_versions v
                    where storage_object_referenced.kind = 'tree'
                      and v.bottom_tree = storage_object_referenced.sha256
                      and (v.removed_at is null or boxcar.storage_version_protected(v.storage)))
$$;

-- Objects the collector may delete: unregistered for longer than grace and
-- not referenced, least recently registered first, at most max_rows.  A
-- list to work through with storage_gc_claim, which checks again.
create or replace function boxcar.storage_gc_candidates(grace interval, max_rows integer default 1000)
returns table (key text, kind text, sha256 text, size bigint)
language sql stable as $$
    select o.key, o.kind, o.sha256, o.size
      from boxcar.storage_objects o
     where o.last_used_at < now() - storage_gc_candidates.grace
       and not boxcar.storage_object_referenced(o.kind, o.sha256, o.key)
     order by o.last_used_at, o.key
     limit storage_gc_candidates.max_rows
$$;

-- Claims one object for deletion (see the protocol at the head of this
-- file): when it is still a candidate, locks its row until the end of the
-- caller's transaction and returns its size; null when it is not (any
-- more), or someone holds its row (a registration in progress).
create or replace function boxcar.storage_gc_claim(key text, grace interval)
returns bigint language sql volatile as $$
    select o.size
      from boxcar.storage_objects o
     where o.key = storage_gc_claim.key
       and o.last_used_at < now() - storage_gc_claim.grace
       and not boxcar.storage_object_referenced(o.kind, o.sha256, o.key)
       for update of o skip locked
$$;

-- Forgets an object the collector deleted from the bucket (in the
-- transaction that claimed it).
create or replace function boxcar.storage_gc_forget(key text)
returns void language sql volatile as $$
    delete from boxcar.storage_objects o where o.key = storage_gc_forget.key
$$;

-- Bytes of every object registered (what the bucket holds for boxcar, as
-- far as boxcar knows).
create or replace function boxcar.storage_bytes_stored()
returns bigint language sql stable as $$
    select coalesce(sum(o.size), 0)::bigint from boxcar.storage_objects o
$$;
