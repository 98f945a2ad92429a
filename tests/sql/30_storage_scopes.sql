-- Storages and sessions belong to a scope (migrations/0016_storage_scopes.sql,
-- sql/68_storage_scopes.sql): owners, shares, public storages, the
-- enqueue check of every field naming a storage or a version, on every
-- path a job takes into the table, without telling another scope's
-- storage from one that does not exist; and the worker's resolution.
begin;
select plan(66);
set local client_min_messages = warning;

create function pg_temp.h(c text) returns text language sql as $$ select repeat(c, 64) $$;
create function pg_temp.enq(queue text, spec text) returns uuid language sql as $$
    select boxcar.enqueue(queue, spec::jsonb)
$$;
-- The error an enqueue raises, or 'ok'.
create function pg_temp.err(queue text, spec text) returns text language plpgsql as $$
begin
    perform boxcar.enqueue(queue, spec::jsonb);
    return 'ok';
exception when others then
    return sqlstate || ' ' || sqlerrm;
end $$;

-- acme owns a volume, an image and an artifact; zeta owns nothing.
select boxcar.create_storage('acme-data', 'volume', 'acme');
select boxcar.add_storage_version('acme-data', pg_temp.h('a'), 'k/a', 1, 1, scope => 'acme');
select boxcar.add_storage_version('acme-data', pg_temp.h('b'), 'k/b', 1, 1, scope => 'acme');
select boxcar.create_storage('acme-img', 'image', 'acme');
select boxcar.add_storage_version('acme-img', pg_temp.h('c'), 'k/c', 1, 1, scope => 'acme');
select boxcar.add_storage_version('acme-out', pg_temp.h('d'), 'k/d', 1, 1, scope => 'acme');
-- zeta's own volume holds a version whose sha is acme's too (shared content).
select boxcar.add_storage_version('zeta-data', pg_temp.h('e'), 'k/e', 1, 1, scope => 'zeta');

-- ---- Owners ---------------------------------------------------------------------------------

select is((select owner_scope from boxcar.storages where name = 'acme-data'), 'acme',
          'create_storage gives the storage to the scope given');
select is(boxcar.create_storage('dflt', 'volume'), 'dflt', 'without a scope...');
select is((select owner_scope from boxcar.storages where name = 'dflt'), 'default', '...it is "default"''s');
select throws_ok($$select boxcar.create_storage('acme-data', 'volume', 'zeta')$$, '42501', null,
                 'a name another scope owns cannot be created again');
select throws_ok($$select boxcar.add_storage_version('acme-data', repeat('f', 64), 'k/f', 1, 1, scope => 'zeta')$$,
                 '42501', null, 'nor written to by another scope');
select throws_ok($$select boxcar.add_storage_version('acme-data', repeat('f', 64), 'k/f', 1, 1)$$,
                 '42501', null, 'nor by "default" when no scope is given');
select is((select head_version from boxcar.storages where name = 'acme-data'), pg_temp.h('b'),
          'its head did not move');

-- ---- Enqueue: each field, own and foreign ---------------------------------------------------

select is(pg_temp.err('acme/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data"}]}'),
          'ok', 'a job may mount its scope''s volume');
select is(pg_temp.err('zeta/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data"}]}'),
          '22023 BAD_SPEC: volumes[0].storage: storage "acme-data" not found in scope "zeta"',
          'another scope''s volume is not found');
select is(pg_temp.err('zeta/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"no-such"}]}'),
          '22023 BAD_SPEC: volumes[0].storage: storage "no-such" not found in scope "zeta"',
          'exactly as a volume that does not exist: no existence leak');
select is(pg_temp.err('zeta/q', format('{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data","version":"%s"}]}', pg_temp.h('a'))),
          format('22023 BAD_SPEC: volumes[0].storage: storage "acme-data" not found in scope "zeta"'),
          'knowing the sha256 of a version does not help');
select is(pg_temp.err('zeta/q', format('{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"zeta-data","version":"%s"}]}', pg_temp.h('a'))),
          format('22023 BAD_SPEC: volumes[0].version: storage "zeta-data" has no version %s', pg_temp.h('a')),
          'a version of another storage named under one''s own is refused');
select is(pg_temp.err('acme/q', format('{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data","version":"%s"}]}', pg_temp.h('a'))),
          'ok', 'a version of that storage is accepted');
select is(pg_temp.err('zeta/q', '{"command":["x"],"volumes":[{"name":"o","mount":"/o","storage":"zeta-data"},{"name":"d","mount":"/d","storage":"acme-data"}]}'),
          '22023 BAD_SPEC: volumes[1].storage: storage "acme-data" not found in scope "zeta"',
          'every volume is checked, not only the first');
select is(pg_temp.err('zeta/q', '{"command":["x"],"image":{"storage":"acme-img"}}'),
          '22023 BAD_SPEC: image.storage: storage "acme-img" not found in scope "zeta"',
          'another scope''s image is not found');
select is(pg_temp.err('acme/q', '{"command":["x"],"image":{"storage":"acme-img"}}'), 'ok',
          'its own image is');
select is(pg_temp.err('acme/q', format('{"command":["x"],"image":{"storage":"acme-img","version":"%s"}}', pg_temp.h('a'))),
          format('22023 BAD_SPEC: image.version: storage "acme-img" has no version %s', pg_temp.h('a')),
          'an image version must be a version of that image');
select is(pg_temp.err('zeta/q', '{"command":["x"],"artifact":{"storage":"acme-out"}}'),
          '22023 BAD_SPEC: artifact.storage: storage "acme-out" is not writable in scope "zeta"',
          'another scope''s artifact cannot be written');
select is(pg_temp.err('zeta/q', format('{"command":["x"],"artifact":{"storage":"zeta-new","base":"%s"}}', pg_temp.h('d'))),
          format('22023 BAD_SPEC: artifact.base: storage "zeta-new" has no version %s', pg_temp.h('d')),
          'an artifact base must be a version of that artifact');
select is(pg_temp.err('acme/q', format('{"command":["x"],"artifact":{"storage":"acme-out","base":"%s"}}', pg_temp.h('d'))),
          'ok', 'one of its own is');
select is(pg_temp.err('zeta/q', '{"command":["x"],"artifact":{"storage":"zeta-new"}}'), 'ok',
          'a new artifact name is accepted...');
select is((select owner_scope from boxcar.storages where name = 'zeta-new'), 'zeta',
          '...and reserved for the scope at enqueue');
select is(pg_temp.err('acme/q', '{"command":["x"],"artifact":{"storage":"zeta-new"}}'),
          '22023 BAD_SPEC: artifact.storage: storage "zeta-new" is not writable in scope "acme"',
          'so another scope cannot take it before the first job''s version is recorded');
select is(pg_temp.err('default', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"dflt"}]}'),
          'ok', 'queue "default" is scope "default"');
select is(pg_temp.err('other', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"dflt"}]}'),
          '22023 BAD_SPEC: volumes[0].storage: storage "dflt" not found in scope "other"',
          'queue "other" is scope "other", not "default"');

-- A direct insert is checked as enqueue is (the trigger).
select throws_ok($$insert into boxcar.jobs (queue, spec) values ('zeta/q', '{"command":["x"],"image":{"storage":"acme-img"}}')$$,
                 '22023', 'BAD_SPEC: image.storage: storage "acme-img" not found in scope "zeta"',
                 'a row inserted around enqueue is checked too');
select lives_ok($$insert into boxcar.jobs (queue, spec, status) values ('zeta/q', '{"command":["x"],"image":{"storage":"acme-img"}}', 'failed')$$,
                'a finished row (history) is not');
select lives_ok($$insert into boxcar.jobs (queue, spec) values ('zeta/q', '{"command":["x"],"image":{"storage":"acme-img","tag":1},"artifact":{"storage":"zeta-malformed"}}')$$,
                'a malformed row is let in: the worker fails it at claim, naming the field, before resolving anything');
select is((select count(*)::int from boxcar.storages where name = 'zeta-malformed'), 0, 'and it reserves nothing');

-- ---- Shares and public ----------------------------------------------------------------------

select lives_ok($$select boxcar.share_storage('acme-data', 'zeta')$$, 'acme shares its volume with zeta');
select lives_ok($$select boxcar.share_storage('acme-data', 'zeta')$$, 'sharing again is a no-op');
select throws_ok($$select boxcar.share_storage('acme-data', 'acme')$$, '22023', null, 'not with its owner');
select throws_ok($$select boxcar.share_storage('no-such', 'zeta')$$, 'P0002', null, 'nor a storage that does not exist');
select throws_ok($$select boxcar.share_storage('acme-data', '../x')$$, '22023', null, 'nor with a malformed scope');
select is(pg_temp.err('zeta/q', format('{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data","version":"%s"}]}', pg_temp.h('a'))),
          'ok', 'zeta may now mount it');
select is((select count(*)::int from boxcar.resolve_storage_version('acme-data', 'latest', 'zeta')), 1,
          'and the worker resolves it for zeta');
select is(pg_temp.err('zeta/q', '{"command":["x"],"artifact":{"storage":"acme-data"}}'),
          '22023 BAD_SPEC: artifact.storage: storage "acme-data" is not writable in scope "zeta"',
          'but never write a version to it');
select is(pg_temp.err('other/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data"}]}'),
          '22023 BAD_SPEC: volumes[0].storage: storage "acme-data" not found in scope "other"',
          'a share is for that scope only');
select is((select s->'shared_with' from boxcar.storages_json() s where s->>'name' = 'acme-data'),
          '["zeta"]'::jsonb, 'storages_json shows the shares');
select is((select string_agg(s->>'name', ',') from boxcar.storages_json(null, 'zeta') s),
          'acme-data,zeta-data,zeta-new', 'with a scope, only what it may read');

create temp table queued as
    select pg_temp.enq('zeta/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data"}]}') as id;
select is(boxcar.unshare_storage('acme-data', 'zeta'), true, 'unshare');
select is(boxcar.unshare_storage('acme-data', 'zeta'), false, 'unsharing again says it was not');
select is(pg_temp.err('zeta/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data"}]}'),
          '22023 BAD_SPEC: volumes[0].storage: storage "acme-data" not found in scope "zeta"',
          'unshared: refused again');
select is((select count(*)::int from boxcar.resolve_storage_version('acme-data', 'latest', 'zeta')), 0,
          'a job queued while it was shared no longer resolves it');
select is((select count(*)::int from boxcar.resolve_image('acme-img', 'latest', 'zeta')), 0,
          'nor another scope''s image');
select is((select sha256 from boxcar.artifact_start('acme-out', 'latest', 'zeta')), null,
          'nor another scope''s artifact base...');
select is((select head from boxcar.artifact_start('acme-out', 'latest', 'zeta')), null, '...nor its head');
select is((select sha256 from boxcar.artifact_start('acme-out', 'latest', 'acme')), pg_temp.h('d'),
          'its owner''s job starts from it');

select lives_ok($$select boxcar.set_storage_public('acme-img', true)$$, 'acme makes its image public');
select is(pg_temp.err('other/q', '{"command":["x"],"image":{"storage":"acme-img"}}'), 'ok',
          'every scope may run on it');
select is(pg_temp.err('other/q', '{"command":["x"],"artifact":{"storage":"acme-img"}}'),
          '22023 BAD_SPEC: artifact.storage: storage "acme-img" is not writable in scope "other"',
          'public is read-only too');
select lives_ok($$select boxcar.set_storage_public('acme-img', false)$$, 'public off');
select is(pg_temp.err('other/q', '{"command":["x"],"image":{"storage":"acme-img"}}'),
          '22023 BAD_SPEC: image.storage: storage "acme-img" not found in scope "other"',
          'then it is acme''s alone again');

-- ---- Retry, moves and schedules ------------------------------------------------------------

create temp table mine as
    select pg_temp.enq('acme/q', '{"command":["x"],"volumes":[{"name":"d","mount":"/d","storage":"acme-data"}]}') as id;
select throws_ok(format($$update boxcar.jobs set queue = 'zeta/q' where id = '%s'$$, (select id from mine)),
                 '22023', 'BAD_SPEC: volumes[0].storage: storage "acme-data" not found in scope "zeta"',
                 'a queued job moved to another scope''s queue is checked for that scope');
select throws_ok(format($$update boxcar.jobs set spec = '{"command":["x"],"image":{"storage":"zeta-data"}}' where id = '%s'$$,
                        (select id from mine)),
                 '22023', 'BAD_SPEC: image.storage: storage "zeta-data" not found in scope "acme"',
                 'and a spec rewritten in place is checked');

update boxcar.jobs set status = 'failed', finished_at = now() where id = (select id from queued);
select throws_ok(format($$select boxcar.retry('%s', 'test')$$, (select id from queued)), '22023',
                 'BAD_SPEC: volumes[0].storage: storage "acme-data" not found in scope "zeta"',
                 'a manual retry of a job whose storage was unshared is refused');
select boxcar.schedule_add('steal', '* * * * *', 'zeta/q',
                              '{"command":["x"],"image":{"storage":"acme-img"}}'::jsonb);
update boxcar.schedules set next_run_at = now() - interval '1 minute' where name = 'steal';
select is(boxcar.schedule_tick(), 0, 'a schedule naming another scope''s storage enqueues nothing');
select is((select last_error from boxcar.schedules where name = 'steal'),
          'BAD_SPEC: image.storage: storage "acme-img" not found in scope "zeta"', 'and says why');

-- ---- Sessions -------------------------------------------------------------------------------

select pg_temp.enq('acme/q', '{"command":["x"],"session":{"id":"s1"}}');
select pg_temp.enq('zeta/q', '{"command":["x"],"session":{"id":"s1"}}');
select is((select string_agg(scope || '=' || storage, ',' order by scope) from boxcar.sessions where id = 's1'),
          'acme=session-acme.s1,zeta=session-zeta.s1', 'two scopes may use the same session id, each its own storage');
select is((select string_agg(name || '=' || owner_scope, ',' order by name) from boxcar.storages
            where name like 'session-%.s1'),
          'session-acme.s1=acme,session-zeta.s1=zeta', 'each owned by its session''s scope');
select pg_temp.enq('default', '{"command":["x"],"session":{"id":"s2"}}');
select is((select storage from boxcar.sessions where scope = 'default' and id = 's2'), 'session-s2',
          'scope "default" keeps the name sessions had');
select is(pg_temp.err('zeta/q', '{"command":["x"],"session":{"id":"s1"},"artifact":{"storage":"session-acme.s1"}}'),
          '22023 BAD_SPEC: artifact.storage: a session''s files are in its own storage "session-zeta.s1"',
          'a session job cannot name another scope''s session storage');
select boxcar.add_storage_version('session-acme.s1', pg_temp.h('9'), 'k/9', 1, 1, scope => 'acme');
select is(pg_temp.err('zeta/q', '{"command":["x"],"session":{"id":"z2","from":{"session":"s1"}}}'),
          '22023 BAD_SPEC: session.from.version: session "s1" has no checkpoint yet',
          'a fork from s1 is from the scope''s own s1 (acme''s has a checkpoint)');
select is(pg_temp.err('zeta/q', format('{"command":["x"],"session":{"id":"z3","from":{"session":"s1","version":"%s"}}}', pg_temp.h('9'))),
          format('22023 BAD_SPEC: session.from.version: session "s1" has no version %s', pg_temp.h('9')),
          'acme''s checkpoint sha is no version of zeta''s s1');
select is((select count(*)::int from boxcar.session_list('zeta')), 1, 'session_list of a scope lists its own only');
select throws_ok($$select boxcar.end_session('zeta', 'nope')$$, '22023', null,
                 'end_session of a session another scope has not: unknown');

select * from finish();
rollback;
