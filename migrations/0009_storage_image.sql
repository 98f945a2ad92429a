-- A third storage kind: `image`, a root filesystem a job can run on
-- (DESIGN §10, issue 15).  Its versions are content-addressed tarballs like
-- every other storage's.
alter table boxcar.storages drop constraint storages_kind_check;
alter table boxcar.storages add constraint storages_kind_check
    check (kind in ('volume', 'artifact', 'image'));
