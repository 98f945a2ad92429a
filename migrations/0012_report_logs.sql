-- Workers of this version send a job's last output with its result
-- (boxcar.report_batch's logs, sql/30_claim.sql) rather than in a
-- transaction of its own.  No table changes: this migration is what a
-- worker checks before it takes jobs (migrate_check_schema), so a worker
-- never calls the new report_batch on a database that does not have it
-- ("migration 0012_report_logs is not applied: run boxcar migrate").
comment on table boxcar.job_logs is
    'Live job output: stdout/stderr chunks in order per attempt (seq).  Written while the job '
    'runs (boxcar.append_logs) and, for its last chunks, with its result (boxcar.report_batch).';
