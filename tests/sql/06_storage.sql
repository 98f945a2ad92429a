begin;
select plan(12);

select is(boxcar.create_storage('datasets', 'volume'), 'datasets', 'create a volume storage');
select is(boxcar.create_storage('datasets', 'volume'), 'datasets', 'creating it again is a no-op');
select throws_ok($$select boxcar.create_storage('datasets', 'artifact')$$, '23505', null,
                 'the same name as another kind is refused');
select throws_ok($$select boxcar.create_storage('../x')$$, '22023', null, 'a bad name is refused');
select is((select count(*)::int from boxcar.resolve_storage_version('datasets')), 0,
          'latest of a storage without versions resolves to nothing');

select boxcar.add_storage_version('session-1', repeat('a', 64), 'sha256/aa/' || repeat('a', 64) || '.tar.gz', 10, 1);
select is((select kind from boxcar.storages where name = 'session-1'), 'artifact',
          'adding a version creates an artifact storage');
select boxcar.add_storage_version('session-1', repeat('b', 64), 'sha256/bb/' || repeat('b', 64) || '.tar.gz', 20, 2,
                                  parent_sha256 => repeat('a', 64), job_id => gen_random_uuid());
select is((select sha256 from boxcar.resolve_storage_version('session-1', 'latest')), repeat('b', 64),
          'the head moves to the new version');
select is((select size from boxcar.resolve_storage_version('session-1', repeat('a', 64))), 10::bigint,
          'an older version resolves by sha256');
select is((select parent_sha256 from boxcar.storage_versions where sha256 = repeat('b', 64)), repeat('a', 64),
          'lineage is recorded');
select boxcar.add_storage_version('session-1', repeat('a', 64), 'k', 10, 1, move_head => false);
select is((select count(*)::int from boxcar.storage_versions where storage = 'session-1'), 2,
          'the same content is one version');
select is((select count(*)::int from boxcar.storage_versions_json('session-1') j where (j->>'is_head')::boolean), 1,
          'exactly one version is the head');
select is((select count(*)::int from boxcar.storages_json()), 2, 'storages_json lists every storage');

select * from finish();
rollback;
