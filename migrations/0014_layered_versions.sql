-- Layered versions, retention and garbage collection (issue 46).
--
-- A version made since layered versions is named by the SHA-256 of its
-- tree's manifest (format 'tree') and stored as a stack of .tar.gz layers,
-- bottom first; its whole-tree tarball (s3_key) is built only when asked
-- for.  A version made before is format 'tarball': named by its tarball's
-- SHA-256, which is also its one layer.  Versions and storages are removed
-- softly (removed_at) so that a queued or running job naming the storage
-- keeps what it may still read; boxcar.storage_objects lists what is in
-- the bucket so that the collector (sql/72_storage_gc.sql) can delete what
-- no version needs any more.

alter table boxcar.storage_versions alter column s3_key drop not null;
alter table boxcar.storage_versions
    add column format text not null default 'tarball' check (format in ('tarball', 'tree')),
    add column layers text[],
    add column bottom_tree text check (bottom_tree ~ '^[0-9a-f]{64}$'),
    add column removed_at timestamptz;
update boxcar.storage_versions set layers = array[sha256];
alter table boxcar.storage_versions alter column layers set not null;
-- 1 to 16 layers (STORAGE_MAX_LAYERS), each a SHA-256, none twice.  A
-- function: a check cannot hold a subquery.  Never redefine it in place:
-- the rows were checked with it.
create function boxcar.storage_layers_valid(layers text[]) returns boolean
language sql immutable parallel safe as $$
    select array_ndims(layers) = 1 and cardinality(layers) between 1 and 16
       and (select bool_and(coalesce(l ~ '^[0-9a-f]{64}$', false)) and count(distinct l) = count(*)
              from unnest(layers) l)
$$;
alter table boxcar.storage_versions add constraint storage_versions_layers_check
    check (boxcar.storage_layers_valid(layers));
alter table boxcar.storage_versions add constraint storage_versions_format_columns_check
    check (case format
               when 'tarball' then s3_key is not null and layers = array[sha256]
               else bottom_tree is not null
           end);
create index storage_versions_layers on boxcar.storage_versions using gin (layers);
-- What the collector asks of every object it considers: is it some
-- version's tarball, tree or bottom tree.
create index storage_versions_sha256 on boxcar.storage_versions (sha256);
create index storage_versions_s3_key on boxcar.storage_versions (s3_key) where s3_key is not null;
create index storage_versions_bottom_tree on boxcar.storage_versions (bottom_tree)
    where bottom_tree is not null;
create index storage_versions_removed on boxcar.storage_versions (storage)
    where removed_at is not null;

alter table boxcar.storages
    add column keep_last integer check (keep_last > 0),
    add column keep_within interval check (keep_within > interval '0'),
    add column removed_at timestamptz;

-- Every object boxcar put in the bucket (a layer or tarball: kind 'layer';
-- a tree manifest: kind 'tree'), registered before it is uploaded.
create table boxcar.storage_objects (
    key          text primary key,
    kind         text not null check (kind in ('layer', 'tree')),
    sha256       text not null check (sha256 ~ '^[0-9a-f]{64}$'),
    size         bigint not null default 0 check (size >= 0),
    created_at   timestamptz not null default now(),
    last_used_at timestamptz not null default now()
);
create index storage_objects_kind_sha256 on boxcar.storage_objects (kind, sha256);
create index storage_objects_last_used on boxcar.storage_objects (last_used_at);
insert into boxcar.storage_objects (key, kind, sha256, size)
select distinct on (s3_key) s3_key, 'layer', sha256, size
  from boxcar.storage_versions
 order by s3_key, id;
