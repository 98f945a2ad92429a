-- Least-privilege roles (sql/99_roles.sql): every object of schema boxcar
-- is classified in boxcar.access_list() and nothing is PUBLIC's; then each
-- group role, by `set role`, does what its clients need and nothing else.
begin;
select plan(65);
set local client_min_messages = warning;
-- An extension's objects (should one be installed in schema boxcar) keep
-- the extension's own grants.
create function pg_temp.in_extension(catalog regclass, id oid) returns boolean language sql as $$
    select exists (select from pg_depend d where d.classid = catalog and d.objid = id and d.deptype = 'e')
$$;

-- ---- Classification -------------------------------------------------------------------------

select is(array(select p.proname::text from pg_proc p
                 where p.pronamespace = 'boxcar'::regnamespace and not pg_temp.in_extension('pg_proc', p.oid)
                   and not exists (select from boxcar.access_list() l
                                    where l.name = p.proname and l.kind in ('definer', 'function'))
                 order by 1),
          '{}'::text[], 'every function of schema boxcar has its line in boxcar.access_list()');
select is(array(select c.relname::text from pg_class c
                 where c.relnamespace = 'boxcar'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
                   and not pg_temp.in_extension('pg_class', c.oid)
                   and not exists (select from boxcar.access_list() l
                                    where l.name = c.relname and l.kind in ('table', 'view', 'sequence'))
                 order by 1),
          '{}'::text[], 'every table, view and sequence of schema boxcar has its line');
select is(array(select l.kind || ' ' || l.name from boxcar.access_list() l
                 where not exists (select from pg_proc p where p.pronamespace = 'boxcar'::regnamespace
                                      and p.proname = l.name and l.kind in ('definer', 'function'))
                   and not exists (select from pg_class c where c.relnamespace = 'boxcar'::regnamespace
                                      and c.relname = l.name and l.kind in ('table', 'view', 'sequence'))),
          '{}'::text[], 'every line names an object that exists, of its kind');
select is(array(select l.name from boxcar.access_list() l
                 group by l.name, l.kind in ('definer', 'function') having count(*) > 1),
          '{}'::text[], 'no object has two lines');
select is(array(select l.kind || ' ' || l.name || ': ' || g from boxcar.access_list() l,
                       unnest(string_to_array(l.grants, ' ')) g
                 where split_part(g, ':', 1) not in ('app', 'worker', 'monitor', 'dashboard')),
          '{}'::text[], 'every grant names one of the four roles');

select is(array(select p.oid::regprocedure::text from pg_proc p, aclexplode(p.proacl) a
                 where p.pronamespace = 'boxcar'::regnamespace and a.grantee = 0
                   and not pg_temp.in_extension('pg_proc', p.oid)),
          '{}'::text[], 'no function of schema boxcar is executable by PUBLIC');
select is(array(select c.oid::regclass::text from pg_class c, aclexplode(c.relacl) a
                 where c.relnamespace = 'boxcar'::regnamespace and a.grantee = 0
                   and not pg_temp.in_extension('pg_class', c.oid)),
          '{}'::text[], 'no table, view or sequence grants PUBLIC anything');
select ok(not has_schema_privilege('public', 'boxcar', 'create')
          and not exists (select from pg_namespace n, aclexplode(n.nspacl) a
                           where n.nspname = 'boxcar' and a.grantee = 0),
          'PUBLIC has nothing on schema boxcar');

select is(array(select p.proname::text from pg_proc p
                 where p.pronamespace = 'boxcar'::regnamespace and p.prosecdef
                   and not exists (select from boxcar.access_list() l where l.name = p.proname and l.kind = 'definer')
                 order by 1),
          '{}'::text[], 'a SECURITY DEFINER function is one listed as definer');
select is(array(select l.name from boxcar.access_list() l join pg_proc p on p.proname = l.name
                 where l.kind = 'definer' and p.pronamespace = 'boxcar'::regnamespace
                   and not (p.prosecdef
                            and 'search_path=pg_catalog, boxcar, pg_temp' = any (p.proconfig)
                            and p.proowner = (select nspowner from pg_namespace where nspname = 'boxcar'))),
          '{}'::text[], 'every definer is SECURITY DEFINER, owned by the schema''s owner, with a fixed search_path');
select is((select proconfig from pg_proc where oid = 'boxcar.jobs_list'::regproc),
          '{enable_seqscan=off,jit=off,"search_path=pg_catalog, boxcar, pg_temp"}'::text[],
          'a definer keeps its own settings (jobs_list: no sequential scans, no JIT)');
select ok(not (select prosecdef from pg_proc where oid = 'boxcar.claim'::regproc)
          and not (select prosecdef from pg_proc where oid = 'boxcar.report_batch'::regproc),
          'the claim and the report run as the worker (their plans stay inlined and cached)');

select is((select array_agg(rolname::text order by rolname) from pg_roles
            where rolname like 'boxcar\_%' and not rolcanlogin and not rolsuper and not rolcreaterole
              and not rolcreatedb and not rolbypassrls
              and rolname in ('boxcar_app', 'boxcar_worker', 'boxcar_monitor', 'boxcar_dashboard')),
          '{boxcar_app,boxcar_dashboard,boxcar_monitor,boxcar_worker}'::text[],
          'the four group roles exist: NOLOGIN, no superuser, CREATEROLE, CREATEDB or BYPASSRLS');
select is((select count(*)::int from pg_class c where c.relnamespace = 'boxcar'::regnamespace
              and pg_get_userbyid(c.relowner) like 'boxcar\_%')
          + (select count(*)::int from pg_proc p where p.pronamespace = 'boxcar'::regnamespace
              and pg_get_userbyid(p.proowner) like 'boxcar\_%'),
          0, 'none of them owns anything in schema boxcar');

-- A job of each kind the roles below act on, made by the owner.
select boxcar.enqueue('default', '{"command": ["x"]}') as failed_id \gset
select count(*) from boxcar.claim('w34', '{default}', 1) \gset claimed_
select boxcar.complete(:'failed_id', 'w34', 'failed', null, '{"code": "X"}') as completed \gset
select boxcar.enqueue('default', '{"command": ["x"]}') as queued_id \gset
select boxcar.enqueue('default', '{"command": ["x"]}') as run_id \gset

-- ---- boxcar_app -----------------------------------------------------------------------------

set local role boxcar_app;
select isnt(boxcar.enqueue('acme/q', '{"command": ["echo"]}'), null, 'app: enqueues');
select is(boxcar.job_json(:'queued_id')->>'status', 'queued', 'app: reads a job (job_json)');
select ok((select count(*) from boxcar.jobs_list(lim => 10)) >= 2, 'app: lists jobs');
select lives_ok($$select boxcar.job_events_json('$$ || :'queued_id' || $$')$$, 'app: reads a job''s events');
select lives_ok($$select boxcar.job_logs_after('$$ || :'queued_id' || $$', 0, 0, 10)$$, 'app: reads a job''s log');
select lives_ok($$select boxcar.schedule_add('s34', '@daily', 'default', '{"command": ["x"]}')$$,
                'app: adds a schedule');
select is(boxcar.retry(:'failed_id', 'app34')->>'status', 'queued', 'app: retries a failed job');
select is(boxcar.cancel(:'queued_id'), 'cancelled', 'app: cancels');
select lives_ok($$select * from boxcar.session_list()$$, 'app: lists sessions');
select throws_ok($$update boxcar.jobs set status = 'succeeded'$$, '42501', null, 'app: no UPDATE on jobs');
select throws_ok($$delete from boxcar.jobs$$, '42501', null, 'app: no DELETE on jobs');
select throws_ok($$insert into boxcar.jobs (queue, spec) values ('default', '{"command": ["x"]}')$$, '42501', null,
                 'app: no INSERT on jobs (enqueue checks the spec)');
select lives_ok($$select spec, result from boxcar.jobs; select * from boxcar.job_events; select * from boxcar.job_logs$$,
                'app: reads jobs, events and logs (SELECT only)');
select throws_ok($$select boxcar.claim('evil', '{default}')$$, '42501', null, 'app: cannot claim');
select throws_ok($$select boxcar.complete('$$ || :'run_id' || $$', 'evil', 'succeeded')$$, '42501', null,
                 'app: cannot report a result');
select throws_ok($$select boxcar.heartbeat('evil')$$, '42501', null, 'app: cannot renew leases');
select throws_ok($$select boxcar.queue_config('default', 1, null)$$, '42501', null, 'app: cannot set queue caps');
select throws_ok($$select boxcar.pause_queue('default')$$, '42501', null, 'app: cannot pause a queue');
select throws_ok($$select boxcar.remove_storage('x')$$, '42501', null, 'app: no storage admin');
select throws_ok($$select boxcar.create_storage('x34')$$, '42501', null, 'app: cannot create storages');
select throws_ok($$select * from boxcar.workers$$, '42501', null, 'app: cannot read the workers table');
select throws_ok($$select * from boxcar.worker_status$$, '42501', null, 'app: nor the workers view');
select throws_ok($$select * from boxcar.settings$$, '42501', null, 'app: cannot read settings (webhook URL)');
select throws_ok($$select body from boxcar.webhook_deliveries$$, '42501', null, 'app: cannot read webhook deliveries');
select throws_ok($$select boxcar.prune('0 s')$$, '42501', null, 'app: cannot prune');
reset role;

-- ---- boxcar_monitor -------------------------------------------------------------------------

set local role boxcar_monitor;
select lives_ok($$select coalesce(sum(queued + running), 0) from boxcar.active_queue_stats where queue = 'default'$$,
                'monitor: runs KEDA''s query');
select lives_ok($$select * from boxcar.queue_stats; select * from boxcar.worker_status; select * from boxcar.queue_overview()$$,
                'monitor: reads the status views and the queue overview');
select throws_ok($$select boxcar.enqueue('default', '{"command": ["x"]}')$$, '42501', null, 'monitor: cannot enqueue');
select throws_ok($$select boxcar.cancel('$$ || :'run_id' || $$')$$, '42501', null, 'monitor: cannot cancel');
select throws_ok($$select spec from boxcar.jobs$$, '42501', null, 'monitor: cannot read job specs');
select throws_ok($$select boxcar.job_json('$$ || :'run_id' || $$')$$, '42501', null, 'monitor: cannot read a job''s result');
select throws_ok($$select data from boxcar.job_logs$$, '42501', null, 'monitor: cannot read job output');
select throws_ok($$select boxcar.request_drain('w34')$$, '42501', null, 'monitor: cannot drain a worker');
reset role;

-- ---- boxcar_dashboard -----------------------------------------------------------------------

set local role boxcar_dashboard;
select lives_ok($$select * from boxcar.worker_status; select boxcar.webhook_list(); select boxcar.schedule_ls()$$,
                'dashboard: reads workers, webhooks, schedules');
select is(boxcar.cancel(:'run_id'), 'cancelled', 'dashboard: cancels');
select throws_ok($$select boxcar.claim('evil', '{default}')$$, '42501', null, 'dashboard: cannot claim');
select throws_ok($$select boxcar.report_batch('evil', '{}', '{}', '{}', '{}', '{}', '{}', '{}')$$, '42501', null,
                 'dashboard: cannot report');
select throws_ok($$update boxcar.jobs set status = 'queued'$$, '42501', null, 'dashboard: no UPDATE on jobs');
select throws_ok($$select boxcar.enqueue('default', '{"command": ["x"]}')$$, '42501', null, 'dashboard: cannot enqueue');
reset role;

-- ---- boxcar_worker --------------------------------------------------------------------------

set local role boxcar_worker;
select lives_ok($$select boxcar.register_worker('w34b', 'h', 1, '{default}', 1, 'v')$$, 'worker: registers');
select is((select count(*)::int from boxcar.claim('w34b', '{acme/q}', 5)), 1, 'worker: claims');
select lives_ok($$select boxcar.heartbeat('w34b')$$, 'worker: renews its leases');
select throws_ok($$create table boxcar.evil (x int)$$, '42501', null, 'worker: no DDL in schema boxcar');
select throws_ok($$alter table boxcar.jobs add column evil int$$, '42501', null, 'worker: cannot alter a table');
select throws_ok($$drop view boxcar.queue_stats$$, '42501', null, 'worker: cannot drop a view');
select throws_ok($$truncate boxcar.jobs$$, '42501', null, 'worker: cannot truncate');
select throws_ok($$insert into boxcar.schema_migrations (version, checksum) values ('9999', 'x')$$, '42501', null,
                 'worker: cannot record a migration');
select throws_ok($$create or replace function boxcar.claim_delay_ms(queues text[]) returns integer language sql as 'select 0'$$,
                 '42501', null, 'worker: cannot replace a function');
select throws_ok($$create role evil34$$, '42501', null, 'worker: cannot create roles');
select throws_ok($$grant boxcar_app to boxcar_worker$$, '42501', null, 'worker: cannot grant itself another role');
select throws_ok($$select boxcar.queue_config('default', 1, null)$$, '42501', null, 'worker: cannot set queue caps');
reset role;

select * from finish();
rollback;
