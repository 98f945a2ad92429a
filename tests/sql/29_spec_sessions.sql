-- The session fields of the spec (session, stdin, files) in
-- boxcar.spec_error: valid specs at each rule's edge, and the limits too
-- long for a row of tests/data/bad_specs.tsv (which holds the malformed
-- ones, checked word for word by 90_spec_corpus and the C unit test).
begin;
select plan(32);

create function pg_temp.verdict(spec jsonb) returns text language sql as $$
    select coalesce(boxcar.spec_error(spec), 'valid')
$$;
create function pg_temp.files(ops jsonb) returns jsonb language sql as $$
    select jsonb_build_object('session', '{"id": "s"}'::jsonb, 'files', ops)
$$;
create function pg_temp.write64(content text) returns jsonb language sql as $$
    select pg_temp.files(jsonb_build_array(jsonb_build_object(
        'op', 'write', 'path', 'f', 'content', content, 'encoding', 'base64')))
$$;

-- session
select is(pg_temp.verdict('{"session": {"id": "chat-42"}, "command": ["x"]}'), 'valid',
          'a session with only an id');
select is(pg_temp.verdict(jsonb_build_object('session', jsonb_build_object('id', 'A0_.-' || repeat('a', 115)),
                                             'command', '["x"]'::jsonb)), 'valid',
          'a 120-character session id of every allowed kind');
select is(pg_temp.verdict('{"session": {"id": "s", "idle_timeout_s": 1}, "command": ["x"]}'), 'valid',
          'idle_timeout_s 1');
select is(pg_temp.verdict('{"session": {"id": "s", "idle_timeout_s": 86400}, "command": ["x"]}'), 'valid',
          'idle_timeout_s 86400');
select is(pg_temp.verdict('{"session": {"id": "s", "idle_timeout_s": 90.5, "from": {"session": "t"}}, "command": ["x"]}'),
          'valid', 'a fork without a version (latest)');
select is(pg_temp.verdict('{"session": {"id": "s", "from": {"session": "t", "version": "latest"}}, "command": ["x"]}'),
          'valid', 'a fork of the latest checkpoint');
select is(pg_temp.verdict(('{"session": {"id": "s", "from": {"session": "t", "version": "' || repeat('0a', 32)
                           || '"}}, "command": ["x"]}')::jsonb), 'valid', 'a fork of a given checkpoint');
select is(pg_temp.verdict('{"session": {"id": "s"}, "code": {"language": "bash", "source": "main() { :; }"}}'),
          'valid', 'bash code in a session');
select is(pg_temp.verdict('{"session": {"id": "s"}, "code": {"language": "python", "source": "def main(): pass"}}'),
          'valid', 'python code in a session');

-- artifact
select is(pg_temp.verdict('{"session": {"id": "s"}, "script": "true", "artifact": {"storage": "session-s", "base": "empty"}}'),
          'valid', 'a session job may name its own storage');
select is(pg_temp.verdict('{"command": ["x"], "artifact": {"storage": "my-session-1"}}'), 'valid',
          'a plain job''s storage may contain "session-" past its start');
select is(pg_temp.verdict('{"command": ["x"], "artifact": {"storage": "Session-1"}}'), 'valid',
          'the "session-" prefix is case-sensitive, as in the worker');

-- stdin
select is(pg_temp.verdict('{"session": {"id": "s"}, "command": ["cat"], "stdin": ""}'), 'valid', 'an empty stdin');
select is(pg_temp.verdict(jsonb_build_object('session', '{"id": "s"}'::jsonb, 'command', '["cat"]'::jsonb,
                                             'stdin', repeat('x', 1048576))), 'valid',
          'a stdin of 1048576 bytes');
select is(pg_temp.verdict(jsonb_build_object('session', '{"id": "s"}'::jsonb, 'command', '["cat"]'::jsonb,
                                             'stdin', repeat('x', 1048575) || 'é')),
          'stdin: longer than 1048576 bytes', 'stdin counts bytes: 1048575 characters, 1048577 bytes');

-- files
select is(pg_temp.verdict(pg_temp.files(
    '[{"op": "write", "path": "notes/a.txt", "content": "hé"},
      {"op": "write", "path": "/workspace/b.bin", "content": "AP8=", "encoding": "base64", "parents": true},
      {"op": "write", "path": "c", "content": "", "encoding": "utf-8", "parents": false},
      {"op": "read", "path": "notes/a.txt"}, {"op": "list", "path": "."}, {"op": "stat", "path": "a b"},
      {"op": "mkdir", "path": "x/y", "parents": true}, {"op": "remove", "path": "x", "recursive": true},
      {"op": "move", "path": "b.bin", "to": "../c.bin"}]')), 'valid', 'every op with every field it takes');
select is(pg_temp.verdict(pg_temp.files((select jsonb_agg('{"op": "stat", "path": "a"}'::jsonb)
                                           from generate_series(1, 1000)))), 'valid', '1000 operations');
select is(pg_temp.verdict(pg_temp.files((select jsonb_agg('{"op": "stat", "path": "a"}'::jsonb)
                                           from generate_series(1, 1001)))),
          'files: must be an array of 1 to 1000 operations', '1001 operations');
select is(pg_temp.verdict(pg_temp.files(jsonb_build_array(jsonb_build_object('op', 'stat', 'path', repeat('é', 2048))))),
          'valid', 'a path of 4096 bytes in 2048 characters');
select is(pg_temp.verdict(pg_temp.files(jsonb_build_array(jsonb_build_object('op', 'stat', 'path', repeat('é', 2048) || 'a')))),
          'files[0].path: must be a non-empty path of at most 4096 bytes', 'paths count bytes');
select is(pg_temp.verdict(pg_temp.files(jsonb_build_array(jsonb_build_object('op', 'move', 'path', 'a', 'to', repeat('é', 2049))))),
          'files[0].to: must be a non-empty path of at most 4096 bytes', 'so do move targets');

-- base64: whitespace skipped, padding only at the end (the worker's
-- decoder takes exactly these: tests/unit/worker/spec/test_spec.c).
select is(pg_temp.verdict(pg_temp.write64(c)), 'valid', 'base64 ' || to_json(c)::text)
  from unnest(array['', 'QQ==', 'QUI=', 'QUJDRA==', E' Q U\nJ D\r\n\tRA = = \n', 'QR==']) c;
select is(pg_temp.verdict(pg_temp.write64('QQ=A')), 'files[0].content: not valid base64',
          'a symbol after the padding is refused (PostgreSQL''s decode() would take it)');
select is(octet_length(decode('QQ=A', 'base64')), 1, 'decode() does take QQ=A: the rule is the validators'' own');
-- A large base64 content is checked in reasonable time.
select is(pg_temp.verdict(pg_temp.write64(repeat('QUJD', 1000000))), 'valid',
          '4000000 bytes of base64, 3000000 decoded');

-- enqueue takes them.
select isa_ok(boxcar.enqueue('default', '{"session": {"id": "s"}, "command": ["cat"], "stdin": "hi"}'), 'uuid',
              'enqueue takes a session job');
select isa_ok(boxcar.enqueue('default', '{"session": {"id": "s"}, "files": [{"op": "list", "path": "."}]}'), 'uuid',
              'enqueue takes a files job');

select * from finish();
rollback;
