-- Live job output (DESIGN §4): stdout/stderr chunks as the job writes
-- them, in order per attempt, bounded per job by the worker.
create table boxcar.job_logs (
    job_id  uuid not null references boxcar.jobs (id) on delete cascade,
    attempt integer not null,
    seq     integer not null,
    stream  smallint not null check (stream in (1, 2)),
    at      timestamptz not null default clock_timestamp(),
    data    bytea not null,
    primary key (job_id, attempt, seq)
);
