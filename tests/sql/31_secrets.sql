-- Job secrets (sql/12_secrets.sql): no plaintext value is ever stored,
-- whatever path writes a spec; the sealed form; keys and their rotation.
-- K1 is tests/data/secrets/key.pem's public key, K2 another test key.
begin;
select plan(32);

create temp table k (name text primary key, packets bytea);
insert into k values
  ('K1', '\xc6c0cd0400000000010c00a89a1ff6a0ded5ba2557a67427ff7ec3195fc7deebbe3b6d32cb27f959207275459ca065328c5bf5d1b88004c6377a6628ab9a84e79b8c71619abaffdfa6cf2c0f3942d8e091261bc8629e872ce8f7bc361dababd1f4c76e9eb4ff2e1efa22d7c92e8f9894a1bdf91af6b6e2de6b936422f71c505e22f12381d94d3e13a3aa9d8f1663f9038d8ee3b2c0264307e17ceb5e5417b2cdc44cef6f942c6446ef2039445d0181dfbf3850d0c3e2f76c84dafc2949c7e512d8e3dc3bc608ec17be7823489b6efe4a4f82ccd09a9dbccf6e6c101114fe876169e138d8131e57300a38c6c188e2ef28d4b4f2e320270f0df25ed59d680b6fc69efda79c9b5cc8350e2dd144008e8e2300e8b653882af566ff4bd4571a71ae9b4a253d2e8116132c7ecf413e9855dfc790afc9b380c94f8ea5e1a1020caf5d9c58ea7980f816ba95bc1473286fbc8d3c1e465765b2ed2f4ba51ae966767d6b7d12d7724e26262bc70d70d002e811928ffa10d78c13c0250c8ff8cd42f6a71d737ecc7df0a5b44590006f7d0011010001cec0cd0400000000010c00a89a1ff6a0ded5ba2557a67427ff7ec3195fc7deebbe3b6d32cb27f959207275459ca065328c5bf5d1b88004c6377a6628ab9a84e79b8c71619abaffdfa6cf2c0f3942d8e091261bc8629e872ce8f7bc361dababd1f4c76e9eb4ff2e1efa22d7c92e8f9894a1bdf91af6b6e2de6b936422f71c505e22f12381d94d3e13a3aa9d8f1663f9038d8ee3b2c0264307e17ceb5e5417b2cdc44cef6f942c6446ef2039445d0181dfbf3850d0c3e2f76c84dafc2949c7e512d8e3dc3bc608ec17be7823489b6efe4a4f82ccd09a9dbccf6e6c101114fe876169e138d8131e57300a38c6c188e2ef28d4b4f2e320270f0df25ed59d680b6fc69efda79c9b5cc8350e2dd144008e8e2300e8b653882af566ff4bd4571a71ae9b4a253d2e8116132c7ecf413e9855dfc790afc9b380c94f8ea5e1a1020caf5d9c58ea7980f816ba95bc1473286fbc8d3c1e465765b2ed2f4ba51ae966767d6b7d12d7724e26262bc70d70d002e811928ffa10d78c13c0250c8ff8cd42f6a71d737ecc7df0a5b44590006f7d0011010001'),
  ('K2', '\xc6c0cd0400000000010c00e9c6a2cdc0562cd4a4090468f96c39ce678e2ce2970a99ceb60a68cc9f54602ee3d1f60037965c452cb4b2d934142a9f9ac032bf1b54cb7d3b4d42110839139eb173fb666383d9a2e8c7dde519eec4a947d8042fa6ab006ccc5cc0a022a35d86a6c76b9f10262d83c47d54aca31ecee7fadbc8bac524698136138834aaca93938a0c3da227822dab8736aef4315fa05e89561133d0bb7b51b0e28dab5f7f5077f5aa77d7afdbbaaff0f6ab96976d04a67e8ae6114ca669c001c9272ce467ddebd54c65055de60a6b0dc0e2a030cd39c32b1f2624991c05e2150fb673250406bd0a6095062f5a68d2acb4f44e9ef5761acfedbfc3e35a220b96e4149c9763fec0977148c9a9ce28929dae50a5cabbdbc871fe779cbd7c600b52d9c8f8eb045355e0cea65c6d27de41670fdc2f24e5b58d5f9a071830b85bf4d85c3ec74cb92ca7043a5a9eda92ea0c9f3e64e5a8329fd6599b7bcad705ca6572145a679b12c5bdfc73f84052069ada9bada6a1ce2a50567661fc399e855a7232598c062746b1a70011010001cec0cd0400000000010c00e9c6a2cdc0562cd4a4090468f96c39ce678e2ce2970a99ceb60a68cc9f54602ee3d1f60037965c452cb4b2d934142a9f9ac032bf1b54cb7d3b4d42110839139eb173fb666383d9a2e8c7dde519eec4a947d8042fa6ab006ccc5cc0a022a35d86a6c76b9f10262d83c47d54aca31ecee7fadbc8bac524698136138834aaca93938a0c3da227822dab8736aef4315fa05e89561133d0bb7b51b0e28dab5f7f5077f5aa77d7afdbbaaff0f6ab96976d04a67e8ae6114ca669c001c9272ce467ddebd54c65055de60a6b0dc0e2a030cd39c32b1f2624991c05e2150fb673250406bd0a6095062f5a68d2acb4f44e9ef5761acfedbfc3e35a220b96e4149c9763fec0977148c9a9ce28929dae50a5cabbdbc871fe779cbd7c600b52d9c8f8eb045355e0cea65c6d27de41670fdc2f24e5b58d5f9a071830b85bf4d85c3ec74cb92ca7043a5a9eda92ea0c9f3e64e5a8329fd6599b7bcad705ca6572145a679b12c5bdfc73f84052069ada9bada6a1ce2a50567661fc399e855a7232598c062746b1a70011010001');
grant select on k to public;

select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"API_KEY":"hunter2-plain"}}')$$,
                 '22023', 'BAD_SPEC: secrets: no workers'' public key is registered; run boxcar secrets keygen',
                 'no key registered: BAD_SPEC naming the fix');
select is(boxcar.secret_key_add((select packets from k where name = 'K1')), '5e3440960b06c7f9',
          'secret_key_add returns the key id pgcrypto reads from the packets');

select boxcar.enqueue('default', '{"command":["true"],"secrets":{"API_KEY":"hunter2-plain"}}') as a \gset
select ok((select spec::text not like '%hunter2-plain%' from boxcar.jobs where id = :'a'),
          'the stored spec does not hold the plaintext');
select is((select spec #>> '{secrets,API_KEY,key}' from boxcar.jobs where id = :'a'), '5e3440960b06c7f9',
          'the sealed value names its key');
select is((select boxcar_pgcrypto.pgp_key_id(decode(spec #>> '{secrets,API_KEY,sealed}', 'base64')) from boxcar.jobs where id = :'a'),
          '5E3440960B06C7F9', 'the sealed value is an OpenPGP message to that key');
select is((select array(select jsonb_object_keys(spec -> 'secrets' -> 'API_KEY') order by 1) from boxcar.jobs where id = :'a'),
          array['key', 'sealed'], 'the sealed form is {"sealed", "key"}');
select ok(not exists (select from boxcar.jobs where spec::text like '%hunter2%')
          and not exists (select from boxcar.job_events where details::text like '%hunter2%'),
          'no job or event holds the plaintext');
select is(boxcar.job_json(:'a') #> '{spec,secrets}', '{"API_KEY": "(sealed)"}',
          'job_json (status, the dashboard) shows secrets by name only');

-- A direct insert, around enqueue, is sealed as well.
insert into boxcar.jobs (queue, spec) values ('default', '{"command":["true"],"secrets":{"T":"hunter2-direct"}}');
select ok(not exists (select from boxcar.jobs where spec::text like '%hunter2-direct%'),
          'a row inserted directly is sealed too');
update boxcar.jobs set spec = '{"command":["true"],"secrets":{"T":"hunter2-update"}}' where id = :'a';
select ok(not exists (select from boxcar.jobs where spec::text like '%hunter2-update%'),
          'an update of the spec is sealed too');

-- Idempotent enqueue: the same request is the same job, though each
-- sealing differs.
select is(boxcar.enqueue('default', '{"command":["true"],"secrets":{"X":"hunter2-idem"}}', idempotency_key => 'k1'),
          boxcar.enqueue('default', '{"command":["true"],"secrets":{"X":"hunter2-idem"}}', idempotency_key => 'k1'),
          'a repeated idempotent enqueue with secrets gets the same job');

-- The shape.
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"1X":"v"}}')$$,
                 '22023', 'BAD_SPEC: secrets.1X: not a valid variable name', 'a bad name');
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"BOXCAR_JOB_ID":"v"}}')$$,
                 '22023', 'BAD_SPEC: secrets.BOXCAR_JOB_ID: BOXCAR_* names are reserved', 'a reserved name');
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"env":{"K":"a"},"secrets":{"K":"v"}}')$$,
                 '22023', 'BAD_SPEC: secrets.K: also set in env', 'a name env sets too');
select throws_ok(format($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"K":"%s"}}')$$, repeat('x', 65537)),
                 '22023', 'BAD_SPEC: secrets.K: longer than 65536 bytes', 'a value over 64 KiB');
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"K":1}}')$$,
                 '22023', 'BAD_SPEC: secrets.K: must be a string or {"sealed": "<base64 OpenPGP message>"}', 'a number');
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"A":"fine","from":{"ses":"a/b"}}}')$$,
                 '22023', 'BAD_SPEC: secrets.from: must be a string or {"sealed": "<base64 OpenPGP message>"}',
                 'a bad value after a good one');
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":["K"]}')$$,
                 '22023', 'BAD_SPEC: secrets: must be an object of names to values', 'not an object');
select throws_ok($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"K":{"sealed":"AAAA"}}}')$$,
                 '22023', 'BAD_SPEC: secrets.K: "sealed" is not an OpenPGP message sealed to a public key',
                 'a sealed value that is no OpenPGP message');

-- Client-side sealing: a value sealed with a registered key is kept as is,
-- its key read from the message (a "key" the client gives is not trusted).
select boxcar.enqueue('default', jsonb_build_object('command', '["true"]'::jsonb, 'secrets', jsonb_build_object('C',
         jsonb_build_object('sealed', encode(boxcar_pgcrypto.pgp_pub_encrypt('hunter2-client', (select packets from k where name = 'K1')), 'base64'),
                            'key', 'ffffffffffffffff')))) as c \gset
select is((select spec #>> '{secrets,C,key}' from boxcar.jobs where id = :'c'), '5e3440960b06c7f9',
          'a client-sealed value keeps the key id its message names');

-- Schedules store secrets sealed, and the jobs they enqueue carry them.
select boxcar.schedule_add('s', '* * * * *', 'default', '{"command":["true"],"secrets":{"S":"hunter2-sched"}}');
select ok(not exists (select from boxcar.schedules where spec::text like '%hunter2-sched%'),
          'a schedule holds its secrets sealed');
select is(boxcar.schedule_ls() #> '{spec,secrets}', '{"S": "(sealed)"}', 'schedule_ls shows names only');
update boxcar.schedules set next_run_at = now() - interval '1 minute' where name = 's';
select is(boxcar.schedule_tick(), 1, 'the schedule''s run is enqueued');
select is((select j.spec -> 'secrets' from boxcar.jobs j, boxcar.schedules s
            where s.name = 's' and j.id = s.last_job_id),
          (select spec -> 'secrets' from boxcar.schedules where name = 's'),
          'its job carries the schedule''s sealed value as it is');

-- Rotation: K2 becomes the sealing key; K1 cannot retire while a queued
-- job or a schedule holds a value sealed with it.
select is(boxcar.secret_key_add((select packets from k where name = 'K2')), '6a2e08d4c3d3f928', 'K2 registered');
select boxcar.enqueue('default', '{"command":["true"],"secrets":{"B":"hunter2-b"}}') as b \gset
select is((select spec #>> '{secrets,B,key}' from boxcar.jobs where id = :'b'), '6a2e08d4c3d3f928',
          'the newest active key seals');
select throws_like($$select boxcar.secret_key_retire('5e3440960b06c7f9')$$,
                   '%still sealing 5 queued or running job(s) and 1 schedule(s)%',
                   'K1 does not retire while jobs and a schedule hold values sealed with it');
update boxcar.jobs set status = 'cancelled', finished_at = now()
 where spec #>> '{secrets,B,key}' is distinct from '6a2e08d4c3d3f928' and status = 'queued';
select boxcar.schedule_rm('s');
select lives_ok($$select boxcar.secret_key_retire('5e3440960b06c7f9')$$, 'K1 retires once nothing holds it');
select is((select state from boxcar.secret_keys where key_id = '5e3440960b06c7f9'), 'retired', 'K1 is retired');
select throws_like(format($$select boxcar.enqueue('default', '{"command":["true"],"secrets":{"C":{"sealed":"%s"}}}')$$,
                          translate(encode(boxcar_pgcrypto.pgp_pub_encrypt('v', (select packets from k where name = 'K1')), 'base64'), E'\n', '')),
                   '%sealed with key 5e3440960b06c7f9, which is not an active key%',
                   'a value sealed with a retired key is refused');
select throws_like($$select boxcar.secret_key_add((select packets from k where name = 'K1'))$$,
                   '%was retired%', 'a retired key does not come back');

-- A retried job keeps its sealed value as it was.
update boxcar.jobs set status = 'failed', finished_at = now() where id = :'b';
select spec #>> '{secrets,B,sealed}' as before from boxcar.jobs where id = :'b' \gset
select boxcar.retry(:'b', 'test');
select is((select spec #>> '{secrets,B,sealed}' from boxcar.jobs where id = :'b'), :'before',
          'a retried job keeps its sealed value');

select * from finish();
rollback;
