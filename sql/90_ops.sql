-- Takes or renews the housekeeping lease for ttl; true while worker_id
-- holds it.  Safe from every replica at once: the row lock serialises them.
create or replace function boxcar.try_lead(worker_id text, ttl interval default '30 seconds',
                                           role text default 'housekeeping')
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
declare
    holder text;
begin
    insert into boxcar.leaders as l (role, worker_id, expires_at)
    values (try_lead.role, try_lead.worker_id, now() + try_lead.ttl)
    on conflict (role) do update
       set worker_id = excluded.worker_id,
           since = case when l.worker_id = excluded.worker_id then l.since else now() end,
           expires_at = excluded.expires_at
     where l.worker_id = excluded.worker_id or l.expires_at < now()
    returning l.worker_id into holder;
    return holder is not null;
end $$;

create or replace function boxcar.resign(worker_id text, role text default 'housekeeping')
returns void language sql volatile as $$
    delete from boxcar.leaders l where l.role = resign.role and l.worker_id = resign.worker_id
$$;

-- Asks a worker (on any host) to drain: it stops claiming, finishes or
-- hands back its jobs, and exits.  Returns false for an unknown worker.
create or replace function boxcar.request_drain(worker_id text)
returns boolean language plpgsql volatile as $$
#variable_conflict use_column
begin
    update boxcar.workers w set drain_requested_at = now()
     where w.id = request_drain.worker_id and w.state <> 'stopped';
    if not found then
        return false;
    end if;
    perform pg_notify('boxcar_drain', request_drain.worker_id);
    return true;
end $$;

create or replace function boxcar.drain_requested(worker_id text)
returns boolean language sql stable as $$
    select coalesce((select drain_requested_at is not null from boxcar.workers w
                      where w.id = drain_requested.worker_id), false)
$$;
