-- Issue 49: the completion push.  A job's final status reaches channel
-- boxcar_job_updates as {"id","queue","status"}; an automatic retry sends
-- nothing; enqueue_many wakes each queue once.  NOTIFY is delivered at
-- commit, so the jobs are made and finished on a second connection
-- (autocommit, dblink) and heard on a third; they are deleted at the end.
begin;
select plan(12);
create extension if not exists dblink;
create function pg_temp.conninfo() returns text language sql as $$
    select format('host=%s port=%s dbname=%s user=%s',
                  split_part(current_setting('unix_socket_directories'), ',', 1),
                  current_setting('port'), current_database(), current_user)
$$;
select dblink_connect('l52', pg_temp.conninfo());
select dblink_connect('w52', pg_temp.conninfo());
select dblink_exec('l52', 'listen boxcar_job_updates');
select dblink_exec('l52', 'listen boxcar_jobs');
select dblink_exec('l52', 'listen n52_sync');
-- What l52 heard since the last call, as "channel payload" lines: up to
-- a sync notification sent on w52 after the statements before, which
-- PostgreSQL delivers after theirs (one sender, commit order).
create function pg_temp.heard() returns text[] language plpgsql as $$
declare
    got text[] := '{}';
    n record;
    synced boolean := false;
begin
    perform dblink_exec('w52', 'notify n52_sync');
    for t in 1 .. 100 loop
        for n in select * from dblink_get_notify('l52') loop
            if n.notify_name = 'n52_sync' then
                synced := true;
            else
                got := got || (n.notify_name || ' ' || n.extra);
            end if;
        end loop;
        exit when synced;
        perform pg_sleep(0.05);
    end loop;
    if not synced then
        raise exception 'no sync notification within 5 s';
    end if;
    return (select coalesce(array_agg(x order by x), '{}') from unnest(got) x);
end $$;
-- Runs sql on w52, committed, returning its one text value.
create function pg_temp.w(sql text) returns text language sql as $$
    select v from dblink('w52', sql) as t(v text)
$$;
create function pg_temp.run(id uuid) returns void language sql as $$
    select pg_temp.w(format($q$update boxcar.jobs set status = 'running', worker_id = 'w52', attempts = attempts + 1,
                                  lease_expires_at = now() + interval '1 minute'
                            where id = %L returning id::text$q$, id))
$$;

select pg_temp.w($$select boxcar.register_worker('w52', 'h', 1, '{n52a,n52b}', 4, 'test')::text$$);
select is(pg_temp.heard(), '{}', 'nothing heard before');

create temp table ids as
select pg_temp.w($$select boxcar.enqueue_many(array['{"queue": "n52a", "spec": {"command": ["a"]}}',
                    '{"queue": "n52a", "spec": {"command": ["b"]}}', '{"queue": "n52a", "spec": {"command": ["c"]}, "max_attempts": 1}',
                    '{"queue": "n52b", "spec": {"command": ["d"]}}',
                    '{"queue": "n52b", "spec": {"command": ["e"]}, "depends_on": [3]}']::jsonb[])::text$$)::uuid[] as v;
select is(pg_temp.heard(), array['boxcar_jobs n52a', 'boxcar_jobs n52b'],
          'enqueue_many of five jobs in two queues: one wake-up per queue (the blocked dependent none)');

select pg_temp.run((select v[1] from ids));
select is(pg_temp.heard(), '{}', 'a claim sends no completion');
select pg_temp.w(format($$select boxcar.complete(%L, 'w52', 'succeeded')::text$$, (select v[1] from ids)));
select is(pg_temp.heard(), array[format('boxcar_job_updates {"id":"%s","queue":"n52a","status":"succeeded"}',
                                        (select v[1] from ids))],
          'a success: its id, queue and status, compact');

select pg_temp.run((select v[2] from ids));
select pg_temp.w(format($$select boxcar.retry_or_fail(%L, 'w52', '{"code":"SANDBOX_SETUP"}')$$, (select v[2] from ids)));
select is(pg_temp.heard(), '{}', 'an automatic retry is not an end: nothing');
select is(pg_temp.w(format($$select status from boxcar.jobs where id = %L$$, (select v[2] from ids))), 'queued',
          '(the job is queued again)');

select pg_temp.run((select v[3] from ids));
select pg_temp.w(format($$select boxcar.retry_or_fail(%L, 'w52', '{"code":"SANDBOX_SETUP"}')$$, (select v[3] from ids)));
select is(pg_temp.heard(), array[format('boxcar_job_updates {"id":"%s","queue":"n52a","status":"failed"}',
                                        (select v[3] from ids))],
          'a failure for good is');

select pg_temp.w(format($$select boxcar.cancel(%L)$$, (select v[4] from ids)));
select is(pg_temp.heard(), (select array_agg(x order by x) from unnest(array[
          format('boxcar_job_updates {"id":"%s","queue":"n52b","status":"cancelled"}', (select v[4] from ids)),
          format('boxcar_job_updates {"id":"%s","queue":"n52b","status":"cancelled"}', (select v[5] from ids))]) x),
          'a cancel, and the dependent it cancels, each send theirs');

select pg_temp.w(format($$select boxcar.retry(%L, 't52')::text$$, (select v[4] from ids)));
select is(pg_temp.heard(), array['boxcar_jobs n52b'],
          'a manual retry (and the dependent it brings back) is no end either');

-- The longest queue name still fits: the payload is far below 8000 bytes.
create temp table long_q as select 'n52/' || repeat('q', 124) as q;
create temp table long_id as
select pg_temp.w(format($$select boxcar.enqueue(%L, '{"command":["x"]}')::text$$, (select q from long_q)))::uuid as id;
select pg_temp.w(format($$select boxcar.cancel(%L)$$, (select id from long_id)));
create temp table long_heard as select pg_temp.heard() as h;
select is(cardinality((select h from long_heard)), 2, 'a 128-character queue: its wake-up and its end');
select is((select substr(h[1], length('boxcar_job_updates ') + 1)::jsonb from long_heard),
          jsonb_build_object('id', (select id from long_id), 'queue', (select q from long_q), 'status', 'cancelled'),
          'the payload is JSON naming it');
select cmp_ok((select octet_length(h[1]) from long_heard), '<', 300, 'in under 300 bytes');

select pg_temp.w($$with d as (delete from boxcar.jobs where queue in ('n52a', 'n52b') or queue like 'n52/%' returning 1)
                   select count(*)::text from d$$);
select pg_temp.w($$delete from boxcar.workers where id = 'w52' returning id$$);
select dblink_disconnect('l52');
select dblink_disconnect('w52');

select * from finish();
rollback;
