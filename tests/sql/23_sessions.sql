-- Sessions (issue 47, sql/75_sessions.sql): the jobs' trigger (artifact,
-- the session's row, its scope, its idle timeout, forks), the claim's
-- routing to the holder, and the worker's and user's calls.  Jobs are
-- inserted directly: the trigger serves enqueue() and direct inserts alike.
begin;
select plan(98);
set local client_min_messages = warning;

create function pg_temp.job(queue text, spec text, status text default 'queued') returns uuid
language sql as $$
    insert into boxcar.jobs (queue, spec, status) values (queue, spec::jsonb, status) returning id
$$;
create function pg_temp.s(scope text, id text) returns boxcar.sessions language sql as $$
    select * from boxcar.sessions s where s.scope = $1 and s.id = $2
$$;
create function pg_temp.h(c text) returns text language sql as $$ select repeat(c, 64) $$;
create function pg_temp.claimed(w text, inst text, queue text, n int default 10) returns uuid[]
language sql as $$
    select coalesce(array_agg(c.id order by c.id), '{}') from boxcar.claim(w, array[queue], n, '30 seconds', inst) c
$$;
create function pg_temp.done(id uuid, w text) returns boolean language sql as $$
    select boxcar.complete(id, w, 'succeeded')
$$;

-- ---- The trigger --------------------------------------------------------------------------

create temp table t1 as select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"t1"}}') as id;
select is((select spec->'artifact' from boxcar.jobs where id = (select id from t1)),
          '{"storage":"session-acme.t1"}'::jsonb, 'a session job without an artifact gets its session''s storage');
select is((select artifact_storage || ' ' || session_id from boxcar.jobs where id = (select id from t1)),
          'session-acme.t1 t1', 'the generated columns see it: artifact_storage and session_id');
select is((select row(s.storage, s.state, s.idle_timeout_s, s.starts, s.jobs)::text
             from pg_temp.s('acme', 't1') s),
          row('session-acme.t1', 'stopped', 300::float8, 0, 0)::text,
          'the first job makes the session''s row, scope of its queue, stopped, idle timeout 300');
create temp table t1b as
    select pg_temp.job('acme/other', '{"command":["x"],"session":{"id":"t1","idle_timeout_s":60}}') as id;
select is((pg_temp.s('acme', 't1')).idle_timeout_s, 60::float8,
          'a later job (another queue of the scope) sets the idle timeout');
select ok((select blocked from boxcar.jobs where id = (select id from t1b)),
          'and waits behind the session''s first job (its artifact storage''s order)');
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"t1"}}');
select is((pg_temp.s('acme', 't1')).idle_timeout_s, 300::float8,
          'the latest job''s idle timeout counts, the default when it gives none');
create temp table given as
    select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"t1"},'
                                 '"artifact":{"storage":"session-acme.t1","base":"empty"}}') as id;
select is((select spec->'artifact' from boxcar.jobs where id = (select id from given)),
          '{"storage":"session-acme.t1","base":"empty"}'::jsonb, 'an artifact the job gives is kept');
create temp table finished as
    select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"t1"}}', 'succeeded') as id;
select is((select spec->'artifact' from boxcar.jobs where id = (select id from finished)),
          '{"storage":"session-acme.t1"}'::jsonb, 'a job inserted finished gets the artifact too');
create temp table nosession as select pg_temp.job('acme/q', '{"command":["x"]}') as id;
select is((select spec ? 'artifact' from boxcar.jobs where id = (select id from nosession)),
          false, 'a job without a session is left alone');
select is(boxcar.session_fill_spec('{"command":["x"],"session":{"id":"t1"}}', 'acme'),
          (select spec from boxcar.jobs where id = (select id from t1)),
          'session_fill_spec gives the spec as stored (what an idempotent enqueue compares)');
select is(boxcar.session_fill_spec('{"command":["x"]}', 'acme'), '{"command":["x"]}'::jsonb,
          'and leaves a spec without a session as it is');
select pg_temp.job('plain', '{"command":["x"],"session":{"id":"t2"}}');
select is((select scope from boxcar.sessions where id = 't2'), 'plain',
          'a queue without a scope is its own scope');
select lives_ok($$select pg_temp.job('other/q', '{"command":["x"],"session":{"id":"t1"}}')$$,
                'another scope may use the same session id (issue 48)');
select is((pg_temp.s('other', 't1')).storage, 'session-other.t1', 'its session has a storage of its own');
select is((select owner_scope from boxcar.storages where name = 'session-other.t1'), 'other',
          'owned by that scope');
select is((select count(*)::int from boxcar.sessions where id = 't1'), 2, 'two session rows, one per scope');
select lives_ok($$select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"-bad"}}')$$,
                'a malformed session inserted directly goes in (its claim fails it, BAD_SPEC)');
select is((select count(*)::int from boxcar.sessions where id = '-bad'), 0,
          'and makes no session row');

-- ---- Forks --------------------------------------------------------------------------------

-- Session src (scope acme) with two versions: a tree version, then the head.
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"src"}}');
select boxcar.add_storage_version('session-acme.src', pg_temp.h('a'), null, 10, 1, null, null, true,
                                  array[pg_temp.h('1')], pg_temp.h('1'), scope => 'acme');
select boxcar.add_storage_version('session-acme.src', pg_temp.h('b'), 'trees/b', 20, 2, pg_temp.h('a'), null, true,
                                  array[pg_temp.h('1'), pg_temp.h('2')], pg_temp.h('1'), scope => 'acme');
create temp table objects_before as select count(*) as n from boxcar.storage_objects;

select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"dst","from":{"session":"src","version":"latest"}}}');
select is((select row(v.sha256, v.s3_key, v.size, v.file_count, v.format, v.layers, v.bottom_tree, v.parent_sha256)::text
             from boxcar.storage_versions v where v.storage = 'session-acme.dst'),
          row(pg_temp.h('b'), 'trees/b', 20::bigint, 2::bigint, 'tree', array[pg_temp.h('1'), pg_temp.h('2')],
              pg_temp.h('1'), null::text)::text,
          'a fork from "latest" records the source''s head in the new session''s storage: same tree, layers, key');
select is((select head_version from boxcar.storages where name = 'session-acme.dst'), pg_temp.h('b'),
          'and makes it the head: the session''s first sandbox starts from it');
select is((select row(forked_from, forked_version)::text from pg_temp.s('acme', 'dst')),
          row('src', pg_temp.h('b'))::text, 'the session says what it was forked from');
select is((select count(*) from boxcar.storage_objects), (select n from objects_before),
          'no object was registered: nothing is copied');
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"dst2","from":{"session":"src","version":"'
                             || pg_temp.h('a') || '"}}}');
select is((select sha256 || ' ' || cardinality(layers) from boxcar.storage_versions where storage = 'session-acme.dst2'),
          pg_temp.h('a') || ' 1', 'a fork from a given version takes that one');
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"dst","from":{"session":"src","version":"'
                             || pg_temp.h('a') || '"}}}');
select is((select string_agg(sha256, ',') from boxcar.storage_versions where storage = 'session-acme.dst'),
          pg_temp.h('b'), 'from is ignored once the session has a version of its own');
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"dst3","from":{"session":"src"}}}', 'succeeded');
select is((select count(*)::int from boxcar.storage_versions where storage = 'session-acme.dst3'), 0,
          'a job inserted finished does not fork');
-- A tarball version (made before layered versions) forks as one.
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"old"}}');
select boxcar.add_storage_version('session-acme.old', pg_temp.h('c'), 'sha256/cc/c.tar.gz', 5, 1, scope => 'acme');
select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"dst4","from":{"session":"old"}}}');
select is((select format || ' ' || s3_key || ' ' || (layers = array[pg_temp.h('c')])::text
             from boxcar.storage_versions where storage = 'session-acme.dst4'),
          'tarball sha256/cc/c.tar.gz true', 'a tarball version forks as a tarball version (version defaults to latest)');

select throws_ok($$select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"f1","from":{"session":"nope"}}}')$$,
                 '22023', 'BAD_SPEC: session.from.session: no session "nope" in this scope',
                 'a fork from an unknown session is refused');
select pg_temp.job('zeta/q', '{"command":["x"],"session":{"id":"zsrc"}}');
select boxcar.add_storage_version('session-zeta.zsrc', pg_temp.h('d'), 'k/d', 5, 1, scope => 'zeta');
select throws_ok($$select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"f1","from":{"session":"zsrc"}}}')$$,
                 '22023', 'BAD_SPEC: session.from.session: no session "zsrc" in this scope',
                 'so is one from another scope''s session');
select throws_ok($$select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"f1","from":{"session":"t1"}}}')$$,
                 '22023', 'BAD_SPEC: session.from.version: session "t1" has no checkpoint yet',
                 'and one from a session without a checkpoint');
select throws_ok(format($$select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"f1","from":{"session":"src","version":"%s"}}}')$$,
                        pg_temp.h('e')),
                 '22023', 'BAD_SPEC: session.from.version: session "src" has no version ' || pg_temp.h('e'),
                 'and one from a version the source does not have');
select boxcar.remove_storage_version('session-acme.src', pg_temp.h('a'));
select throws_ok(format($$select pg_temp.job('acme/q', '{"command":["x"],"session":{"id":"f1","from":{"session":"src","version":"%s"}}}')$$,
                        pg_temp.h('a')),
                 '22023', 'BAD_SPEC: session.from.version: session "src" has no version ' || pg_temp.h('a'),
                 'or one it removed');
select is((select count(*)::int from boxcar.sessions where id = 'f1')
          + (select count(*)::int from boxcar.storages where name = 'session-acme.f1'), 0,
          'a refused fork leaves neither a session nor a storage');

-- ---- Claim routing ------------------------------------------------------------------------

create temp table r as
    select n, pg_temp.job('rt/q', '{"command":["' || n || '"],"session":{"id":"r1"}}') as id
      from unnest(array['r1a', 'r1b', 'r1c']) n;
create function pg_temp.r(n text) returns uuid language sql as $$ select id from r where r.n = $1 $$;
select is(pg_temp.claimed('A', 'ia', 'rt/q'), array[pg_temp.r('r1a')],
          'the session''s first job is claimed, alone (its next ones wait their turn)');
select is((select row(resumed, previous_holder, starts)::text from boxcar.session_hold('A', 'ia', 'rt', 'r1')),
          row(false, null::text, 1)::text, 'worker A holds the session: a new sandbox (nothing to resume), start 1');
select ok(pg_temp.done(pg_temp.r('r1a'), 'A'), 'its first job ends');
create temp table plain as select pg_temp.job('rt/q', '{"command":["p"]}') as id;
create temp table other as select pg_temp.job('rt/q', '{"command":["o"],"session":{"id":"r2"}}') as id;
select is(pg_temp.claimed('B', 'ib', 'rt/q'),
          (select array_agg(id order by id) from (select id from plain union all select id from other) x),
          'worker B gets the other jobs of the queue, not the next job of the session A holds');
select is(pg_temp.claimed('A', 'ia2', 'rt/q'), '{}'::uuid[],
          'nor does another process under A''s name');
select is(pg_temp.claimed('A', 'ia', 'rt/q'), array[pg_temp.r('r1b')], 'A does');
select is(pg_temp.claimed('A', 'ia', 'rt/q'), '{}'::uuid[],
          'the one after waits for it, holder or not (one at a time)');
select ok(pg_temp.done(pg_temp.r('r1b'), 'A'), 'it ends');
update boxcar.sessions set held_until = now() - interval '1 second' where id = 'r1';
select is(pg_temp.claimed('B', 'ib', 'rt/q'), array[pg_temp.r('r1c')],
          'once A''s hold lapsed, B gets the session''s next job');
select is((select row(resumed, previous_holder, starts)::text from boxcar.session_hold('B', 'ib', 'rt', 'r1')),
          row(false, 'A', 2)::text, 'and holds the session in turn: previous holder A, start 2');

-- The limited claim (queue_config) routes the same way.
insert into boxcar.queue_config (queue, max_running) values ('rl/q', 10);
create temp table l as
    select n, pg_temp.job('rl/q', '{"command":["' || n || '"],"session":{"id":"l1"}}') as id
      from unnest(array['l1a', 'l1b']) n;
select is(pg_temp.claimed('A', 'ia', 'rl/q'), array[(select id from l where n = 'l1a')],
          'a limited queue: the session''s first job is claimed');
select ok((select starts = 1 from boxcar.session_hold('A', 'ia', 'rl', 'l1')), 'A holds it');
select ok(pg_temp.done((select id from l where n = 'l1a'), 'A'), 'its job ends');
select is(pg_temp.claimed('B', 'ib', 'rl/q'), '{}'::uuid[], 'B does not get the next one (claim_limited)');
select is(pg_temp.claimed('A', 'ia', 'rl/q'), array[(select id from l where n = 'l1b')], 'A does');

-- ---- Hold, renew, release, end --------------------------------------------------------------

select pg_temp.job('hs/q', '{"command":["x"],"session":{"id":"h1"}}');
select is((select count(*)::int from boxcar.session_hold('A', 'ia', 'hs', 'h1', '1 minute')), 1, 'A holds h1');
select is((select row(state, holder, holder_instance, held_until = now() + interval '1 minute',
                      started_at = now())::text from pg_temp.s('hs', 'h1')),
          row('live', 'A', 'ia', true, true)::text, 'h1 is live, held by A''s instance for the lease');
select is((select count(*)::int from boxcar.session_hold('B', 'ib', 'hs', 'h1')), 0,
          'B cannot hold it while A''s hold runs');
select throws_ok($$select * from boxcar.session_hold('A', 'ia', 'hs', 'nope')$$, '22023',
                 'no session "nope" in scope "hs"', 'holding an unknown session is an error');
select throws_ok($$select * from boxcar.session_hold('A', 'ia', 'hs', 'h1', '0 seconds')$$, '22023',
                 'lease: must be a positive interval', 'so is a lease that is not positive');
select is((select array_agg(row(scope, id, end_requested)::text order by scope, id)
             from boxcar.session_renew('A', 'ia', '2 minutes')),
          (select array_agg(row(s.scope, s.id, false)::text order by s.scope, s.id) from boxcar.sessions s
            where s.holder = 'A' and s.holder_instance = 'ia'),
          'renewing returns every session the instance holds');
select ok((pg_temp.s('hs', 'h1')).held_until = now() + interval '2 minutes', 'and extends their holds');
select is((select count(*)::int from boxcar.session_renew('A', 'ia2')), 0,
          'another process under the same name renews none of them');
select is((select count(*)::int from boxcar.session_renew('B', 'ib')), 1,
          'B renews only the session it holds (r1)');
select ok(not boxcar.session_release('B', 'ib', 'hs', 'h1', 'idle'), 'B cannot release A''s session');
select throws_ok($$select boxcar.session_release('A', 'ia', 'hs', 'h1', 'bored')$$, '22023',
                 'reason: must be idle, evicted, ended, drain, lifetime, failed or lost',
                 'a release names its reason');
select ok(boxcar.session_release('A', 'ia', 'hs', 'h1', 'idle'), 'A releases h1, idle');
select is((select row(state, holder, held_until, idle_ends, evictions)::text from pg_temp.s('hs', 'h1')),
          row('stopped', null::text, null::timestamptz, 1, 0)::text,
          'h1 is stopped, nobody''s, one idle end counted');
select ok(not boxcar.session_release('A', 'ia', 'hs', 'h1', 'idle'), 'a second release is refused');

-- A checkpoint: the next start resumes.
select boxcar.add_storage_version('session-hs.h1', pg_temp.h('f'), 'k/f', 5, 1, scope => 'hs');
select is((select row(resumed, previous_holder, starts)::text from boxcar.session_hold('B', 'ib', 'hs', 'h1')),
          row(true, null::text, 2)::text,
          'B starts h1 again: from its checkpoint (resumed); nobody held it (A released it)');
select is((pg_temp.s('hs', 'h1')).resumes, 1, 'resumes counts it');
select ok(boxcar.session_release('B', 'ib', 'hs', 'h1', 'evicted'), 'B evicts it');
select is((select row(state, idle_ends, evictions)::text from pg_temp.s('hs', 'h1')),
          row('stopped', 1, 1)::text, 'evictions counts it');

select ok(boxcar.session_job_done('hs', 'h1'), 'a job of h1 ended');
select is((select row(jobs, last_job_at = now())::text from pg_temp.s('hs', 'h1')), row(1, true)::text,
          'jobs and last_job_at count it');
select ok(not boxcar.session_job_done('hs', 'nope'), 'an unknown session''s job end is refused');

-- Ending.
select ok((select count(*) = 1 from boxcar.session_hold('A', 'ia', 'hs', 'h1')), 'A holds h1 again');
select is(boxcar.end_session('hs', 'h1'), 'ending', 'ending a live session asks its holder: ending');
select is((select row(state, end_requested_at = now())::text from pg_temp.s('hs', 'h1')),
          row('live', true)::text, 'it stays live, its end asked');
select is((select end_requested from boxcar.session_renew('A', 'ia') where id = 'h1'), true,
          'the holder''s renewal says the end was asked');
select ok(boxcar.session_release('A', 'ia', 'hs', 'h1', 'ended'), 'the holder releases it, ended');
select is((select row(state, ended_at = now(), holder)::text from pg_temp.s('hs', 'h1')),
          row('ended', true, null::text)::text, 'h1 is ended');
select is(boxcar.end_session('hs', 'h1'), 'ended', 'ending it again answers ended');
select ok((select count(*) = 1 from boxcar.session_hold('A', 'ia', 'hs', 'h1')),
          'a job of an ended session starts it again');
select is((select row(state, ended_at, end_requested_at)::text from pg_temp.s('hs', 'h1')),
          row('live', null::timestamptz, null::timestamptz)::text, 'live again, the end forgotten');
select is(boxcar.end_session('hs', 'h1'), 'ending', 'an end asked again');
select ok(boxcar.session_release('A', 'ia', 'hs', 'h1', 'idle'), 'released for another reason meanwhile');
select is((pg_temp.s('hs', 'h1')).state, 'ended', 'the session is ended all the same');
select pg_temp.job('hs/q', '{"command":["x"],"session":{"id":"h2"}}');
select is(boxcar.end_session('hs', 'h2'), 'ended', 'a session nobody runs is ended at once');
select ok((select state = 'ended' and ended_at = now() from pg_temp.s('hs', 'h2')), 'its row says so');
select throws_ok($$select boxcar.end_session('hs', 'nope')$$, '22023', 'no session "nope" in scope "hs"',
                 'ending an unknown session is an error');

-- ---- Listing, lapsed holds, housekeeping -----------------------------------------------------

select boxcar.register_worker('A', 'h', 1, '{hs/q}', 1, 'test', 30, 'ia');
select pg_temp.job('hs/q', '{"command":["x"],"session":{"id":"h3"}}');
select pg_temp.job('hs/q', '{"command":["y"],"session":{"id":"h3"}}');
select boxcar.session_hold('A', 'ia', 'hs', 'h3');
select boxcar.add_storage_version('session-hs.h3', pg_temp.h('9'), 'k/9', 5, 1, scope => 'hs');
select is((select row(state, holder, holder_alive, checkpoint, queued, running)::text
             from boxcar.session_list('hs') where id = 'h3'),
          row('live', 'A', true, pg_temp.h('9'), 2::bigint, 0::bigint)::text,
          'session_list: live, its holder alive, its checkpoint, its jobs queued');
select is((select array_agg(id) from boxcar.session_list('hs')), array['h1', 'h2', 'h3'],
          'one scope''s sessions, by id');
select ok((select count(*) > 3 from boxcar.session_list()), 'without a scope, every session');
select boxcar.session_hold('B', 'ib', 'hs', 'h2');
select is((select holder_alive from boxcar.session_list('hs') where id = 'h2'), false,
          'a holder with no registered worker is not alive');
select is((select holder_alive from boxcar.session_list('hs') where id = 'h1'), null,
          'a session without a holder has no holder_alive');
update boxcar.sessions set held_until = now() - interval '1 second' where id in ('h2', 'h3');
select is((select string_agg(id || ':' || state, ',') from boxcar.session_list('hs') where id in ('h2', 'h3')),
          'h2:stale,h3:stale', 'a live session whose hold lapsed is listed stale');
select is((select count(*)::int from boxcar.session_renew('A', 'ia') where id = 'h3'), 0,
          'a lapsed hold is not renewed: the holder learns the session is no longer its');
select is(boxcar.end_session('hs', 'h3'), 'ended', 'ending a stale session ends it at once');
select boxcar.session_hold('A', 'ia', 'hs', 'h3');
select boxcar.end_session('hs', 'h3');
update boxcar.sessions set held_until = now() - interval '1 second' where id = 'h3';
select boxcar.rescue_expired();
select is((select string_agg(id || ':' || state || ':' || coalesce(holder, '-'), ',' order by id)
             from boxcar.sessions where id in ('h2', 'h3')),
          'h2:stopped:-,h3:ended:-',
          'the housekeeping drops lapsed holds: stopped, or ended when an end was asked');
select boxcar.session_hold('A', 'ia', 'hs', 'h2');
select boxcar.session_hold('A', 'ia', 'hs', 'h3');
select is(boxcar.rescue_orphans('A', 'ia-new'), 1,
          'a new process of A starts: it rescues the job its predecessor ran (l1b)');
select is((select string_agg(id || ':' || state || ':' || coalesce(holder, '-'), ',' order by id)
             from boxcar.sessions where id in ('h2', 'h3')),
          'h2:stopped:-,h3:stopped:-', 'the sessions its dead predecessor held are dropped');

-- ---- Plans: a probe of the session's row, whatever the table holds ---------------------------

create function pg_temp.rows_read(tab regclass) returns bigint language sql as $$
    select coalesce((select seq_tup_read + idx_tup_fetch from pg_stat_xact_user_tables
                      where relid = tab), 0)
$$;
insert into boxcar.sessions (scope, id, storage, state, holder, holder_instance, held_until)
select 'many', 'm' || i, 'session-m' || i, 'live', 'W' || i, 'i', now() + interval '1 minute'
  from generate_series(1, 3000) i;
create temp table m as
    select pg_temp.job('many/q', '{"command":["x"],"session":{"id":"m' || i || '"}}') as id
      from generate_series(1, 5) i;
create temp table before as select pg_temp.rows_read('boxcar.sessions') as n;
select is(pg_temp.claimed('W3', 'i', 'many/q'), array[(select id from boxcar.jobs where session_id = 'm3')],
          'among 3,000 held sessions and 5 jobs of theirs, W3 claims its session''s job only');
select cmp_ok(pg_temp.rows_read('boxcar.sessions') - (select n from before), '<', 10::bigint,
              'reading a few rows of sessions (one probe per session job met)');
create temp table before2 as select pg_temp.rows_read('boxcar.sessions') as n;
select is((select count(*)::int from boxcar.session_renew('W7', 'i')), 1, 'W7 renews its one session');
select cmp_ok(pg_temp.rows_read('boxcar.sessions') - (select n from before2), '<', 10::bigint,
              'reading a few rows of sessions');

select * from finish();
rollback;
