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

-- Chunks after the cursor (attempt, seq), in order; the first call passes
-- (0, 0).
create or replace function boxcar.job_logs_after(job_id uuid, after_attempt integer, after_seq integer,
                                                 lim integer default 1000)
returns table (attempt integer, seq integer, stream smallint, data bytea)
language sql stable as $$
    select l.attempt, l.seq, l.stream, l.data from boxcar.job_logs l
     where l.job_id = job_logs_after.job_id
       and (l.attempt, l.seq) > (job_logs_after.after_attempt, job_logs_after.after_seq)
     order by l.attempt, l.seq
     limit lim
$$;
