begin;
select plan(28);

select isa_ok(boxcar.enqueue(queue => 'default', spec => '{"command":["echo","hi"]}'), 'uuid',
              'enqueue with named arguments and defaults returns a uuid');
select is((select status from boxcar.jobs order by created_at desc limit 1), 'queued', 'a new job is queued');
select is((select max_attempts from boxcar.jobs order by created_at desc limit 1), 3, 'max_attempts defaults to 3');

select throws_ok($$select boxcar.enqueue('default', '[1,2]')$$, '22023',
                 'BAD_SPEC: spec: must be a JSON object', 'a spec that is not an object is rejected');
select throws_ok($$select boxcar.enqueue('default', '"echo hi"')$$, '22023',
                 'BAD_SPEC: spec: must be a JSON object', 'a string spec is rejected');
select throws_ok($$select boxcar.enqueue('default', '{"env":{}}')$$, '22023',
                 'BAD_SPEC: command: one of command, script, code or files is required',
                 'a spec without a command is rejected');
select throws_ok($$select boxcar.enqueue('default', '{"command":"echo hi"}')$$, '22023',
                 'BAD_SPEC: command: must be a non-empty array of strings', 'command must be an array');
select throws_ok($$select boxcar.enqueue('default', '{"command":["echo", 3]}')$$, '22023',
                 'BAD_SPEC: command[1]: must be a string', 'the bad element is named');
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"], "colour": 1}')$$, '22023',
                 'BAD_SPEC: colour: unknown field', 'unknown fields are rejected');
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"], "limits": {"pids": 0}}')$$, '22023',
                 'BAD_SPEC: limits.pids: must be between 1 and 65536', 'limits are range-checked');
select throws_ok($$select boxcar.enqueue('bad queue!', '{"command":["x"]}')$$, '22023', null,
                 'a bad queue name is rejected');
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"]}', max_attempts => 0)$$, '22023',
                 'max_attempts: must be between 1 and 100', 'max_attempts is range-checked');

-- Egress allow-lists (the malformed ones are in tests/data/bad_specs.tsv).
select is(boxcar.spec_error('{"command":["x"], "network": {"allow": ["pypi.org:443",
          "*.githubusercontent.com:443", "10.2.0.0/16:5432", "10.2.0.5:5432", "localhost:80",
          "0.0.0.0/0:65535"]}}'), null, 'network allow-lists of names, wildcards and CIDRs are accepted');
select is(boxcar.spec_error(jsonb_build_object('command', '["x"]'::jsonb, 'network',
          jsonb_build_object('allow', jsonb_build_array(rpad('', 252, 'a.') || 'a:1')))), null,
          'a 253-character name is accepted');
select is(boxcar.spec_error(jsonb_build_object('command', '["x"]'::jsonb, 'network',
          jsonb_build_object('allow', jsonb_build_array(rpad('', 254, 'a.') || 'a:1')))),
          'network.allow[0]: must be "name:port", "*.name:port" or "a.b.c.d/bits:port"',
          'a 255-character name is not');
select is(boxcar.spec_error('{"command":["x"], "network": "host"}'), null, '"host" is still accepted');

-- Idempotency keys
select is(boxcar.enqueue('default', '{"command":["a"]}', idempotency_key => 'order-42'),
          boxcar.enqueue('default', '{"command":["a"]}', idempotency_key => 'order-42'),
          'the same request under an existing idempotency key returns the existing job id');
select throws_ok($$select boxcar.enqueue('default', '{"command":["b"]}', idempotency_key => 'order-42')$$,
                 '23505',
                 format('idempotency_key: already used by job %s with a different spec',
                        (select id from boxcar.jobs where idempotency_key = 'order-42')),
                 'a different spec under an existing key is an error naming the existing job');
select throws_ok($$select boxcar.enqueue('other', '{"command":["a"]}', idempotency_key => 'order-42')$$,
                 '23505', null, 'so is a different queue');
select throws_ok($$select boxcar.enqueue('default', '{"command":["a"]}', priority => 3,
                                         idempotency_key => 'order-42')$$,
                 '23505', null, 'or a different priority');
select throws_ok($$select boxcar.enqueue('default', '{"command":["a"]}', webhook_url => 'https://x.example/h',
                                         idempotency_key => 'order-42')$$,
                 '23505', null, 'or a different webhook_url');
select is((select count(*)::int from boxcar.jobs where idempotency_key = 'order-42'), 1,
          'only one job exists for the key');
select is((select spec from boxcar.jobs where idempotency_key = 'order-42'), '{"command":["a"]}'::jsonb,
          'the first spec is kept');
select throws_ok($$select boxcar.enqueue('default', '{"command":["a"]}', idempotency_key => '')$$,
                 '22023', 'idempotency_key: must be 1 to 256 characters',
                 'an empty idempotency key is a clear parameter error');
select throws_ok($$select boxcar.enqueue('default', '{"command":["a"]}', idempotency_key => repeat('k', 257))$$,
                 '22023', 'idempotency_key: must be 1 to 256 characters',
                 'so is one longer than 256 characters (not a constraint violation)');
select lives_ok($$select boxcar.enqueue('idem', '{"command":["a"]}', idempotency_key => repeat('k', 256))$$,
                'a key of 256 characters is accepted');

select ok(boxcar.enqueue('scope/name', '{"command":["x"]}', priority => 5,
                         run_at => now() + interval '1 hour') is not null,
          'scoped queue names, priority and run_at are accepted');
select is((select queued::int from boxcar.queue_stats where queue = 'default'), 2,
          'queue_stats counts due queued jobs');

select * from finish();
rollback;
