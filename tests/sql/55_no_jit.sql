-- No statement inside boxcar's functions is compiled by JIT
-- (sql/97_no_jit.sql).  PostgreSQL compiles every execution of a
-- statement priced above jit_above_cost; the claim's generic plan is
-- priced by the whole queue, and with about 10,000 jobs queued every claim
-- took 15-25 ms instead of 0.3.  Here the threshold is 0, so that any
-- statement left to JIT is compiled with a handful of rows; the control, a
-- function of this test's own reading the same table, is.  Counted by
-- pg_stat_statements (scripts/pg.sh preloads it), nested statements too.
-- (A file of its own: it resets this database's statement counts.)
begin;
select plan(7);
set local client_min_messages = warning;
create extension if not exists pg_stat_statements;

insert into boxcar.queue_config (queue, max_running) values ('nojit-limited', 5);
create function pg_temp.queued_in(q text) returns bigint language plpgsql as $$
begin
    return (select count(*) from boxcar.jobs j where j.queue = q and j.status = 'queued');
end $$;
create function pg_temp.this_db_stats() returns setof pg_stat_statements language sql as $$
    select * from pg_stat_statements
     where dbid = (select oid from pg_database where datname = current_database())
$$;
select pg_stat_statements_reset(0, (select oid from pg_database where datname = current_database()), 0);

-- Counted from here; JIT for anything priced above 0 (compiled cheaply:
-- no inlining, no optimisation).
set local pg_stat_statements.track = 'all';
set local jit = on;
set local jit_above_cost = 0;
set local jit_inline_above_cost = -1;
set local jit_optimize_above_cost = -1;

create temp table jit as select pg_jit_available() available, pg_temp.queued_in('nojit') control;
-- A worker's round: enqueue (its triggers), claim (both paths),
-- heartbeat, report.
create temp table queued as
    select boxcar.enqueue(queue => q, spec => '{"command":["x"]}') id
      from unnest(array['nojit', 'nojit-limited']) q;
create temp table claimed as
    select c.id, c.attempts from boxcar.claim('nojit-w', array['nojit'], 1) c
    union all
    select c.id, c.attempts from boxcar.claim('nojit-w', array['nojit-limited'], 1) c;
create temp table beat as select boxcar.heartbeat('nojit-w', '30 seconds', null);
create temp table reported as
    select * from boxcar.report_batch('nojit-w', array(select id from claimed order by id),
                                      array(select attempts from claimed order by id),
                                      array['complete', 'complete'], array['succeeded', 'succeeded'],
                                      array['{"exit_code":0}', '{"exit_code":0}']::jsonb[],
                                      array[null, null]::jsonb[], array[null, null]::jsonb[],
                                      array[null, null]::jsonb[], array[null, null]::jsonb[]);

set local pg_stat_statements.track = 'none';
set local jit = off;

select ok((select available from jit), 'this server can compile with JIT (the control needs it)');
select cmp_ok((select sum(jit_functions)::bigint from pg_temp.this_db_stats()
                where not toplevel and query like '%from boxcar.jobs j where j.queue = q%'),
              '>', 0::bigint,
              'control: a function without the setting has its statement on boxcar.jobs compiled');
select is((select count(*) from claimed), 2::bigint, 'both jobs were claimed (plain and limited queue)');
select is((select count(*) from reported where held), 2::bigint, 'and reported');
select cmp_ok((select count(*) from pg_temp.this_db_stats()
                where not toplevel and query not like '%from boxcar.jobs j where j.queue = q%'),
              '>=', 10::bigint, 'the statements inside boxcar''s functions were counted');
select is((select coalesce(sum(jit_functions), 0)::bigint from pg_temp.this_db_stats()
            where not toplevel and query not like '%from boxcar.jobs j where j.queue = q%'),
          0::bigint, 'none of them was compiled');
select is((select array_agg(p.oid::regprocedure::text order by 1)
             from pg_proc p join pg_language l on l.oid = p.prolang
            where p.pronamespace = 'boxcar'::regnamespace and l.lanname = 'plpgsql'
              and not coalesce('jit=off' = any (p.proconfig), false)),
          null, 'every plpgsql function of the schema has JIT off');

select * from finish();
rollback;
