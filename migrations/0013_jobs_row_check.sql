-- One check constraint on jobs instead of seven, with the same rules.
-- PostgreSQL reads a table's check constraints back from their stored
-- text at every statement that writes the table, and the seven of jobs
-- (their text constants read back byte by byte) were a quarter of the
-- database's time in boxcar.enqueue, whose INSERT is one statement per
-- job, and a share of every claim and report.  A call of one function is
-- read back at once.
--
-- A row that breaks a rule fails with check_violation (23514), as
-- before, naming the rule in the message and the old constraint's name
-- in the error's constraint field, without printing the whole row.  NULL
-- passes where the old checks let it (idempotency_key, webhook_url).
--
-- NOT VALID: the rows already there were held to the old checks (the two
-- of 0008 were NOT VALID too); every new or updated row is checked.
create or replace function boxcar.check_job_row(queue text, status text, attempts integer,
                                                max_attempts integer, run_at timestamptz,
                                                idempotency_key text, webhook_url text)
returns boolean language plpgsql immutable as $$
begin
    -- A rule on a NULL is NULL, which IF takes for false: NULL passes.
    if not (queue ~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$' and queue !~ '(^|/)\.\.?(/|$)'
            and length(queue) <= 128) then
        raise exception 'jobs.queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_queue_check';
    end if;
    if not (status in ('queued', 'running', 'succeeded', 'failed', 'cancelled')) then
        raise exception 'jobs.status: must be queued, running, succeeded, failed or cancelled'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_status_check';
    end if;
    if not (attempts >= 0) then
        raise exception 'jobs.attempts: must be 0 or more'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_attempts_check';
    end if;
    if not (max_attempts between 1 and 100) then
        raise exception 'jobs.max_attempts: must be between 1 and 100'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_max_attempts_check';
    end if;
    if not isfinite(run_at) then
        raise exception 'jobs.run_at: must be finite'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_run_at_finite';
    end if;
    if not (length(idempotency_key) between 1 and 256) then
        raise exception 'jobs.idempotency_key: must be 1 to 256 characters'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_idempotency_key_check';
    end if;
    if not (length(webhook_url) <= 2048) then
        raise exception 'jobs.webhook_url: must be at most 2048 characters'
            using errcode = 'check_violation', schema = 'boxcar', table = 'jobs',
                  constraint = 'jobs_webhook_url_check';
    end if;
    return true;
end $$;

alter table boxcar.jobs
    drop constraint jobs_attempts_check,
    drop constraint jobs_idempotency_key_check,
    drop constraint jobs_max_attempts_check,
    drop constraint jobs_queue_check,
    drop constraint jobs_run_at_finite,
    drop constraint jobs_status_check,
    drop constraint jobs_webhook_url_check,
    add constraint jobs_row_check
        check (boxcar.check_job_row(queue, status, attempts, max_attempts, run_at,
                                    idempotency_key, webhook_url)) not valid;
