begin;
select plan(23);

select is(boxcar.queue_config('lim', 2, null) ->> 'max_running', '2', 'queue_config sets max_running');
select throws_like($$select boxcar.queue_config('lim', 0, null)$$, '%max_running%', 'max_running 0 refused');
select throws_like($$select boxcar.queue_config('lim', null, 0)$$, '%rate_per_s%', 'rate 0 refused');
select throws_like($$select boxcar.queue_config('lim', null, 'NaN')$$, '%rate_per_s%', 'rate NaN refused');
select throws_like($$select boxcar.queue_config('a/../b', 1, null)$$, '%queue%', 'a bad queue name refused');

-- max_running counts running jobs of every worker.
select boxcar.enqueue('lim', '{"command":["true"]}') from generate_series(1, 6);
select is((select count(*)::int from boxcar.claim('w1', '{lim}', 5)), 2, 'no more than max_running at once');
select is((select count(*)::int from boxcar.claim('w2', '{lim}', 5)), 0, 'another worker gets none');
select boxcar.complete(id, 'w1', 'succeeded') from boxcar.jobs where queue = 'lim' and status = 'running'
 order by id limit 1;
select is((select count(*)::int from boxcar.claim('w2', '{lim}', 5)), 1, 'a finished job frees one place');
select boxcar.queue_config('lim', null, null);
select is((select count(*)::int from boxcar.queue_config where queue = 'lim'), 0,
          'no limit left: the row goes (the fast path again)');
select is((select count(*)::int from boxcar.claim('w2', '{lim}', 5)), 3, 'unlimited again');
-- A limit left out is removed, as the README says (named arguments).
select is(boxcar.queue_config('opt', rate_per_s => 5) - 'updated_at',
          '{"queue": "opt", "max_running": null, "rate_per_s": 5, "paused": false}'::jsonb,
          'queue_config without max_running: none');
select is(boxcar.queue_config('opt') ->> 'rate_per_s', null, 'queue_config(queue) alone: no rate');
select is((select count(*)::int from boxcar.queue_config where queue = 'opt'), 0,
          'and the row goes: both limits removed');

-- Rate: bursts of max(1, rate / 10).
select boxcar.queue_config('slow', null, 0.5);
select boxcar.enqueue('slow', '{"command":["true"]}') from generate_series(1, 5);
select is((select count(*)::int from boxcar.claim('w1', '{slow}', 5)), 1, 'a burst of one at 0.5/s');
select is((select count(*)::int from boxcar.claim('w1', '{slow}', 5)), 0, 'then nothing until the next token');
select ok(boxcar.claim_delay_ms('{slow}') between 1000 and 2001, 'claim_delay_ms says when (about 2 s)');
select is(boxcar.claim_delay_ms('{lim}'), null, 'claim_delay_ms is null for a queue without a rate');
select boxcar.queue_config('fast', null, 100);
select boxcar.enqueue('fast', '{"command":["true"]}') from generate_series(1, 30);
select is((select count(*)::int from boxcar.claim('w1', '{fast}', 30)), 10, 'a burst of 10 at 100/s');

-- Pause.
select boxcar.enqueue('p', '{"command":["true"]}');
select is(boxcar.pause_queue('p') ->> 'paused', 'true', 'pause_queue');
select is((select count(*)::int from boxcar.claim('w1', '{p}', 5)), 0, 'a paused queue is skipped');
select is(boxcar.resume_queue('p') ->> 'paused', 'false', 'resume_queue');
select is((select count(*)::int from boxcar.claim('w1', '{p}', 5)), 1, 'claimed once resumed');

-- Fair share: scope a floods, scope b has 2 jobs; a claim of 4 takes 2 of each.
select boxcar.enqueue('a/x', '{"command":["true"]}', run_at => now() - interval '1 hour') from generate_series(1, 100);
select boxcar.enqueue('b/x', '{"command":["true"]}') from generate_series(1, 2);
select results_eq($$select queue, count(*)::int from boxcar.claim('w1', '{a/x,b/x}', 4) group by 1 order by 1$$,
                  $$values ('a/x', 2), ('b/x', 2)$$,
                  'fair share: the older flood does not take every slot');
select * from finish();
rollback;
