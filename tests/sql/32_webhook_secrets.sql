-- Webhook secrets per scope and per endpoint (issue 48,
-- sql/62_webhook_secrets.sql): generations, rotation with an overlap, the
-- per-endpoint secrets, and what the delivery claim hands the signer.
-- now() is fixed in a transaction: time passing is an update of valid_until.
begin;
select plan(44);
set local client_min_messages = warning;

create function pg_temp.gens(scope text, url text default '') returns text language sql as $$
    select coalesce(string_agg(case when g.endpoint = '' then 's' else 'e' end || g.generation
                               || case when g.valid_until is null then '' else '~' end, ' '), '')
      from boxcar.webhook_signing_generations(scope, url) g
$$;
create function pg_temp.until(scope text, endpoint text, gen int) returns interval language sql as $$
    select g.valid_until - now() from boxcar.webhook_secret_generations g
     where g.scope = $1 and g.endpoint = $2 and g.generation = $3
$$;

select has_table('boxcar', 'webhook_secret_generations', 'the generations table exists');
select col_is_pk('boxcar', 'webhook_secret_generations', array['scope', 'endpoint', 'generation'],
                 'keyed by scope, endpoint and generation');

-- A scope never rotated: generation 1, scope-wide, valid, no row.
select is(pg_temp.gens('a'), 's1', 'a scope never rotated signs with its implicit generation 1');
select is(pg_temp.gens('a', 'https://a.example/h'), 's1', 'for every endpoint of it');
select is((select count(*)::int from boxcar.webhook_secret_generations), 0, 'without a row');

-- Rotation with the default overlap.
select is(boxcar.rotate_webhook_secret('a'), 2, 'the first rotation adds generation 2');
select is(pg_temp.gens('a'), 's2 s1~', 'both sign during the overlap, newest first');
select is(pg_temp.until('a', '', 1), interval '24 hours', 'the old one ends after 24 hours by default');
select is(pg_temp.until('a', '', 2), null, 'the new one has no end');
select is(pg_temp.gens('b'), 's1', 'another scope is untouched');

-- The overlap ends: only the new one.
update boxcar.webhook_secret_generations set valid_until = now() where scope = 'a' and generation = 1;
select is(pg_temp.gens('a'), 's2', 'once the overlap has passed only the new generation signs');

-- overlap 0 revokes at once; an expired generation stays expired.
select is(boxcar.rotate_webhook_secret('a', overlap => '0'), 3, 'rotation with overlap 0');
select is(pg_temp.gens('a'), 's3', 'revokes the previous generation at once');
select is(boxcar.rotate_webhook_secret('a', '', '10 days'), 4, 'rotation with a long overlap');
select is(pg_temp.gens('a'), 's4 s3~', 'does not bring back an expired generation');
select is(pg_temp.until('a', '', 3), interval '10 days', 'and ends the valid one after the overlap');
select is(boxcar.rotate_webhook_secret('a', '', '1 hour'), 5, 'a rotation with a shorter overlap');
select is(pg_temp.until('a', '', 3), interval '1 hour', 'brings every valid generation''s end nearer');
select is(boxcar.rotate_webhook_secret('a', '', '1 day'), 6, 'a rotation with a longer overlap');
select is(pg_temp.until('a', '', 3), interval '1 hour', 'never pushes an end further');
select is(pg_temp.gens('a'), 's6 s5~ s4~ s3~', 'four valid generations');
select throws_ok($$select boxcar.rotate_webhook_secret('a', '', '1 day')$$, '54000', null,
                 'a fifth valid generation is refused');

-- Per endpoint.
select is(boxcar.rotate_webhook_secret('b', 'https://b.example/one'), 1,
          'the first rotation of an endpoint gives it generation 1');
select is(pg_temp.gens('b', 'https://b.example/one'), 'e1 s1~',
          'its deliveries carry its own and, for the overlap, the scope''s secret');
select is(pg_temp.gens('b', 'https://b.example/two'), 's1', 'other endpoints keep the scope''s');
select is(pg_temp.gens('c', 'https://b.example/one'), 's1', 'the same URL in another scope too');
select is(pg_temp.gens('b'), 's1', 'the scope-wide secret is unchanged');
select is(boxcar.rotate_webhook_secret('b'), 2, 'rotating the scope');
select is(pg_temp.gens('b', 'https://b.example/one'), 'e1 s2~ s1~',
          'during the endpoint''s overlap its deliveries follow the scope''s rotation');
update boxcar.webhook_secret_generations set valid_until = now()
 where scope = 'b' and endpoint = 'https://b.example/one' and generation = 0;
select is(pg_temp.gens('b', 'https://b.example/one'), 'e1',
          'after the endpoint''s overlap only its own secret signs');
select is(boxcar.rotate_webhook_secret('b', 'https://b.example/one', '0'), 2, 'rotating the endpoint again');
select is(pg_temp.gens('b', 'https://b.example/one'), 'e2', 'with overlap 0: only the new one');
select is(boxcar.rotate_webhook_secret('c', 'https://c.example/h', '0'), 1,
          'a first endpoint rotation with overlap 0');
select is(pg_temp.gens('c', 'https://c.example/h'), 'e1', 'drops the scope''s secret for it at once');

-- Bad input names the problem.
select throws_like($$select boxcar.rotate_webhook_secret('a/b')$$, '%scope must be a queue scope%',
                   'a queue name is not a scope');
select throws_ok($$select boxcar.rotate_webhook_secret('..')$$, '22023', null, 'nor is ..');
select throws_like($$select boxcar.rotate_webhook_secret('a', 'ftp://a.example/')$$,
                   '%endpoint must be the delivery URL%', 'an endpoint is an http(s) URL');
select throws_like($$select boxcar.rotate_webhook_secret('a', '', '-1 second')$$,
                   '%overlap must be from 0 to 365 days%', 'a negative overlap is refused');

-- What the delivery claim hands the signer: the job's scope and generations.
create temp table j as
select boxcar.enqueue('d/q', '{"command":["x"]}', webhook_url => 'https://d.example/h') as id;
select count(*) from boxcar.claim('w1', array['d/q'], 1);
select boxcar.complete((select id from j), 'w1', 'succeeded', '{"exit_code":0}', null);
select is((select scope || ' ' || scope_generations::text || ' ' || endpoint_generations::text
             from boxcar.claim_signed_deliveries('w1', 10)), 'd {1} {}',
          'a claimed delivery comes with its job''s scope and that scope''s generation');
select boxcar.rotate_webhook_secret('d');
select boxcar.rotate_webhook_secret('d', 'https://d.example/h');
update boxcar.webhook_deliveries set lease_expires_at = null;
select is((select scope || ' ' || scope_generations::text || ' ' || endpoint_generations::text
             from boxcar.claim_signed_deliveries('w1', 10)), 'd {2,1} {1}',
          'rotations count from the next claim, the endpoint''s own secret included');
select is((select string_agg(key_endpoint || '#' || generation, ' ')
             from boxcar.webhook_secret_list('d', 'https://d.example/h')),
          'https://d.example/h#1 #2 #1', 'webhook_secret_list lists what signs an endpoint');
select throws_ok($$select * from boxcar.webhook_secret_list('')$$, '22023', null,
                 'webhook_secret_list checks the scope');

-- The claim finds each delivery's job by its primary key, never by reading
-- the jobs table (joined, it was a hash join over every job).
insert into boxcar.jobs (queue, spec, status, finished_at)
select 'd/q', '{"command":["x"]}', 'succeeded', now() from generate_series(1, 3000);
update boxcar.webhook_deliveries set lease_expires_at = null;
create temp table before as
select seq_scan as n from pg_stat_xact_user_tables where relid = 'boxcar.jobs'::regclass;
select is((select count(*)::int from boxcar.claim_signed_deliveries('w1', 10)), 1,
          'a due delivery among 3,000 more jobs is claimed');
select is((select seq_scan from pg_stat_xact_user_tables where relid = 'boxcar.jobs'::regclass)
          - (select n from before), 0::bigint, 'without a sequential scan of the jobs table');

select * from finish();
rollback;
