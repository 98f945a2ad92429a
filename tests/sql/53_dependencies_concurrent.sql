-- Issue 49: two dependencies of one job succeeding at the same moment, in
-- two transactions.  Each finish locks the waiting job before it reads
-- the other dependency's status, so the second waits for the first to
-- commit and then sees it: the job is unblocked once, by the later one,
-- never left waiting.  And an enqueue that depends on a job holds that
-- job's finish until it commits, so the finish sees the new dependent.
-- Made on two dblink connections (committed), deleted at the end.
begin;
select plan(7);
create extension if not exists dblink;
create function pg_temp.conninfo() returns text language sql as $$
    select format('host=%s port=%s dbname=%s user=%s',
                  split_part(current_setting('unix_socket_directories'), ',', 1),
                  current_setting('port'), current_database(), current_user)
$$;
select dblink_connect('c1', pg_temp.conninfo());
select dblink_connect('c2', pg_temp.conninfo());
create function pg_temp.q(conn text, sql text) returns text language sql as $$
    select v from dblink(conn, sql) as t(v text)
$$;
create function pg_temp.st(id uuid) returns text language sql as $$
    select pg_temp.q('c1', format($q$select status || case when blocked then ':blocked' else '' end
                                    from boxcar.jobs where id = %L$q$, id))
$$;
create function pg_temp.running(id uuid) returns text language sql as $$
    select pg_temp.q('c1', format($q$update boxcar.jobs set status = 'running', worker_id = 'w53', attempts = 1,
                                       lease_expires_at = now() + interval '1 minute'
                                    where id = %L returning status$q$, id))
$$;

create temp table j as
select pg_temp.q('c1', $$select boxcar.enqueue_many(array['{"queue": "c53", "spec": {"command": ["a"]}}',
                          '{"queue": "c53", "spec": {"command": ["b"]}}',
                          '{"queue": "c53", "spec": {"command": ["d"]}, "depends_on": [0, 1]}']::jsonb[])::text$$)::uuid[] as v;
select pg_temp.running((select v[1] from j));
select pg_temp.running((select v[2] from j));

-- c1 finishes a and holds its transaction open; c2 finishes b meanwhile.
select pg_temp.q('c1', 'begin');
select pg_temp.q('c1', format($$select boxcar.complete(%L, 'w53', 'succeeded')::text$$, (select v[1] from j)));
select dblink_send_query('c2', format($$select boxcar.complete(%L, 'w53', 'succeeded')::text$$, (select v[2] from j)));
select pg_sleep(0.5);
select is(dblink_is_busy('c2'), 1, 'the second finish waits for the first (the dependent''s lock)');
select pg_temp.q('c1', 'commit');
select is((select v from dblink_get_result('c2') as t(v text)), 'true', 'then goes on');
select * from dblink_get_result('c2') as t(v text);
select is(pg_temp.st((select v[3] from j)), 'queued', 'd is unblocked: the later finish saw the earlier one');
select is(pg_temp.q('c1', format($$select count(*)::text from boxcar.job_events
                                    where job_id = %L and kind = 'dependencies_met'$$, (select v[3] from j))),
          '1', 'once');

-- c1 enqueues e on running f and holds its transaction open; f's finish
-- on c2 waits for it, and then unblocks e.
create temp table f as select pg_temp.q('c1', $$select boxcar.enqueue('c53', '{"command": ["f"]}')::text$$)::uuid as id;
select pg_temp.running((select id from f));
select pg_temp.q('c1', 'begin');
create temp table e as
select pg_temp.q('c1', format($$select boxcar.enqueue('c53', '{"command": ["e"]}', depends_on => array[%L::uuid])::text$$,
                              (select id from f)))::uuid as id;
select dblink_send_query('c2', format($$select boxcar.complete(%L, 'w53', 'succeeded')::text$$, (select id from f)));
select pg_sleep(0.5);
select is(dblink_is_busy('c2'), 1, 'a finish waits for the enqueue of a job that depends on it');
select pg_temp.q('c1', 'commit');
select * from dblink_get_result('c2') as t(v text);
select * from dblink_get_result('c2') as t(v text);
select is(pg_temp.st((select id from e)), 'queued', 'and unblocks the new dependent');
select is(pg_temp.st((select id from f)), 'succeeded', '(f succeeded)');

select pg_temp.q('c1', $$with d as (delete from boxcar.jobs where queue = 'c53' returning 1) select count(*)::text from d$$);
select dblink_disconnect('c1');
select dblink_disconnect('c2');

select * from finish();
rollback;
