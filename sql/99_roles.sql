-- Least-privilege database roles (docs/tenants.md, "Database roles").
-- Four NOLOGIN group roles that operators grant to their login roles:
--   boxcar_app        an application: enqueue (schedules and sessions
--                     too), read jobs, their events and logs, cancel,
--                     retry, end sessions
--   boxcar_worker     the worker daemon: claim, report, leases, storage
--                     versions, sessions, webhook deliveries, logs, gc
--   boxcar_monitor    read-only counts: KEDA, metrics, status views
--   boxcar_dashboard  `boxcar ui`: read jobs, cancel, retry, drain, end
--                     sessions, retry webhooks
-- The role that runs `boxcar migrate` owns the schema and everything in
-- it; nothing is granted to PUBLIC.
--
-- Applied last on every migrate, in migrate's one transaction: the
-- functions the files before re-created are revoked from PUBLIC and
-- granted from the list below before any other session can see them.

-- The roles are the cluster's, not the database's: created here when the
-- migrating role may (CREATEROLE), else a superuser creates them once.
do $$
declare
    r text;
begin
    foreach r in array array['boxcar_app', 'boxcar_worker', 'boxcar_monitor', 'boxcar_dashboard'] loop
        continue when exists (select from pg_roles where rolname = r);
        begin
            execute format('create role %I nologin', r);
        exception
            when insufficient_privilege then
                raise exception 'role % does not exist and % may not create it', r, current_user
                    using hint = 'As a superuser, once per cluster: create role boxcar_app nologin; '
                                 'create role boxcar_worker nologin; create role boxcar_monitor nologin; '
                                 'create role boxcar_dashboard nologin; (docs/tenants.md, Database roles)';
            -- Another database of the cluster migrating at the same moment.
            when duplicate_object or unique_violation then null;
        end;
    end loop;
end $$;

-- Every function, table, view and sequence of schema boxcar, one line
-- each: kind, name, and who gets it.  A function added later is callable
-- by its owner alone until it has its line here (tests/sql/34_roles.sql
-- fails while one is missing).
--   definer   a function the roles call that reads or writes tables they
--             may not touch: SECURITY DEFINER (runs as the schema owner)
--             with a fixed search_path; grants are role names
--   function  SECURITY INVOKER: runs with the caller's privileges, so
--             granting it gives nothing the caller's table grants do not;
--             the worker's claim and report stay so (their plans,
--             tests/sql/17_claim_plan.sql, 20_report_plan.sql)
--   table, view, sequence   grants are role:privilege,privilege
-- An empty grant is owner-only.  A name covers all its overloads.
-- Roles: app worker monitor dashboard (boxcar_ prefixed).
create or replace function boxcar.access_list()
returns table (kind text, name text, grants text) language sql immutable as $$ values
    -- The applications' API.
    ('definer',  'enqueue',                        'app worker'),
    ('definer',  'enqueue_many',                   'app worker'),
    ('definer',  'cancel',                         'app dashboard'),
    ('definer',  'retry',                          'app dashboard'),
    ('definer',  'jobs_list',                      'app dashboard'),
    ('definer',  'job_json',                       'app dashboard'),
    ('definer',  'job_events_json',                'app dashboard'),
    ('definer',  'job_logs_after',                 'app dashboard'),
    ('definer',  'job_progress',                   'app dashboard'),
    ('definer',  'queue_overview',                 'app dashboard monitor'),
    ('definer',  'queue_chart',                    'app dashboard monitor'),
    ('definer',  'schedule_add',                   'app'),
    ('definer',  'schedule_ls',                    'app dashboard'),
    ('definer',  'schedule_rm',                    'app'),
    ('definer',  'schedule_pause',                 'app'),
    ('definer',  'schedule_resume',                'app'),
    ('definer',  'session_list',                   'app dashboard'),
    ('definer',  'end_session',                    'app dashboard'),
    -- The dashboard's operator actions.
    ('definer',  'request_drain',                  'dashboard'),
    ('definer',  'webhook_list',                   'dashboard'),
    ('definer',  'webhook_retry',                  'dashboard'),
    -- The worker daemon, and what its calls and the jobs table's triggers
    -- and checks call under its name.
    ('function', 'register_worker',                'worker'),
    ('function', 'set_worker_state',               'worker'),
    ('function', 'set_default_webhook_url',        'worker'),
    ('function', 'claim',                          'worker'),
    ('function', 'claim_ids',                      'worker'),
    ('function', 'claim_limited',                  'worker'),
    ('function', 'claim_delay_ms',                 'worker'),
    ('function', 'rate_burst',                     'worker'),
    ('function', 'queue_scope',                    'worker'),
    ('function', 'heartbeat',                      'worker'),
    ('function', 'cancel_requested',               'worker'),
    ('function', 'complete',                       'worker'),
    ('function', 'retry_or_fail',                  'worker'),
    ('function', 'release',                        'worker'),
    ('function', 'backoff',                        'worker'),
    ('function', 'add_event',                      'worker'),
    ('function', 'add_worker_events',              'worker'),
    ('function', 'report_batch',                   'worker'),
    ('function', 'report_completions',             'worker'),
    ('function', 'append_logs',                    'worker'),
    ('function', 'report_progress',                'worker'),
    ('function', 'progress_max_bytes',             'worker'),
    ('function', 'append_report_logs',             'worker'),
    ('function', 'rescue_job',                     'worker'),
    ('function', 'rescue_expired',                 'worker'),
    ('function', 'rescue_orphans',                 'worker'),
    ('function', 'try_lead',                       'worker'),
    ('function', 'resign',                         'worker'),
    ('function', 'drain_requested',                'worker'),
    ('function', 'prune',                          'worker'),
    ('function', 'schedule_tick',                  'worker'),
    ('function', 'cron_next',                      'worker'),
    ('function', 'cron_parse',                     'worker'),
    ('function', 'cron_field',                     'worker'),
    ('function', 'cron_value',                     'worker'),
    ('function', 'check_job_row',                  'worker'),
    ('function', 'job_webhook_url',                'worker'),
    ('function', 'add_delivery',                   'worker'),
    ('function', 'lock_artifact_storage',          'worker'),
    ('function', 'unblock_artifact_next',          'worker'),
    ('function', 'unblock_artifact_stalled',       'worker'),
    ('function', 'claim_deliveries',               'worker'),
    ('function', 'delivery_result',                'worker'),
    ('function', 'resolve_storage_version',        'worker'),
    ('function', 'resolve_image',                  'worker'),
    ('function', 'artifact_start',                 'worker'),
    ('function', 'create_storage',                 'worker'),
    ('function', 'add_storage_version',            'worker'),
    ('function', 'add_artifact_version',           'worker'),
    ('function', 'record_job_artifact',            'worker'),
    ('function', 'storage_layers_valid',           'worker'),
    ('function', 'register_storage_objects',       'worker'),
    ('function', 'storage_object_referenced',      'worker'),
    ('function', 'storage_version_protected',      'worker'),
    ('function', 'storage_gc_candidates',          'worker'),
    ('function', 'storage_gc_claim',               'worker'),
    ('function', 'storage_gc_forget',              'worker'),
    ('function', 'storage_bytes_stored',           'worker'),
    ('function', 'apply_storage_retention',        'worker'),
    ('function', 'purge_removed_storage_versions', 'worker'),
    ('function', 'session_hold',                   'worker'),
    ('function', 'session_renew',                  'worker'),
    ('function', 'session_release',                'worker'),
    ('function', 'session_job_done',               'worker'),
    ('function', 'sessions_expire',                'worker'),
    ('function', 'sessions_orphaned',              'worker'),
    -- Owner-only: operator commands (queues, storages, webhooks' default),
    -- what only definer functions call, trigger functions (a trigger's
    -- function runs without an EXECUTE check), and this list.
    ('function', 'queue_config',                   ''),
    ('function', 'queue_config_json',              ''),
    ('function', 'queue_config_ls',                ''),
    ('function', 'queue_config_tidy',              ''),
    ('function', 'pause_queue',                    ''),
    ('function', 'resume_queue',                   ''),
    ('function', 'check_queue_name',               ''),
    ('function', 'storages_json',                  ''),
    ('function', 'storage_versions_json',          ''),
    ('function', 'set_storage_tarball',            ''),
    ('function', 'set_storage_retention',          ''),
    ('function', 'remove_storage',                 ''),
    ('function', 'remove_storage_version',         ''),
    ('function', 'job_summary',                    ''),
    ('function', 'row_events',                     ''),
    ('function', 'job_cursor',                     ''),
    ('function', 'schedule_json',                  ''),
    ('function', 'check_time_zone',                ''),
    ('function', 'check_spec',                     ''),
    ('function', 'spec_error',                     ''),
    ('function', 'path_error',                     ''),
    ('function', 'number_error',                   ''),
    ('function', 'name_error',                     ''),
    ('function', 'string_error',                   ''),
    ('function', 'limits_error',                   ''),
    ('function', 'volumes_error',                  ''),
    ('function', 'network_rule_error',             ''),
    ('function', 'network_error',                  ''),
    ('function', 'session_name_error',             ''),
    ('function', 'session_error',                  ''),
    ('function', 'file_path_error',                ''),
    ('function', 'files_error',                    ''),
    ('function', 'session_fill_spec',              ''),
    ('function', 'session_spec_raise',             ''),
    ('function', 'session_fork',                   ''),
    ('function', 'session_fork_lock',              ''),
    ('function', 'notify_jobs',                    ''),
    ('function', 'notify_job_change',              ''),
    ('function', 'block_artifact_job',             ''),
    ('function', 'artifact_job_done',              ''),
    ('function', 'write_webhook',                  ''),
    ('function', 'session_job',                    ''),
    ('function', 'access_list',                    ''),
    -- Enqueue's shared checks (sql/20_enqueue.sql), run inside enqueue and
    -- enqueue_many as their owner.
    ('function', 'enqueue_error',                  ''),
    ('function', 'enqueue_differs',                ''),
    ('function', 'enqueue_existing',               ''),
    ('function', 'raise_error',                    ''),
    ('function', 'jobs_int',                       ''),
    -- Dependencies (sql/36_dependencies.sql): added by enqueue and revived
    -- by retry as the owner; the finish trigger and the artifact order's
    -- steps run them as the worker (a report, a rescue) or the owner (a
    -- cancel).  The app reads a job's dependencies in boxcar.job_json, or
    -- from the table beside jobs.
    ('function', 'add_dependencies',               ''),
    ('function', 'dependencies_revive',            ''),
    ('function', 'dependency_done',                ''),
    ('function', 'dependencies_pending',           'worker'),
    ('function', 'dependencies_settle',            'worker'),
    ('function', 'dependencies_cancel',            'worker'),
    ('function', 'dependency_failed',              'worker'),
    ('function', 'dependency_error',               'worker'),
    ('function', 'job_depends_on',                 'worker'),
    ('table',    'job_dependencies',               'worker:select app:select'),
    -- Tables: the worker's; an app may read jobs, their events and logs
    -- (README: `select status, result from boxcar.jobs`), and writes
    -- through the definer functions above only.
    ('table',    'jobs',                           'worker:select,update,delete app:select'),
    ('table',    'job_events',                     'worker:select,insert app:select'),
    ('table',    'job_logs',                       'worker:select,insert,update app:select'),
    ('table',    'workers',                        'worker:select,insert,update'),
    ('table',    'leaders',                        'worker:select,insert,update,delete'),
    ('table',    'settings',                       'worker:select,insert,update,delete'),
    ('table',    'webhook_deliveries',             'worker:select,insert,update'),
    ('table',    'storages',                       'worker:select,insert,update,delete'),
    ('table',    'storage_versions',               'worker:select,insert,update,delete'),
    ('table',    'storage_objects',                'worker:select,insert,update,delete'),
    ('table',    'sessions',                       'worker:select,update'),
    ('table',    'queue_config',                   'worker:select,update'),
    ('table',    'schedules',                      'worker:select,update'),
    ('table',    'schema_migrations',              'worker:select'),
    ('sequence', 'job_events_id_seq',              ''),
    ('sequence', 'storage_versions_id_seq',        ''),
    -- Caps per queue and quotas per scope (sql/39_caps_quotas.sql): the
    -- operator's setters and reports are owner-only; the checks run in
    -- triggers and in the claim and report, as whoever inserts or claims.
    ('function', 'set_queue_caps',                 ''),
    ('function', 'set_scope_quota',                ''),
    ('function', 'queue_caps_ls',                  ''),
    ('function', 'scope_quota_ls',                 ''),
    ('function', 'queue_show',                     ''),
    ('function', 'queue_caps_json',                ''),
    ('function', 'scope_quota_json',               ''),
    ('function', 'cap_fields',                     'worker'),
    ('function', 'caps_error',                     'worker'),
    ('function', 'cap_raise',                      'worker'),
    ('function', 'apply_queue_caps',               'worker'),
    ('function', 'caps_unfill',                    'worker'),
    ('function', 'caps_job',                       'worker'),
    ('function', 'usage_day',                      'worker'),
    ('function', 'charge_cpu',                     'worker'),
    ('function', 'scope_wait_reason',              ''),
    ('table',    'queue_caps',                     'worker:select'),
    ('table',    'scope_quotas',                   'worker:select,update'),
    ('table',    'scope_cpu_usage',                'worker:select,insert,update'),
    -- Webhook secrets per scope (sql/62_webhook_secrets.sql): the worker
    -- reads the valid generations with its claim of deliveries; rotating
    -- and listing are the operator's (a rotation can cut a receiver off).
    ('function', 'claim_signed_deliveries',        'worker'),
    ('function', 'webhook_signing_generations',    'worker'),
    ('function', 'webhook_secret_max_valid',       'worker'),
    ('function', 'check_webhook_secret_target',    ''),
    ('function', 'rotate_webhook_secret',          ''),
    ('function', 'webhook_secret_list',            ''),
    ('table',    'webhook_secret_generations',     'worker:select'),
    -- Job secrets (sql/12_secrets.sql): sealed by a trigger as whoever
    -- inserts the job (the worker, when a schedule fires); the keys are
    -- the operator's.
    ('function', 'secrets_error',                  'worker'),
    ('function', 'secrets_raise',                  'worker'),
    ('function', 'seal_secrets',                   'worker'),
    ('function', 'seal_spec_secrets',              ''),
    ('function', 'spec_redacted',                  'worker'),
    ('function', 'secret_key_add',                 ''),
    ('function', 'secret_key_users',               ''),
    ('function', 'secret_key_retire',              ''),
    ('table',    'secret_keys',                    'worker:select'),
    -- Storages belong to a scope (sql/68_storage_scopes.sql): the checks
    -- run in the jobs' triggers and the worker's storage writes; sharing
    -- and owners are the operator's.
    ('function', 'storage_readable',               'worker'),
    ('function', 'storage_has_version',            'worker'),
    ('function', 'storage_scope_error',            'worker'),
    ('function', 'jobs_storage_scope',             ''),
    ('function', 'storage_check_owner',            'worker'),
    ('function', 'session_storage_name',           'worker'),
    ('function', 'share_storage',                  ''),
    ('function', 'unshare_storage',                ''),
    ('function', 'set_storage_public',             ''),
    ('function', 'set_storage_owner',              ''),
    ('table',    'storage_shares',                 'worker:select'),
    -- Views: counts per queue and the replicas, never a job's spec or
    -- output.
    ('view',     'active_queue_stats',             'worker:select monitor:select'),
    ('view',     'queue_stats',                    'worker:select monitor:select'),
    ('view',     'worker_status',                  'monitor:select dashboard:select')
$$;

do $$
declare
    roles constant text := 'public, boxcar_app, boxcar_worker, boxcar_monitor, boxcar_dashboard';
    f record;
    c record;
    a record;
    g text;
begin
    execute 'revoke all on schema boxcar from public';
    execute 'grant usage on schema boxcar to boxcar_app, boxcar_worker, boxcar_monitor, boxcar_dashboard';
    -- pgcrypto (migrations/0017_secrets.sql): the secrets trigger seals
    -- with it as whoever inserts a job; the app's inserts run as the owner.
    if exists (select from pg_namespace where nspname = 'boxcar_pgcrypto') then
        execute 'grant usage on schema boxcar_pgcrypto to boxcar_worker';
    end if;
    -- Functions: nothing for anyone, then what their line says.  Listed
    -- as definer: SECURITY DEFINER and a search_path no caller can put a
    -- schema of theirs in front of.
    -- Names qualified here: a role named boxcar has schema boxcar on its
    -- search_path ("$user"), where a regprocedure would print bare.
    for f in select format('boxcar.%I(%s)', p.proname, pg_get_function_identity_arguments(p.oid)) as sig,
                    l.kind, coalesce(l.grants, '') as grants
               from pg_proc p left join boxcar.access_list() l
                 on l.name = p.proname and l.kind in ('definer', 'function')
              where p.pronamespace = 'boxcar'::regnamespace
                -- An extension's objects keep its own grants.
                and not exists (select from pg_depend d where d.classid = 'pg_proc'::regclass
                                   and d.objid = p.oid and d.deptype = 'e') loop
        execute format('revoke all on routine %s from %s', f.sig, roles);
        if f.kind = 'definer' then
            execute format('alter routine %s security definer set search_path = pg_catalog, boxcar, pg_temp',
                           f.sig);
        elsif f.kind = 'function' then
            execute format('alter routine %s security invoker', f.sig);
        end if;
        foreach g in array string_to_array(f.grants, ' ') loop
            execute format('grant execute on routine %s to %I', f.sig, 'boxcar_' || g);
        end loop;
    end loop;
    -- Tables, views, sequences.
    for c in select format('boxcar.%I', r.relname) as rel, coalesce(l.grants, '') as grants
               from pg_class r left join boxcar.access_list() l
                 on l.name = r.relname and l.kind in ('table', 'view', 'sequence')
              where r.relnamespace = 'boxcar'::regnamespace and r.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
                and not exists (select from pg_depend d where d.classid = 'pg_class'::regclass
                                   and d.objid = r.oid and d.deptype = 'e') loop
        execute format('revoke all on %s from %s', c.rel, roles);
        for a in select split_part(t, ':', 1) as who, split_part(t, ':', 2) as privs
                   from unnest(string_to_array(c.grants, ' ')) t loop
            execute format('grant %s on %s to %I', a.privs, c.rel, 'boxcar_' || a.who);
        end loop;
    end loop;
end $$;
