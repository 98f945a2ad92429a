-- A worker is "gone" once it misses three heartbeats of its own lease,
-- whatever the lease (it used to be a fixed minute).
alter table boxcar.workers add column lease_s double precision not null default 30;
