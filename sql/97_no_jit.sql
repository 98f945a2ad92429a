-- No JIT compilation inside boxcar's functions.  PostgreSQL compiles a
-- statement whose estimated cost passes jit_above_cost (100,000 by
-- default) at every execution: nothing is cached.  The claim's generic
-- plan is priced by the whole queue (a LIMIT $n the planner cannot see),
-- so with about 10,000 jobs queued every claim was compiled: 15 to 25 ms
-- of the database's CPU for a statement that runs in 0.3 ms, at every
-- claim, exactly when the backlog is largest (tests/sql/55_no_jit.sql).
-- These functions run per job, per tick or per request, mostly reading a
-- few rows by an index: compiling at every call costs them more than it
-- can win.
--
-- Applied on every migrate after the files that (re)create the functions
-- (create or replace resets a function's settings), before the grants.
-- plpgsql functions, and SQL ones that already carry settings: a SQL
-- function without any may be inlined into its caller's query, which a
-- setting would prevent; it runs under its caller's.
do $$
declare
    f regprocedure;
begin
    for f in select p.oid::regprocedure
               from pg_proc p
               join pg_namespace n on n.oid = p.pronamespace
               join pg_language l on l.oid = p.prolang
              where n.nspname = 'boxcar' and p.prokind in ('f', 'p')
                -- Not one someone else put in the schema: not ours to alter.
                and pg_has_role(current_user, p.proowner, 'member')
                and (l.lanname = 'plpgsql' or (l.lanname = 'sql' and p.proconfig is not null))
                and not coalesce('jit=off' = any (p.proconfig), false) loop
        execute format('alter function %s set jit = off', f);
    end loop;
end $$;
