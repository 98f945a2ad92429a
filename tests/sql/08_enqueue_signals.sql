-- Issue 18, "cleaner signals": run_at, queue names, env keys for the loader.
begin;
select plan(17);

select throws_ok($$select boxcar.enqueue('default', '{"command":["x"]}', run_at => 'infinity')$$,
                 '22023', 'run_at: must be a finite time within 10 years of now', 'run_at infinity is refused');
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"]}', run_at => '-infinity')$$,
                 '22023', 'run_at: must be a finite time within 10 years of now', 'run_at -infinity is refused');
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"]}', run_at => now() + interval '10 years 1 day')$$,
                 '22023', 'run_at: must be a finite time within 10 years of now', 'run_at more than 10 years ahead is refused');
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"]}', run_at => now() - interval '10 years 1 day')$$,
                 '22023', 'run_at: must be a finite time within 10 years of now', 'run_at more than 10 years ago is refused');
select lives_ok($$select boxcar.enqueue('default', '{"command":["x"]}', run_at => now() + interval '9 years')$$,
                'run_at 9 years ahead is accepted');
select lives_ok($$select boxcar.enqueue('default', '{"command":["x"]}', run_at => now() - interval '1 hour')$$,
                'run_at in the recent past is accepted');

select throws_ok($$select boxcar.enqueue('../x', '{"command":["x"]}')$$, '22023',
                 'queue: must be "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128, not "." or "..")',
                 'queue ../x is refused');
select throws_ok($$select boxcar.enqueue('..', '{"command":["x"]}')$$, '22023', null, 'queue .. is refused');
select throws_ok($$select boxcar.enqueue('.', '{"command":["x"]}')$$, '22023', null, 'queue . is refused');
select throws_ok($$select boxcar.enqueue('a/.', '{"command":["x"]}')$$, '22023', null, 'queue a/. is refused');
select lives_ok($$select boxcar.enqueue('.a/b..', '{"command":["x"]}')$$, 'dots inside a name are fine');

-- Around the API, the table refuses them too.
select throws_ok($$insert into boxcar.jobs (queue, spec) values ('../x', '{"command":["x"]}')$$, '23514', null,
                 'a raw row with queue ../x violates the table check');
select throws_ok($$insert into boxcar.jobs (queue, spec, run_at) values ('q', '{"command":["x"]}', 'infinity')$$,
                 '23514', null, 'a raw row with run_at infinity violates the table check');

-- Loader and runtime variables are allowed (README, job spec: they reach
-- only the job's own sandboxed processes).
select lives_ok($$select boxcar.enqueue('default', '{"command":["x"], "env": {"LD_PRELOAD": "/workspace/x.so",
                  "LD_LIBRARY_PATH": "/workspace/lib", "PYTHONPATH": "/workspace", "NODE_OPTIONS": "--max-old-space-size=64"}}')$$,
                'env LD_PRELOAD, LD_LIBRARY_PATH, PYTHONPATH, NODE_OPTIONS are accepted');

-- Control characters in paths (also in tests/data/bad_specs.tsv).
select throws_ok($$select boxcar.enqueue('default', '{"command":["x"], "workdir": "/workspace/a\u0001"}')$$, '22023',
                 'BAD_SPEC: workdir: must not contain control characters', 'a workdir with a control character is refused');
select lives_ok($$select boxcar.enqueue('default', '{"command":["x"], "workdir": "/workspace/é ü"}')$$,
                'non-ASCII letters and spaces in a path are fine');
select is((select count(*)::int from boxcar.jobs where queue in ('../x', '..', '.', 'a/.') or not isfinite(run_at)), 0,
          'no refused job was stored');

select * from finish();
rollback;
