begin;
select plan(22);

-- A job's artifact version is recorded with its end (report_batch's
-- artifacts), only while the worker holds the attempt: an attempt lost
-- after its upload leaves no version and the head where it was.
create function pg_temp.art(sha text, expected text) returns jsonb language sql as $$
    select jsonb_build_object('sha256', repeat(sha, 64), 's3_key', 'k/' || sha, 'size', 10,
                              'file_count', 1, 'parent_sha256', null,
                              'expected_head', case when expected is null then null
                                                    else repeat(expected, 64) end)
$$;
create function pg_temp.report(w text, id uuid, attempt int, action text, status text, art jsonb)
returns boolean language sql as $$
    select held from boxcar.report_batch(w, array[id], array[attempt], array[action], array[status],
                                         array['{"exit_code":0,"artifact":{"storage":"rs"}}']::jsonb[],
                                         array[null]::jsonb[], array[null]::jsonb[], array[art])
$$;
create function pg_temp.next_job(w text) returns uuid language sql as $$
    select id from boxcar.claim(w, array['ra'], 1)
$$;
create function pg_temp.head() returns text language sql as $$
    select left(head_version, 1) from boxcar.storages where name = 'rs'
$$;
create function pg_temp.versions() returns bigint language sql as $$
    select count(*) from boxcar.storage_versions where storage = 'rs'
$$;

select boxcar.enqueue('ra', '{"command":["j1"],"artifact":{"storage":"rs"}}', max_attempts => 2);
select boxcar.enqueue('ra', '{"command":["j2"],"artifact":{"storage":"rs"}}', max_attempts => 2);
select boxcar.enqueue('ra', '{"command":["j3"],"artifact":{"storage":"rs"}}', max_attempts => 2);
select boxcar.enqueue('ra', '{"command":["j4"],"artifact":{"storage":"rs"}}', max_attempts => 2);
create temp table ids as select spec->'command'->>0 as name, id from boxcar.jobs where queue = 'ra';
create function pg_temp.jid(n text) returns uuid language sql as $$ select id from ids where name = n $$;

-- j1: completed by its holder.
select is(pg_temp.next_job('w1'), pg_temp.jid('j1'), 'j1 is claimed first (the others are blocked)');
select ok(pg_temp.report('w1', pg_temp.jid('j1'), 1, 'complete', 'succeeded', pg_temp.art('a', null)),
          'j1''s completion with its version is recorded');
select is(pg_temp.head(), 'a', 'the storage''s head is j1''s version');
select is((select job_id from boxcar.storage_versions where storage = 'rs' and sha256 = repeat('a', 64)),
          pg_temp.jid('j1'), 'the version names its job');
select is((select result->'artifact' from boxcar.jobs where id = pg_temp.jid('j1')),
          '{"storage":"rs","conflict":false}'::jsonb, 'the job''s result says there was no conflict');

-- j2: its first attempt is lost (the lease expired, it is rescued) after
-- its upload; the stale report records nothing.
select is(pg_temp.next_job('w1'), pg_temp.jid('j2'), 'j2 is unblocked and claimed');
update boxcar.jobs set lease_expires_at = now() - interval '1 second' where id = pg_temp.jid('j2');
select boxcar.rescue_expired();
update boxcar.jobs set run_at = now() where id = pg_temp.jid('j2');
select is(pg_temp.next_job('w2'), pg_temp.jid('j2'), 'the rescued j2 is claimed again, by w2');
select ok(not pg_temp.report('w1', pg_temp.jid('j2'), 1, 'complete', 'succeeded', pg_temp.art('b', 'a')),
          'the lost attempt''s report is refused');
select is(pg_temp.versions(), 1::bigint, 'and its version is not recorded');
select is(pg_temp.head(), 'a', 'the head stays where the lost attempt started');
select ok(pg_temp.report('w2', pg_temp.jid('j2'), 2, 'complete', 'succeeded', pg_temp.art('c', 'a')),
          'the second attempt, from the same head, completes');
select is(pg_temp.head(), 'c', 'and its version is the head');

-- j3: the head moves under it (a push): its version is kept as a branch.
select is(pg_temp.next_job('w1'), pg_temp.jid('j3'), 'j3 is claimed');
select boxcar.add_storage_version('rs', repeat('d', 64), 'k/d', 1, 1, repeat('c', 64), scope => 'ra');
select ok(pg_temp.report('w1', pg_temp.jid('j3'), 1, 'complete', 'failed', pg_temp.art('e', 'c')),
          'j3 completes (a failed run records its version too)');
select is(pg_temp.head(), 'd', 'the pushed head stays');
select ok((select (result->'artifact'->>'conflict')::boolean from boxcar.jobs where id = pg_temp.jid('j3')),
          'j3''s result says conflict');
select is((select count(*)::int from boxcar.storage_versions where storage = 'rs' and sha256 = repeat('e', 64)),
          1, 'j3''s version is kept');

-- j4: an attempt that is retried records nothing; the last one does.
select is(pg_temp.next_job('w1'), pg_temp.jid('j4'), 'j4 is claimed');
select ok(pg_temp.report('w1', pg_temp.jid('j4'), 1, 'retry', null, pg_temp.art('7', 'd')),
          'its first attempt is retried');
select is((select (result ? 'artifact')::text || ':' || pg_temp.versions() from boxcar.jobs
            where id = pg_temp.jid('j4')), 'false:4',
          'without a version, and its result without the artifact');
update boxcar.jobs set run_at = now() where id = pg_temp.jid('j4');
select pg_temp.next_job('w1');
select ok(pg_temp.report('w1', pg_temp.jid('j4'), 2, 'retry', null, pg_temp.art('8', 'd'))
          and pg_temp.head() = '8',
          'the last attempt, failing for good, records its version and moves the head');
select is((select status || ':' || (result->'artifact'->>'conflict') from boxcar.jobs
            where id = pg_temp.jid('j4')), 'failed:false', 'j4 failed, with its artifact in the result');

select * from finish();
rollback;
