begin;
select plan(60);

create function pg_temp.h(c text) returns text language sql as $$ select repeat(c, 64) $$;
-- A layer's SHA-256 from a number (distinct, lowercase hex).
create function pg_temp.l(n int) returns text language sql as $$
    select encode(sha256(convert_to('layer ' || n, 'UTF8')), 'hex')
$$;

-- ---- Migration: a version made before layered versions ----------------
-- The schema is put back as it was before 0014, a version is made the old
-- way, and 0014 is applied again (all rolled back at the end).
\getenv root BOXCAR_ROOT
alter table boxcar.storage_versions drop column format, drop column layers,
    drop column bottom_tree, drop column removed_at;
drop index boxcar.storage_versions_sha256, boxcar.storage_versions_s3_key;
drop function boxcar.storage_layers_valid(text[]);
alter table boxcar.storage_versions alter column s3_key set not null;
alter table boxcar.storages drop column keep_last, drop column keep_within, drop column removed_at;
drop table boxcar.storage_objects;
insert into boxcar.storages (name, kind, head_version) values ('old', 'volume', pg_temp.h('a'));
insert into boxcar.storage_versions (storage, sha256, s3_key, size, file_count)
values ('old', pg_temp.h('a'), 'sha256/aa/' || pg_temp.h('a') || '.tar.gz', 123, 4);
create temp table migration as
    select pg_read_file(:'root' || '/migrations/0014_layered_versions.sql') as text;
do $$ begin execute (select text from migration); end $$;

select is((select format || ' ' || layers::text || ' ' || (s3_key is not null)::text
             from boxcar.storage_versions where storage = 'old'),
          'tarball {' || pg_temp.h('a') || '} true',
          'an older version becomes a tarball version, its one layer its tarball');
select is((select row(key, kind, sha256, size)::text from boxcar.storage_objects),
          row('sha256/aa/' || pg_temp.h('a') || '.tar.gz', 'layer', pg_temp.h('a'), 123::bigint)::text,
          'its tarball is registered as an object');
select is((select row(sha256, s3_key, size, file_count, layers, format, bottom_tree)::text
             from boxcar.resolve_storage_version('old')),
          row(pg_temp.h('a'), 'sha256/aa/' || pg_temp.h('a') || '.tar.gz', 123::bigint, 4::bigint,
              array[pg_temp.h('a')], 'tarball', null::text)::text,
          'and resolves as before, with layers {sha256} and format tarball');
select is((select v->>'format' || ' ' || (v->>'has_tarball') || ' ' || (v->'layers')::text
             from boxcar.storage_versions_json('old') v),
          'tarball true ["' || pg_temp.h('a') || '"]', 'storage_versions_json shows its format and layers');
select ok(boxcar.storage_object_referenced('layer', pg_temp.h('a'), 'sha256/aa/' || pg_temp.h('a') || '.tar.gz'),
          'its tarball is referenced');

-- ---- Tree versions ---------------------------------------------------------
select is(boxcar.add_storage_version('t', pg_temp.h('1'), null, 50, 3, layers => array[pg_temp.l(1)],
                                     bottom_tree => pg_temp.h('1')),
          pg_temp.h('1'), 'a tree version without a tarball is recorded');
select boxcar.add_storage_version('t', pg_temp.h('2'), null, 60, 4, pg_temp.h('1'),
                                  layers => array[pg_temp.l(1), pg_temp.l(2)], bottom_tree => pg_temp.h('1'));
select is((select row(sha256, s3_key, size, file_count, layers, format, bottom_tree)::text
             from boxcar.resolve_storage_version('t', 'latest')),
          row(pg_temp.h('2'), null::text, 60::bigint, 4::bigint, array[pg_temp.l(1), pg_temp.l(2)], 'tree',
              pg_temp.h('1'))::text,
          'latest resolves to the new head with its layers, bottom first, and no S3 key');
select is((select row(head, sha256, s3_key, layers, format, bottom_tree)::text
             from boxcar.artifact_start('t', pg_temp.h('1'))),
          row(pg_temp.h('2'), pg_temp.h('1'), null::text, array[pg_temp.l(1)], 'tree', pg_temp.h('1'))::text,
          'artifact_start gives the head and the base with its layers');
select is((select row(head, sha256, layers)::text from boxcar.artifact_start('t', 'empty')),
          row(pg_temp.h('2'), null::text, null::text[])::text, 'artifact_start from empty has no layers');
select boxcar.create_storage('img', 'image');
select boxcar.add_storage_version('img', pg_temp.h('3'), null, 1, 1, layers => array[pg_temp.l(3)],
                                  bottom_tree => pg_temp.h('3'));
select is((select row(kind, sha256, layers, format)::text from boxcar.resolve_image('img')),
          row('image', pg_temp.h('3'), array[pg_temp.l(3)], 'tree')::text, 'an image resolves with its layers');
select is((select v->>'format' || ' ' || (v->>'has_tarball') || ' ' || jsonb_array_length(v->'layers')
                  || ' ' || (v->>'bottom_tree')
             from boxcar.storage_versions_json('t') v where (v->>'is_head')::boolean),
          'tree false 2 ' || pg_temp.h('1'), 'storage_versions_json shows a tree version without tarball');
select lives_ok($$select boxcar.set_storage_tarball('t', pg_temp.h('2'), 'sha256/tt/t.tar.gz', 999)$$,
                'the whole-tree tarball of a tree version is recorded');
select is((select s3_key || ' ' || size from boxcar.resolve_storage_version('t')), 'sha256/tt/t.tar.gz 60',
          'and resolves with the version, whose size stays its own layer''s');
select throws_ok($$select boxcar.set_storage_tarball('t', pg_temp.h('9'), 'k', 1)$$, 'P0002', null,
                 'a tarball of no such version is refused');

-- The table refuses what is not a version.
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('4'), null, 1, 1,
                      layers => array(select pg_temp.l(i) from generate_series(1, 17) i),
                      bottom_tree => pg_temp.h('4'))$$,
                 '23514', null, '17 layers are refused');
select lives_ok($$select boxcar.add_storage_version('t', pg_temp.h('4'), null, 1, 1,
                      layers => array(select pg_temp.l(i) from generate_series(1, 16) i),
                      bottom_tree => pg_temp.h('4'), move_head => false)$$,
                '16 are taken');
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('5'), null, 1, 1,
                      layers => array[pg_temp.l(1), pg_temp.l(2), pg_temp.l(1)], bottom_tree => pg_temp.h('5'))$$,
                 '23514', null, 'a layer twice is refused');
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('5'), null, 1, 1,
                      layers => array[upper(pg_temp.l(1))], bottom_tree => pg_temp.h('5'))$$,
                 '23514', null, 'a layer that is not lowercase hex is refused');
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('5'), null, 1, 1,
                      layers => array[pg_temp.l(1), null], bottom_tree => pg_temp.h('5'))$$,
                 '23514', null, 'a null layer is refused');
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('5'), null, 1, 1, layers => '{}',
                      bottom_tree => pg_temp.h('5'))$$,
                 '23514', null, 'no layers are refused');
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('5'), null, 1, 1, layers => array[pg_temp.l(5)])$$,
                 '23514', null, 'a tree version without its bottom tree is refused');
select throws_ok($$select boxcar.add_storage_version('t', pg_temp.h('5'), null, 1, 1)$$,
                 '23514', null, 'a tarball version without a tarball is refused');
select throws_ok($$insert into boxcar.storage_versions (storage, sha256, s3_key, size, file_count, layers)
                   values ('t', pg_temp.h('6'), 'k', 1, 1, array[pg_temp.l(6)])$$,
                 '23514', null, 'a tarball version whose layer is not its own sha256 is refused');

-- A job's tree version, recorded with its end.
-- Pushed without a scope ("default"'s): given to the jobs' scope.
select boxcar.set_storage_owner('t', 'lv');
select boxcar.enqueue('lv', '{"command":["j"],"artifact":{"storage":"t"}}');
create temp table j as select id from boxcar.claim('w1', array['lv'], 1);
select ok((select held
             from boxcar.report_batch('w1', array[(select id from j)], array[1], array['complete'],
                                      array['succeeded'],
                                      array['{"exit_code":0,"artifact":{"storage":"t"}}']::jsonb[],
                                      array[null]::jsonb[], array[null]::jsonb[],
                                      array[jsonb_build_object('sha256', pg_temp.h('7'), 'size', 70,
                                                               'file_count', 7, 'parent_sha256', pg_temp.h('2'),
                                                               'expected_head', pg_temp.h('2'),
                                                               'layers', jsonb_build_array(pg_temp.l(1),
                                                                                           pg_temp.l(2),
                                                                                           pg_temp.l(7)),
                                                               'bottom_tree', pg_temp.h('1'))])),
          'a job reports a tree version without s3_key');
select is((select row(sha256, s3_key, layers, format, bottom_tree)::text from boxcar.resolve_storage_version('t')),
          row(pg_temp.h('7'), null::text, array[pg_temp.l(1), pg_temp.l(2), pg_temp.l(7)], 'tree',
              pg_temp.h('1'))::text,
          'it is recorded with its layers and becomes the head');
select is((select job_id from boxcar.storage_versions where sha256 = pg_temp.h('7')), (select id from j),
          'and names its job');
select ok(boxcar.add_artifact_version('t', pg_temp.h('8'), 'k8', 1, 1, pg_temp.h('7'), null, pg_temp.h('7'),
                                      scope => 'lv'),
          'add_artifact_version without layers still records a tarball version');
select is((select format || ' ' || layers::text from boxcar.storage_versions where sha256 = pg_temp.h('8')),
          'tarball {' || pg_temp.h('8') || '}', 'with layers {sha256}');

-- ---- Removal ----------------------------------------------------------------
select boxcar.add_storage_version('r', pg_temp.h('a'), 'ka', 1, 1);
select boxcar.add_storage_version('r', pg_temp.h('b'), 'kb', 1, 1, pg_temp.h('a'));
select boxcar.add_storage_version('r', pg_temp.h('c'), 'kc', 1, 1, pg_temp.h('b'));
select ok(boxcar.remove_storage_version('r', pg_temp.h('a')), 'a version that is not the head is removed');
select is((select count(*)::int from boxcar.resolve_storage_version('r', pg_temp.h('a'))), 0,
          'it no longer resolves');
select is((select count(*)::int from boxcar.storage_versions_json('r')), 2, 'nor is it listed');
select is((select (v->>'versions')::int from boxcar.storages_json() v where v->>'name' = 'r'), 2,
          'nor counted');
select is((select sha256 from boxcar.artifact_start('r', pg_temp.h('a'))), null, 'nor can a job start from it');
select throws_ok($$select boxcar.remove_storage_version('r', pg_temp.h('c'))$$, '55006',
                 'version ' || pg_temp.h('c') || ' is the head of storage r: push or run another version first, '
                 'or remove the whole storage',
                 'the head is refused, saying what to do');
select throws_ok($$select boxcar.remove_storage_version('r', pg_temp.h('a'))$$, 'P0002', null,
                 'a removed version cannot be removed again');
select throws_ok($$select boxcar.remove_storage_version('nope', pg_temp.h('a'))$$, 'P0002',
                 'no such storage: nope', 'nor a version of no storage');
select boxcar.add_storage_version('r', pg_temp.h('a'), 'ka2', 2, 2, move_head => false);
select is((select a.s3_key || ' ' || (a.id > c.id)::text
             from boxcar.storage_versions a, boxcar.storage_versions c
            where a.storage = 'r' and a.sha256 = pg_temp.h('a') and a.removed_at is null
              and c.storage = 'r' and c.sha256 = pg_temp.h('c')),
          'ka2 true', 'adding a removed version again brings it back as a new version');

select is(boxcar.remove_storage('r'), 3, 'removing a storage removes its versions');
select is((select count(*)::int from boxcar.storages_json() v where v->>'name' = 'r'), 0,
          'the storage is no longer listed');
select is((select count(*)::int from boxcar.resolve_storage_version('r')), 0, 'nor resolves');
select is((select row(head, sha256)::text from boxcar.artifact_start('r', 'latest')), row(null, null)::text,
          'a job on it starts from nothing');
select throws_ok($$select boxcar.remove_storage('r')$$, 'P0002', null, 'it cannot be removed again');
select throws_ok($$select boxcar.set_storage_retention('r', 1, null)$$, 'P0002', null,
                 'nor given a retention');
select is(boxcar.create_storage('r', 'volume'), 'r', 'create_storage brings a removed storage back');
select is((select row(kind, head_version, removed_at, keep_last)::text from boxcar.storages where name = 'r'),
          row('volume', null::text, null::timestamptz, null::int)::text,
          'of the kind asked, without head or retention');
select is((select count(*)::int from boxcar.storage_versions_json('r')), 0, 'and without its old versions');
select boxcar.remove_storage('r');
select boxcar.add_storage_version('r', pg_temp.h('b'), 'kb2', 1, 1);
select is((select s.kind || ' ' || v.s3_key from boxcar.storages s, boxcar.resolve_storage_version('r') v
            where s.name = 'r'), 'volume kb2', 'so does a new version, which is its head');

-- ---- Retention -------------------------------------------------------------
-- ret: v1 <- v2 <- v3 <- v4 <- v5 <- v6 (the head), and a branch br off v2.
select boxcar.add_storage_version('ret', pg_temp.h('1'), 'k1', 1, 1);
select boxcar.add_storage_version('ret', pg_temp.h('2'), 'k2', 1, 1, pg_temp.h('1'));
select boxcar.add_storage_version('ret', pg_temp.h('b'), 'kb', 1, 1, pg_temp.h('2'), move_head => false);
select boxcar.add_storage_version('ret', pg_temp.h('3'), 'k3', 1, 1, pg_temp.h('2'));
select boxcar.add_storage_version('ret', pg_temp.h('4'), 'k4', 1, 1, pg_temp.h('3'));
select boxcar.add_storage_version('ret', pg_temp.h('5'), 'k5', 1, 1, pg_temp.h('4'));
select boxcar.add_storage_version('ret', pg_temp.h('6'), 'k6', 1, 1, pg_temp.h('5'));
select boxcar.add_storage_version('keepall', pg_temp.h('1'), 'k1', 1, 1);
select boxcar.add_storage_version('keepall', pg_temp.h('2'), 'k2', 1, 1, pg_temp.h('1'));
create function pg_temp.live(s text) returns text language sql as $$
    select string_agg(left(sha256, 1), '' order by id) from boxcar.storage_versions
     where storage = s and removed_at is null
$$;

select throws_ok($$select boxcar.set_storage_retention('ret', 0, null)$$, '22023', null,
                 'keep_last must be positive');
select throws_ok($$select boxcar.set_storage_retention('ret', null, interval '-1 day')$$, '22023', null,
                 'keep_within must be positive');
select is(boxcar.apply_storage_retention(), 0, 'without a policy, everything is kept');
select boxcar.set_storage_retention('ret', 2, null);
select is((select (v->>'keep_last') || ' ' || coalesce(v->>'keep_within', 'null')
             from boxcar.storages_json() v where v->>'name' = 'ret'), '2 null', 'storages_json shows the policy');
select is(boxcar.apply_storage_retention('ret'), 4, 'keep_last 2 removes four versions');
select is(pg_temp.live('ret'), 'b56', 'the two newest stay, and the branch tip');
select is(boxcar.apply_storage_retention('ret'), 0, 'applying it again removes nothing');
select is(pg_temp.live('keepall'), '12', 'a storage without a policy keeps everything');

-- rw: w1 <- w2 <- w3 <- w4 (the head), w1 and w2 made ten days ago.
select boxcar.add_storage_version('rw', pg_temp.h('1'), 'k1', 1, 1);
select boxcar.add_storage_version('rw', pg_temp.h('2'), 'k2', 1, 1, pg_temp.h('1'));
select boxcar.add_storage_version('rw', pg_temp.h('3'), 'k3', 1, 1, pg_temp.h('2'));
select boxcar.add_storage_version('rw', pg_temp.h('4'), 'k4', 1, 1, pg_temp.h('3'));
update boxcar.storage_versions set created_at = now() - interval '10 days'
 where storage = 'rw' and sha256 in (pg_temp.h('1'), pg_temp.h('2'));
select boxcar.set_storage_retention('rw', 3, interval '1 day');
select is(boxcar.apply_storage_retention(), 1, 'keep_last 3 and keep_within a day: one version goes');
select is(pg_temp.live('rw'), '234', 'the oldest, neither recent nor among the three newest');
select boxcar.set_storage_retention('rw', null, interval '1 day');
select is(boxcar.apply_storage_retention('rw'), 1, 'keep_within alone: the other old one goes');
select is(pg_temp.live('rw'), '34', 'what was made within the day stays');
select boxcar.set_storage_retention('rw', null, null);
select is((select v->'keep_within' from boxcar.storages_json() v where v->>'name' = 'rw'), 'null'::jsonb,
          'both null: keep everything');

select * from finish();
rollback;
