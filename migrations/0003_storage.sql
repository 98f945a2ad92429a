-- Named storages and their content-addressed versions (DESIGN §4, §6).
-- The tarballs live in S3 under <prefix>/sha256/<2 hex>/<sha256>.tar.gz;
-- these tables record which versions exist, their lineage, and each
-- storage's head.

create table boxcar.storages (
    name         text primary key
                 check (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
    kind         text not null check (kind in ('volume', 'artifact')),
    head_version text check (head_version ~ '^[0-9a-f]{64}$'),
    created_at   timestamptz not null default now(),
    updated_at   timestamptz not null default now()
);

create table boxcar.storage_versions (
    id            bigint generated always as identity primary key,
    storage       text not null references boxcar.storages (name) on delete cascade,
    sha256        text not null check (sha256 ~ '^[0-9a-f]{64}$'),
    s3_key        text not null,
    size          bigint not null check (size >= 0),
    file_count    bigint not null check (file_count >= 0),
    parent_sha256 text check (parent_sha256 ~ '^[0-9a-f]{64}$'),
    -- The job that produced it; kept when the job is pruned.
    job_id        uuid,
    created_at    timestamptz not null default clock_timestamp(),
    unique (storage, sha256)
);
create index storage_versions_storage on boxcar.storage_versions (storage, id desc);
