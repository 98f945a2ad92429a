-- Queue names "." and ".." (as a name or a scope) are refused, as
-- boxcar.enqueue and `boxcar worker --queues` refuse them: the old check
-- allowed "../x".  Rows that already hold such a name are not checked (NOT
-- VALID) so the migration cannot fail on them; every new or updated row is.
-- run_at must be finite: infinity is never claimed and -infinity jumps
-- every queue (enqueue also bounds it to 10 years, which a table check
-- cannot, now() being volatile).
alter table boxcar.jobs drop constraint jobs_queue_check;
alter table boxcar.jobs add constraint jobs_queue_check
    check (queue ~ '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?$' and queue !~ '(^|/)\.\.?(/|$)'
           and length(queue) <= 128) not valid;
alter table boxcar.jobs add constraint jobs_run_at_finite check (isfinite(run_at)) not valid;
