-- Appends one batch of chunks (parallel arrays) and wakes followers with
-- one NOTIFY on boxcar_logs carrying the job id.
create or replace function boxcar.append_logs(job_id uuid, attempt integer, first_seq integer,
                                              streams smallint[], chunks bytea[])
returns void language plpgsql volatile as $$
#variable_conflict use_column
begin
    insert into boxcar.job_logs (job_id, attempt, seq, stream, data)
    select append_logs.job_id, append_logs.attempt, append_logs.first_seq + i - 1,
           append_logs.streams[i], append_logs.chunks[i]
      from generate_subscripts(append_logs.chunks, 1) i;
    perform pg_notify('boxcar_logs', append_logs.job_id::text);
end $$;

-- Internal (report_batch): the last output chunks of the jobs ids, sent
-- with their results, logs[i] being {"seq": first seq, "chunks":
-- [[stream, "hex bytes"], ...]} or null.  A resent report (its answer was
-- lost) finds its chunks already there and writes none twice.
create or replace function boxcar.append_report_logs(ids uuid[], attempts integer[], logs jsonb[])
returns void language plpgsql volatile as $$
#variable_conflict use_column
declare
    bad integer;
begin
    select min(s.i) into bad from generate_subscripts(ids, 1) s(i)
     where logs[s.i] is not null and jsonb_typeof(logs[s.i]) <> 'null'
       and (attempts[s.i] is null or jsonb_typeof(logs[s.i] -> 'seq') is distinct from 'number'
            or jsonb_typeof(logs[s.i] -> 'chunks') is distinct from 'array');
    if bad is not null then
        raise exception 'logs[%]: must be {"seq": number, "chunks": [[stream, hex], ...]} with the '
                        'row''s attempt', bad using errcode = '22023';
    end if;
    insert into boxcar.job_logs (job_id, attempt, seq, stream, data)
    select ids[s.i], attempts[s.i], (logs[s.i] ->> 'seq')::integer + c.n::integer - 1,
           (c.v ->> 0)::smallint, decode(c.v ->> 1, 'hex')
      from generate_subscripts(ids, 1) s(i)
     cross join lateral jsonb_array_elements(logs[s.i] -> 'chunks') with ordinality c(v, n)
     where jsonb_typeof(logs[s.i] -> 'chunks') = 'array'
     order by ids[s.i], c.n
        on conflict do nothing;
    perform pg_notify('boxcar_logs', j::text)
       from (select distinct ids[s.i] j from generate_subscripts(ids, 1) s(i)
              where jsonb_array_length(coalesce(logs[s.i] -> 'chunks', '[]')) > 0) d;
end $$;

-- Chunks after the cursor (attempt, seq), in order; the first call passes
-- (0, 0).
create or replace function boxcar.job_logs_after(job_id uuid, after_attempt integer, after_seq integer,
                                                 lim integer default 1000)
returns table (attempt integer, seq integer, stream smallint, data bytea)
language sql stable
-- No sequential scans: a follower's session may keep the plan (see
-- boxcar.claim_ids); the primary key gives the chunks in order.
set enable_seqscan = off as $$
    select l.attempt, l.seq, l.stream, l.data from boxcar.job_logs l
     where l.job_id = job_logs_after.job_id
       and (l.attempt, l.seq) > (job_logs_after.after_attempt, job_logs_after.after_seq)
     order by l.attempt, l.seq
     limit lim
$$;
