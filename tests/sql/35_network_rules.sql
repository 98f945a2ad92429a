-- Network rules at enqueue (boxcar.network_rule_error): the cloud metadata
-- address is never a rule of its own, whatever the queue's caps; networks
-- that merely hold it, and private targets (which the worker's
-- --allow-private-egress governs, not the spec), are valid rules.
begin;
select plan(5);

select is(boxcar.network_rule_error('network.allow[0]', '169.254.169.254:80'),
          'network.allow[0]: 169.254.169.254 is the cloud metadata service, which no rule reaches',
          'a rule naming the metadata address is refused');
select is(boxcar.network_rule_error('network.allow[3]', '169.254.169.254/32:443'),
          'network.allow[3]: 169.254.169.254 is the cloud metadata service, which no rule reaches',
          'so is its /32, on any port');
select is(boxcar.network_rule_error('network.allow[0]', '169.254.0.0/16:80'), null,
          'a network holding it is a valid rule (the worker never connects there)');
select is(boxcar.spec_error('{"command": ["x"], "network": {"allow": ["db.internal:5432",
          "10.1.2.3:5432", "*.example.com:443"]}}'), null,
          'private names and addresses are valid rules: the worker''s caps decide');
select throws_ok($$select boxcar.enqueue('default', '{"command": ["x"], "network": {"allow": ["169.254.169.254:80"]}}')$$,
                 '22023', null, 'boxcar.enqueue refuses it');

select * from finish();
rollback;
