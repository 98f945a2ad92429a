begin;
select plan(42);

create function pg_temp.h(c text) returns text language sql as $$ select repeat(c, 64) $$;
create function pg_temp.l(n int) returns text language sql as $$
    select encode(sha256(convert_to('layer ' || n, 'UTF8')), 'hex')
$$;
create function pg_temp.candidates(grace interval) returns text language sql as $$
    select coalesce(string_agg(key, ' ' order by ord), '')
      from boxcar.storage_gc_candidates(grace) with ordinality as c (key, kind, sha256, size, ord)
$$;
create function pg_temp.register(key text, kind text, sha text, size bigint) returns void language sql as $$
    select boxcar.register_storage_objects(array[key], array[kind], array[sha], array[size])
$$;

-- p1: a (tree a, one layer l1) <- b (head: tree b, bottom tree c, one layer
-- l3, and its whole-tree tarball).  Registered two days ago, with an
-- orphan three days ago and a fresh orphan now.
select boxcar.add_storage_version('p1', pg_temp.h('a'), null, 1, 1, layers => array[pg_temp.l(1)],
                                  bottom_tree => pg_temp.h('a'));
select boxcar.add_storage_version('p1', pg_temp.h('b'), 'tarballs/b', 1, 1, pg_temp.h('a'),
                                  layers => array[pg_temp.l(3)], bottom_tree => pg_temp.h('c'));
select boxcar.register_storage_objects(
    array['layers/l1', 'layers/l3', 'trees/a', 'trees/b', 'trees/c', 'tarballs/b', 'orphan', 'fresh', 'orphan'],
    array['layer', 'layer', 'tree', 'tree', 'tree', 'layer', 'layer', 'layer', 'layer'],
    array[pg_temp.l(1), pg_temp.l(3), pg_temp.h('a'), pg_temp.h('b'), pg_temp.h('c'), pg_temp.l(9),
          pg_temp.l(8), pg_temp.l(7), pg_temp.l(8)],
    array[10, 30, 1, 2, 3, 90, 80, 70, 40]::bigint[]);
select is((select size from boxcar.storage_objects where key = 'orphan'), 80::bigint,
          'a key given twice in one call is registered once, with the larger size');
update boxcar.storage_objects set last_used_at = now() - interval '2 days' where key <> 'fresh';
update boxcar.storage_objects set last_used_at = now() - interval '3 days' where key = 'orphan';
select is(boxcar.storage_bytes_stored(), 286::bigint, 'storage_bytes_stored sums what is registered');

-- What is referenced.
select ok(boxcar.storage_object_referenced('layer', pg_temp.l(1), 'layers/l1'), 'a live version''s layer is referenced');
select ok(boxcar.storage_object_referenced('tree', pg_temp.h('b'), 'trees/b'), 'so is its tree');
select ok(boxcar.storage_object_referenced('tree', pg_temp.h('c'), 'trees/c'), 'and its bottom tree');
select ok(boxcar.storage_object_referenced('layer', pg_temp.l(9), 'tarballs/b'), 'and its tarball');
select ok(not boxcar.storage_object_referenced('layer', pg_temp.l(8), 'orphan'), 'an orphan is not');
select ok(not boxcar.storage_object_referenced('tree', pg_temp.l(1), 'x'),
          'a layer''s sha256 as a tree is not referenced');
select ok(not boxcar.storage_object_referenced('layer', pg_temp.h('b'), 'x'),
          'a tree''s sha256 as a layer is not referenced');
select is(pg_temp.candidates('1 day'), 'orphan',
          'the only candidate: unreferenced and registered before the grace period');
select is(pg_temp.candidates('4 days'), '', 'nothing is a candidate within its grace period');

-- Protection: a queued job naming the storage keeps its removed versions.
-- Pushed without a scope ("default"'s): given to the job's scope.
select boxcar.set_storage_owner('p1', 'gc');
create temp table job as select boxcar.enqueue('gc', '{"command":["x"],"artifact":{"storage":"p1"}}') as id;
select ok(boxcar.storage_version_protected('p1'), 'a storage a queued job names is protected');
select ok(not boxcar.storage_version_protected('p'), 'a storage whose name is only part of one is not');
select boxcar.remove_storage_version('p1', pg_temp.h('a'));
select is(pg_temp.candidates('1 day'), 'orphan', 'objects of a removed version of a protected storage stay');
select is(boxcar.purge_removed_storage_versions(), 0, 'purge deletes no version of a protected storage');
select is((select count(*)::int from boxcar.storage_versions where storage = 'p1' and removed_at is not null), 1,
          'the removed version is kept as a row');
select boxcar.cancel((select id from job));
select ok(not boxcar.storage_version_protected('p1'), 'once the job ended, the storage is not protected');
select is(pg_temp.candidates('1 day'), 'orphan layers/l1 trees/a',
          'the removed version''s layer and tree become candidates, oldest first');
select is((select count(*)::int from boxcar.storage_gc_candidates('1 day', 1)), 1, 'max_rows caps the list');
select is(boxcar.purge_removed_storage_versions(), 1, 'purge now deletes it');
select is((select count(*)::int from boxcar.storage_versions where storage = 'p1'), 1, 'the head stays');
select ok(not boxcar.storage_object_referenced('layer', pg_temp.l(1), 'layers/l1'), 'its layer is not referenced');

-- Claim and forget.
select is(boxcar.storage_gc_claim('layers/l3', '1 day'), null, 'a referenced object is not claimed');
select is(boxcar.storage_gc_claim('fresh', '1 day'), null, 'nor an object within its grace period');
select is(boxcar.storage_gc_claim('orphan', '4 days'), null, 'grace as the collector gives it');
select is(boxcar.storage_gc_claim('nothing', '1 day'), null, 'nor an object never registered');
select is(boxcar.storage_gc_claim('orphan', '1 day'), 80::bigint, 'an old unreferenced object is claimed');
select lives_ok($$select boxcar.storage_gc_forget('orphan')$$, 'and forgotten once deleted');
select is((select count(*)::int from boxcar.storage_objects where key = 'orphan'), 0, 'it is no longer registered');
select is(boxcar.storage_bytes_stored(), 206::bigint, 'nor counted');

-- Registering again refreshes.
select pg_temp.register('layers/l1', 'layer', pg_temp.l(1), 5);
select is((select (last_used_at = now())::text || ' ' || size from boxcar.storage_objects where key = 'layers/l1'),
          'true 10', 'registering a known object refreshes it and keeps the larger size');
select is(pg_temp.candidates('1 day'), 'trees/a', 'a refreshed object is no longer a candidate');
select pg_temp.register('layers/l1', 'layer', pg_temp.l(1), 15);
select is((select size from boxcar.storage_objects where key = 'layers/l1'), 15::bigint, 'a larger size is taken');
select throws_ok($$select boxcar.register_storage_objects(array['k'], array['layer'], array[]::text[], array[1::bigint])$$,
                 '22023', null, 'arrays of different lengths are refused');
select throws_ok($$select pg_temp.register('k', 'blob', pg_temp.l(1), 1)$$, '23514', null,
                 'an unknown kind is refused');

-- Removed storages: purged with their versions, unless a job names them.
select boxcar.add_storage_version('p2', pg_temp.h('d'), 'kd', 1, 1);
select boxcar.add_storage_version('p3', pg_temp.h('e'), 'ke', 1, 1);
select boxcar.set_storage_owner('p3', 'gc');
select boxcar.enqueue('gc', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"p3"}]}');
select ok(boxcar.storage_version_protected('p3'), 'a storage a job mounts as a volume is protected');
select boxcar.remove_storage('p2');
select boxcar.remove_storage('p3');
select ok(boxcar.storage_object_referenced('layer', pg_temp.h('e'), 'ke'), 'a removed protected storage''s tarball is referenced');
select is(boxcar.purge_removed_storage_versions(), 1, 'purge deletes the unprotected storage''s version');
select is((select string_agg(name, ' ' order by name) from boxcar.storages where name in ('p2', 'p3')), 'p3',
          'and the storage, but not the protected one');

-- The collector skips an object whose registration is in progress instead
-- of waiting (another session holds it; committed so that session sees it).
\getenv sockdir BOXCAR_PG_SOCKDIR
\getenv port BOXCAR_PG_PORT
create extension if not exists dblink;
select dblink_connect('gc', format('host=%s port=%s dbname=%s user=postgres', :'sockdir', :'port',
                                   current_database()));
select dblink_exec('gc', $$insert into boxcar.storage_objects (key, kind, sha256, size, last_used_at)
                          values ('gc-lock-test', 'layer', repeat('f', 64), 5, now() - interval '2 days')$$);
select dblink_exec('gc', 'begin');
select * from dblink('gc', $$select boxcar.register_storage_objects(array['gc-lock-test'], array['layer'],
                                                                      array[repeat('f', 64)], array[5::bigint])::text$$)
           as t (nothing text);
select is(boxcar.storage_gc_claim('gc-lock-test', '1 day'), null,
          'an object being registered is skipped, not waited for');
select dblink_exec('gc', 'rollback');
select is(boxcar.storage_gc_claim('gc-lock-test', '1 day'), 5::bigint, 'once the registration is gone, it is claimed');
create temp table remote as select pid from dblink('gc', 'select pg_backend_pid()') as t (pid integer);
select dblink_send_query('gc', $$select boxcar.register_storage_objects(array['gc-lock-test'], array['layer'],
                                                                        array[repeat('f', 64)], array[5::bigint])$$);
create function pg_temp.waits_on_lock(p integer) returns boolean language plpgsql as $$
begin
    for i in 1..100 loop
        if exists (select from pg_locks where pid = p and not granted) then
            return true;
        end if;
        perform pg_sleep(0.05);
    end loop;
    return false;
end $$;
select ok(pg_temp.waits_on_lock((select pid from remote)), 'a registration waits while the collector holds the object');
select dblink_cancel_query('gc');
select dblink_disconnect('gc');

select * from finish();
rollback;
-- What the other session committed.
delete from boxcar.storage_objects where key = 'gc-lock-test';
