begin;
select plan(25);

create temp table j as
select boxcar.enqueue('w', '{"command":["x"]}', webhook_url => 'http://127.0.0.1:9/hook') as id;
select count(*) from boxcar.claim('w1', array['w'], 1);
select is((select count(*)::int from boxcar.webhook_deliveries), 0, 'no delivery before the job finishes');
select boxcar.complete((select id from j), 'w1', 'succeeded', '{"exit_code":0}', null);
select is((select count(*)::int from boxcar.webhook_deliveries where job_id = (select id from j)), 1,
          'completing the job writes one delivery in the same transaction');
select matches((select id from boxcar.webhook_deliveries), '^msg_[0-9a-f]{32}$', 'the webhook-id is msg_<hex>');
select is((select body::jsonb -> 'data' ->> 'status' from boxcar.webhook_deliveries), 'succeeded',
          'the body carries the job status');
select is((select body::jsonb ->> 'type' from boxcar.webhook_deliveries), 'job.succeeded', 'type job.succeeded');
select is((select body::jsonb -> 'data' -> 'result' ->> 'exit_code' from boxcar.webhook_deliveries), '0',
          'and the result');

-- spec.webhook.url, cancel of a queued job, and the database-wide default.
select boxcar.cancel(boxcar.enqueue('w', '{"command":["x"], "webhook": {"url": "https://spec.example/h"}}'));
select is((select url || ' ' || event_type from boxcar.webhook_deliveries where url like '%spec.example%'),
          'https://spec.example/h job.cancelled', 'spec.webhook.url is used, cancel sends job.cancelled');
select boxcar.cancel(boxcar.enqueue('w', '{"command":["x"]}'));
select is((select count(*)::int from boxcar.webhook_deliveries), 2, 'no URL anywhere: no delivery');
select boxcar.set_default_webhook_url('https://default.example/h');
select boxcar.cancel(boxcar.enqueue('w', '{"command":["x"]}'));
select is((select count(*)::int from boxcar.webhook_deliveries where url = 'https://default.example/h'), 1,
          'the default URL applies to jobs without their own');
select throws_ok($$select boxcar.set_default_webhook_url('ftp://x')$$, '22023', null, 'a bad default URL is refused');

-- Claiming and results: fenced, scheduled, Retry-After, 410, exhaustion.
create temp table d as select id from boxcar.webhook_deliveries where job_id = (select id from j);
update boxcar.webhook_deliveries set next_attempt_at = now() + interval '1 hour' where id not in (select id from d);
select is((select count(*)::int from boxcar.claim_deliveries('w1', 10)), 1, 'a due delivery is claimed');
select is((select count(*)::int from boxcar.claim_deliveries('w2', 10)), 0, 'a leased delivery is not claimed twice');
select is(boxcar.delivery_result((select id from d), 'w2', 500, 'HTTP 500', null, '{5s}'), null,
          'another worker cannot record a failure');
select is(boxcar.delivery_result((select id from d), 'w1', 500, 'HTTP 500', null, '{5s,5m}'), 'pending',
          'a 500 is retried');
select ok((select next_attempt_at between now() + interval '4 s' and now() + interval '6 s'
             from boxcar.webhook_deliveries where id = (select id from d)), 'after the first scheduled delay');
update boxcar.webhook_deliveries set next_attempt_at = now() where id = (select id from d);
select count(*) from boxcar.claim_deliveries('w1', 10);
select boxcar.delivery_result((select id from d), 'w1', 503, 'HTTP 503', 120, '{5s,5m}');
select ok((select next_attempt_at >= now() + interval '119 s' from boxcar.webhook_deliveries where id = (select id from d)),
          'Retry-After beyond the schedule is honoured');
update boxcar.webhook_deliveries set next_attempt_at = now() where id = (select id from d);
select count(*) from boxcar.claim_deliveries('w1', 10);
select is(boxcar.delivery_result((select id from d), 'w1', 500, 'HTTP 500', null, '{5s,5m}'), 'failed',
          'after the last scheduled try the delivery fails');
select is(boxcar.webhook_retry((select id from d)), 'pending', 'webhooks retry redrives a failed delivery');
select count(*) from boxcar.claim_deliveries('w1', 10);
select is(boxcar.delivery_result((select id from d), 'w1', 410, 'HTTP 410', null, '{5s,5m}'), 'failed',
          '410 Gone stops retrying at once');
select is((select count(*)::int from boxcar.webhook_deliveries where id = (select id from d)), 1,
          'the id is the same through every retry');

-- A lease that passed mid-attempt: w1's attempt reached the receiver (2xx)
-- after w2 took the row over; w2's attempt then fails.  The row is
-- delivered, not failed (issue 18: "8 rows recorded as failed had in fact
-- reached the receiver").
create temp table j2 as
select boxcar.enqueue('w2q', '{"command":["x"]}', webhook_url => 'http://127.0.0.1:9/hook') as id;
select count(*) from boxcar.claim('w1', array['w2q'], 1);
select boxcar.complete((select id from j2), 'w1', 'succeeded', '{"exit_code":0}', null);
create temp table d2 as select id from boxcar.webhook_deliveries where job_id = (select id from j2);
update boxcar.webhook_deliveries set next_attempt_at = now() + interval '1 hour' where id not in (select id from d2);
select count(*) from boxcar.claim_deliveries('w1', 10, '1 second');
update boxcar.webhook_deliveries set lease_expires_at = now() - interval '1 second' where id = (select id from d2);
select is((select count(*)::int from boxcar.claim_deliveries('w2', 10)), 1,
          'once the lease passed another worker takes the row');
select is(boxcar.delivery_result((select id from d2), 'w1', 200, null, null, '{5s}'), 'delivered',
          'the first worker''s late 2xx is recorded: the receiver has the event');
select is(boxcar.delivery_result((select id from d2), 'w2', 500, 'HTTP 500', null, '{}'), null,
          'the second worker''s failure after it changes nothing');
select is((select status || ' ' || last_status || ' ' || worker_id from boxcar.webhook_deliveries
            where id = (select id from d2)), 'delivered 200 w1', 'the row stays delivered');
-- And after the other worker failed the row first, a late 2xx still wins.
update boxcar.webhook_deliveries set status = 'failed', delivered_at = null, worker_id = 'w2'
 where id = (select id from d2);
select is(boxcar.delivery_result((select id from d2), 'w1', 204, null, null, '{5s}'), 'delivered',
          'a 2xx turns a row failed meanwhile into delivered');

select * from finish();
rollback;
