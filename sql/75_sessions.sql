-- Sessions (issue 47): a job naming spec.session runs in its session's
-- live sandbox, kept by one worker between jobs; the session's files are
-- checkpointed into its artifact storage by the artifact versions its
-- jobs record: "session-<id>" for sessions made before storages had
-- scopes, or a name that includes the scope (boxcar.session_storage_name,
-- sql/68_storage_scopes.sql), owned by the session's scope.  The table is migrations/0015_sessions.sql.
--
-- Routing: a queued job of a session that a worker instance holds (holder,
-- holder_instance, held_until in the future) is claimed by that instance
-- only (both claim paths, sql/30_claim.sql).  The holder renews the hold
-- with session_renew as it renews its jobs' leases; a hold that lapsed is
-- nobody's: any worker may claim the session's next job and start the
-- session again from its last checkpoint.  The session's jobs still run one
-- at a time in enqueue order, as every artifact storage's do
-- (sql/35_artifact_order.sql).
--
-- A hold that lapsed (its worker died or lost the database) leaves the row
-- 'live' until the housekeeping rescue (rescue_expired) resets it to
-- 'stopped' (sessions_expire, below); session_list reports it as 'stale'
-- meanwhile.  A lapsed hold is never renewed: the worker it was is told so
-- (session_renew leaves it out) and stops its sandbox, so the claim rule,
-- the table and the holder agree on who has the session.

-- The spec as a session job runs it: a session job without an artifact
-- has its session's storage as its artifact.  (The trigger fills it; an
-- idempotent enqueue compares a repeated request's spec with the stored,
-- filled one through this too.)  scope: the job's queue's.
drop function if exists boxcar.session_fill_spec(jsonb);
create or replace function boxcar.session_fill_spec(spec jsonb, scope text)
returns jsonb language plpgsql stable as $$
begin
    if spec #>> '{session,id}' is null or coalesce(jsonb_typeof(spec -> 'artifact'), 'null') <> 'null' then
        return spec;
    end if;
    return jsonb_set(spec, '{artifact}',
                     jsonb_build_object('storage',
                                        boxcar.session_storage_name(scope, spec #>> '{session,id}')));
end $$;

-- Raises a spec error of a session job as check_spec raises one (BAD_SPEC,
-- 22023): the trigger's checks need the table, which spec_error does not
-- read, and the worker checks the same at claim.
create or replace function boxcar.session_spec_raise(message text)
returns void language plpgsql volatile as $$
begin
    raise exception 'BAD_SPEC: %', message
        using errcode = '22023', hint = 'the job spec is documented in docs/job-spec.md';
end $$;

-- Locks the row of a session's storage, which a fork writes (its head),
-- making it (an artifact storage) when there is none: a fork takes it
-- before the storage's advisory lock, as record_job_artifact holds it
-- before the job's end takes that lock.  A removed storage is made anew,
-- without versions, as recording a version would make it, owned by the
-- session's scope.
drop function if exists boxcar.session_fork_lock(text);
create or replace function boxcar.session_fork_lock(storage text, scope text)
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    perform boxcar.create_storage(session_fork_lock.storage, 'artifact', session_fork_lock.scope);
    perform from boxcar.storages st where st.name = session_fork_lock.storage for update;
end $$;

-- Starts the session scope/id from another session's checkpoint (its
-- spec.session.from: {"session", "version": "latest" or a sha256}) when
-- the session's storage has no version of its own yet; once it has, from
-- is ignored (it is the session's history that counts).  The fork is the
-- source's version recorded again, in the session's storage: the same
-- tree id, layers, tarball key and sizes, so no byte is copied and no
-- object registered (objects are content-addressed, shared by every
-- version naming them).  Its parent is none: the source's parent is a
-- version of the other storage.  Returns whether it forked.
create or replace function boxcar.session_fork(scope text, id text, source jsonb)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
declare
    store text := boxcar.session_storage_name(session_fork.scope, session_fork.id);
    src_id text := session_fork.source ->> 'session';
    ver text := coalesce(session_fork.source ->> 'version', 'latest');
    src_store text;
    v boxcar.storage_versions;
begin
    -- The storage's row, then its advisory lock (the order of the session
    -- job's trigger, see boxcar.session_job): two first jobs of a session
    -- fork once.
    perform boxcar.session_fork_lock(store, session_fork.scope);
    perform boxcar.lock_artifact_storage(store);
    if exists (select from boxcar.storages st
                 join boxcar.storage_versions x on x.storage = st.name and x.removed_at is null
                where st.name = store and st.removed_at is null) then
        return false;
    end if;
    select s.storage into src_store from boxcar.sessions s
     where s.scope = session_fork.scope and s.id = src_id;
    if not found then
        perform boxcar.session_spec_raise(format('session.from.session: no session "%s" in this scope',
                                                 src_id));
    end if;
    select x.* into v
      from boxcar.storages st
      join boxcar.storage_versions x on x.storage = st.name and x.removed_at is null
     where st.name = src_store and st.removed_at is null
       and x.sha256 = case when ver = 'latest' then st.head_version else ver end;
    if not found then
        perform boxcar.session_spec_raise(case when ver = 'latest'
            then format('session.from.version: session "%s" has no checkpoint yet', src_id)
            else format('session.from.version: session "%s" has no version %s', src_id, ver) end);
    end if;
    perform boxcar.add_storage_version(store, v.sha256, v.s3_key, v.size, v.file_count, null,
                                       v.job_id, true,
                                       case when v.format = 'tree' then v.layers end, v.bottom_tree,
                                       session_fork.scope);
    update boxcar.sessions s set forked_from = src_id, forked_version = v.sha256
     where s.scope = session_fork.scope and s.id = session_fork.id;
    return true;
end $$;

-- BEFORE INSERT of a session job (direct inserts included, not only
-- enqueue()'s): fills the artifact (session_fill_spec), makes the
-- session's row on its first job, refuses a session id another scope owns,
-- keeps the session's idle timeout the latest job's, and forks (above).
-- Named to fire before jobs_block_artifact (triggers fire in name order),
-- which must see the filled artifact.
create or replace function boxcar.session_job() returns trigger
language plpgsql as $$
declare
    sid text := new.spec #>> '{session,id}';
    sscope text;
    sstore text;
    idle double precision;
    owner text;
    cur double precision;
    forking boolean;
begin
    -- A malformed session (a row written around enqueue, which checks it)
    -- makes no session: the row goes in, and the worker fails the job at
    -- its claim with the field's BAD_SPEC, as for any malformed spec.
    if sid is null or boxcar.session_error(new.spec -> 'session') is not null then
        return new;
    end if;
    sscope := boxcar.queue_scope(new.queue);
    sstore := boxcar.session_storage_name(sscope, sid);
    -- A session job naming its artifact names its session's storage (a
    -- malformed spec, written around enqueue, is the worker's to fail).
    if jsonb_typeof(new.spec #> '{artifact,storage}') = 'string'
       and new.spec #>> '{artifact,storage}' <> sstore and boxcar.spec_error(new.spec) is null then
        perform boxcar.session_spec_raise(format('artifact.storage: a session''s files are in its own '
                                                 'storage "%s"', sstore));
    end if;
    new.spec := boxcar.session_fill_spec(new.spec, sscope);
    forking := new.status = 'queued' and jsonb_typeof(new.spec #> '{session,from}') = 'object';
    -- Locks in the order a worker recording the session's checkpoint takes
    -- them (record_job_artifact: the storage's row; the job's end: the
    -- storage's advisory lock; then session_job_done: the session's row),
    -- never the other way round, so never a deadlock.  A fork writes the
    -- storage's row: it is locked first (session_fork_lock).
    if forking then
        perform boxcar.session_fork_lock(sstore, sscope);
    end if;
    if new.status = 'queued' then
        perform boxcar.lock_artifact_storage(sstore);
    end if;
    idle := case when jsonb_typeof(new.spec #> '{session,idle_timeout_s}') = 'number'
                 then (new.spec #>> '{session,idle_timeout_s}')::double precision else 300 end;
    select s.scope, s.idle_timeout_s into owner, cur from boxcar.sessions s where s.storage = sstore;
    if not found then
        -- Any conflict: (scope, id) made meanwhile, or the storage name by
        -- another scope (a session made before storages had scopes, whose
        -- "session-<id>" is this one's name); the row is read again.
        insert into boxcar.sessions (scope, id, storage, idle_timeout_s)
        values (sscope, sid, sstore, idle)
        on conflict do nothing;
        if found then
            owner := sscope;
            cur := idle;
        else
            select s.scope, s.idle_timeout_s into owner, cur from boxcar.sessions s
             where s.storage = sstore;
        end if;
    end if;
    if owner is distinct from sscope then
        perform boxcar.session_spec_raise(format('session.id: "%s": its storage name "%s" is taken; '
                                                 'use another id', sid, sstore));
    end if;
    -- Only when it changes: the row is locked until the enqueue commits.
    if cur is distinct from idle then
        update boxcar.sessions s set idle_timeout_s = idle where s.scope = sscope and s.id = sid;
    end if;
    if forking then
        perform boxcar.session_fork(sscope, sid, new.spec #> '{session,from}');
    end if;
    return new;
end $$;

-- WHEN: a job without a session never calls the function.
create or replace trigger jobs_a_session
    before insert on boxcar.jobs
    for each row when (new.spec ? 'session')
    execute function boxcar.session_job();

-- The worker instance starts the session's sandbox: the session becomes
-- live and held by it for lease.  No row when another instance holds it
-- (held_until in the future); the worker must not start it then.
-- resumed: the session's storage has a version (a checkpoint: its last
-- job's files, or the version it was forked from) the sandbox starts from;
-- previous_holder: the worker that held it before (null the first time),
-- whose hold may have lapsed; starts: how many sandboxes were started for
-- the session, this one included.  Every call counts a start: the worker
-- calls it when it starts a sandbox, not per job.  An ended session starts
-- again as any other.  Unknown session: 22023.
create or replace function boxcar.session_hold(worker_id text, instance text, scope text, id text,
                                               lease interval default '30 seconds')
returns table (resumed boolean, previous_holder text, starts integer)
language plpgsql volatile as $$
#variable_conflict use_column
declare
    s boxcar.sessions;
    has_version boolean;
    n integer;
begin
    if session_hold.lease is null or session_hold.lease <= interval '0' then
        raise exception 'lease: must be a positive interval' using errcode = '22023';
    end if;
    select * into s from boxcar.sessions x
     where x.scope = session_hold.scope and x.id = session_hold.id
       for update;
    if not found then
        raise exception 'no session "%" in scope "%"', session_hold.id, session_hold.scope
            using errcode = '22023';
    end if;
    if s.holder is not null and s.held_until > now()
       and (s.holder, coalesce(s.holder_instance, ''))
           is distinct from (session_hold.worker_id, coalesce(session_hold.instance, '')) then
        return;
    end if;
    has_version := exists (select from boxcar.storages st
                             join boxcar.storage_versions v on v.storage = st.name and v.removed_at is null
                            where st.name = s.storage and st.removed_at is null);
    update boxcar.sessions x
       set state = 'live', holder = session_hold.worker_id, holder_instance = session_hold.instance,
           held_until = now() + session_hold.lease, starts = x.starts + 1,
           resumes = x.resumes + has_version::integer, started_at = now(),
           end_requested_at = null, ended_at = null
     where x.scope = s.scope and x.id = s.id
    returning x.starts into n;
    resumed := has_version;
    previous_holder := s.holder;
    starts := n;
    return next;
end $$;

-- Extends the hold of every session the worker instance holds, and returns
-- them, with whether their end was asked (end_session): a session missing
-- from the answer is no longer this worker's, which must stop its sandbox.
-- A hold that lapsed is not renewed (another worker may have claimed the
-- session's next job since).  Rows locked in key order, so two renewals
-- never wait on each other in a cycle.
create or replace function boxcar.session_renew(worker_id text, instance text,
                                                lease interval default '30 seconds')
returns table (scope text, id text, end_requested boolean)
language plpgsql volatile
-- No sequential scans: the worker's session keeps these plans (see
-- boxcar.claim_ids).
set enable_seqscan = off as $$
#variable_conflict use_column
begin
    if session_renew.lease is null or session_renew.lease <= interval '0' then
        raise exception 'lease: must be a positive interval' using errcode = '22023';
    end if;
    perform from boxcar.sessions s
     where s.holder = session_renew.worker_id
       and coalesce(s.holder_instance, '') = coalesce(session_renew.instance, '')
       and s.held_until > now()
     order by s.scope, s.id
       for update;
    return query
    update boxcar.sessions s set held_until = now() + session_renew.lease
     where s.holder = session_renew.worker_id
       and coalesce(s.holder_instance, '') = coalesce(session_renew.instance, '')
       and s.held_until > now()
    returning s.scope, s.id, s.end_requested_at is not null;
end $$;

-- The worker instance stopped the session's sandbox, for reason: 'idle'
-- (no job for idle_timeout_s), 'evicted' (the worker needed the room),
-- 'ended' (end_session asked), 'drain' (the worker is draining),
-- 'lifetime' (the sandbox reached its maximum age), 'failed' (the sandbox
-- broke), 'lost' (the worker found it gone).  Only the holder releases:
-- false when it no longer holds the session.  The session is 'stopped'
-- (its next job starts it again from its checkpoint), or 'ended' when that
-- was the reason or an end was asked meanwhile.  The workers of the
-- queues the session's queued jobs wait in are woken: any of them may
-- claim those now.
create or replace function boxcar.session_release(worker_id text, instance text, scope text, id text,
                                                  reason text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    if session_release.reason is null
       or session_release.reason not in ('idle', 'evicted', 'ended', 'drain', 'lifetime', 'failed', 'lost') then
        raise exception 'reason: must be idle, evicted, ended, drain, lifetime, failed or lost'
            using errcode = '22023';
    end if;
    update boxcar.sessions s
       set holder = null, holder_instance = null, held_until = null,
           state = case when session_release.reason = 'ended' or s.end_requested_at is not null
                        then 'ended' else 'stopped' end,
           ended_at = case when session_release.reason = 'ended' or s.end_requested_at is not null
                           then now() else s.ended_at end,
           idle_ends = s.idle_ends + (session_release.reason = 'idle')::integer,
           evictions = s.evictions + (session_release.reason = 'evicted')::integer
     where s.scope = session_release.scope and s.id = session_release.id
       and s.holder = session_release.worker_id
       and coalesce(s.holder_instance, '') = coalesce(session_release.instance, '');
    if not found then
        return false;
    end if;
    perform pg_notify('boxcar_jobs', q.queue)
       from (select distinct j.queue from boxcar.jobs j
              where j.session_id = session_release.id and j.status = 'queued' and not j.blocked
                and boxcar.queue_scope(j.queue) = session_release.scope) q;
    return true;
end $$;

-- A job of the session ended (whatever its outcome): counted, and when.
-- The worker calls it in a statement of its own after the job's report.
-- False for an unknown session.
create or replace function boxcar.session_job_done(scope text, id text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    update boxcar.sessions s set jobs = s.jobs + 1, last_job_at = now()
     where s.scope = session_job_done.scope and s.id = session_job_done.id;
    return found;
end $$;

-- The user ends the session.  Live (held): its end is asked of the holder
-- (end_requested_at, a NOTIFY on boxcar_session_end with {"scope", "id",
-- "holder", "instance"}, and session_renew's end_requested for a worker
-- that missed it), which checkpoints, stops the sandbox and releases it
-- as 'ended': 'ending'.  Otherwise it is 'ended' now.  Ending does not
-- cancel the session's queued jobs, nor refuse later ones: a job of an
-- ended session starts it again from its last checkpoint.  Unknown
-- session: 22023.
create or replace function boxcar.end_session(scope text, id text)
returns text language plpgsql volatile as $$
#variable_conflict use_column
declare
    s boxcar.sessions;
begin
    select * into s from boxcar.sessions x
     where x.scope = end_session.scope and x.id = end_session.id
       for update;
    if not found then
        raise exception 'no session "%" in scope "%"', end_session.id, end_session.scope
            using errcode = '22023';
    end if;
    if s.holder is not null and s.held_until > now() then
        update boxcar.sessions x set end_requested_at = now()
         where x.scope = s.scope and x.id = s.id;
        perform pg_notify('boxcar_session_end',
                          json_build_object('scope', s.scope, 'id', s.id, 'holder', s.holder,
                                            'instance', s.holder_instance)::text);
        return 'ending';
    end if;
    -- Not held, or its hold lapsed (nobody runs it: the hold is dropped).
    update boxcar.sessions x
       set state = 'ended', ended_at = case when s.state = 'ended' then coalesce(x.ended_at, now())
                                            else now() end,
           holder = null, holder_instance = null, held_until = null
     where x.scope = s.scope and x.id = s.id;
    return 'ended';
end $$;

-- Sessions, of one scope or all, ordered by scope and id: what `boxcar
-- sessions` and the dashboard show.  state: 'live', 'stale' (live, but
-- its hold lapsed: its worker is gone, the housekeeping will reset it),
-- 'stopped' or 'ended'.  holder_alive: whether the holding worker process
-- is registered and heartbeating (as boxcar.worker_status tells 'gone'),
-- null without a holder.  checkpoint: the version the session starts from
-- next (its storage's head).  queued, running: its jobs now.
create or replace function boxcar.session_list(scope text default null)
returns table (scope text, id text, storage text, state text, holder text, holder_instance text,
               held_until timestamptz, holder_alive boolean, end_requested_at timestamptz,
               idle_timeout_s double precision, created_at timestamptz, started_at timestamptz,
               last_job_at timestamptz, ended_at timestamptz, starts integer, resumes integer,
               jobs integer, idle_ends integer, evictions integer, forked_from text,
               forked_version text, checkpoint text, queued bigint, running bigint)
language sql stable as $$
    select s.scope, s.id, s.storage,
           case when s.state = 'live' and (s.held_until is null or s.held_until <= now()) then 'stale'
                else s.state end,
           s.holder, s.holder_instance, s.held_until,
           case when s.holder is not null then
               exists (select from boxcar.workers w
                        where w.id = s.holder and w.instance is not distinct from s.holder_instance
                          and w.state <> 'stopped'
                          and w.heartbeat_at >= now() - make_interval(secs => greatest(w.lease_s, 1)))
           end,
           s.end_requested_at, s.idle_timeout_s, s.created_at, s.started_at, s.last_job_at,
           s.ended_at, s.starts, s.resumes, s.jobs, s.idle_ends, s.evictions, s.forked_from,
           s.forked_version,
           (select st.head_version from boxcar.storages st
             where st.name = s.storage and st.removed_at is null),
           (select count(*) from boxcar.jobs j
             where j.session_id = s.id and j.status = 'queued' and boxcar.queue_scope(j.queue) = s.scope),
           (select count(*) from boxcar.jobs j
             where j.session_id = s.id and j.status = 'running' and boxcar.queue_scope(j.queue) = s.scope)
      from boxcar.sessions s
     where session_list.scope is null or s.scope = session_list.scope
     order by s.scope, s.id
$$;

-- Housekeeping (rescue_expired): the holds that lapsed are dropped, the
-- sessions 'stopped' (or 'ended' when an end was asked: nobody will
-- checkpoint and end them now).  Their next job starts them again from
-- the checkpoint, on any worker.  SKIP LOCKED, as the jobs' rescue: safe
-- from every worker at once.  Returns how many it reset.
create or replace function boxcar.sessions_expire()
returns integer language plpgsql volatile
-- No sequential scans: see boxcar.claim_ids.
set enable_seqscan = off as $$
declare
    n integer;
begin
    update boxcar.sessions s
       set holder = null, holder_instance = null, held_until = null,
           state = case when s.end_requested_at is not null then 'ended' else 'stopped' end,
           ended_at = case when s.end_requested_at is not null then now() else s.ended_at end
      from (select x.scope, x.id from boxcar.sessions x
             where x.holder is not null and x.held_until <= now()
               for update skip locked) e
     where s.scope = e.scope and s.id = e.id;
    get diagnostics n = row_count;
    return n;
end $$;

-- A worker process starting under worker_id (rescue_orphans): the
-- sessions an earlier process of that name held are gone with it.  Reset
-- as sessions_expire resets them.  Returns how many.
create or replace function boxcar.sessions_orphaned(worker_id text, instance text)
returns integer language plpgsql volatile
set enable_seqscan = off as $$
#variable_conflict use_column
declare
    n integer;
begin
    update boxcar.sessions s
       set holder = null, holder_instance = null, held_until = null,
           state = case when s.end_requested_at is not null then 'ended' else 'stopped' end,
           ended_at = case when s.end_requested_at is not null then now() else s.ended_at end
      from (select x.scope, x.id from boxcar.sessions x
             where x.holder = sessions_orphaned.worker_id
               and coalesce(x.holder_instance, '') is distinct from coalesce(sessions_orphaned.instance, '')
               for update skip locked) e
     where s.scope = e.scope and s.id = e.id;
    get diagnostics n = row_count;
    return n;
end $$;
