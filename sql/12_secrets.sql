-- Job secrets (spec.secrets): NAME -> a plaintext string or
-- {"sealed": base64 OpenPGP message}.  Every plaintext value is replaced
-- by {"sealed", "key"} before the row is stored (the triggers below, on
-- jobs and schedules, whatever path writes them), sealed with the newest
-- active key of boxcar.secret_keys; workers hold the private keys
-- (--secret-keys) and open them when they run the job.

-- The shape of spec.secrets, as enqueue receives it or a row holds it;
-- env: spec.env, whose names a secret may not repeat.
create or replace function boxcar.secrets_error(secrets jsonb, env jsonb)
returns text language plpgsql immutable as $$
declare
    e text;
begin
    if jsonb_typeof(secrets) <> 'object' then
        return 'secrets: must be an object of names to values';
    end if;
    if (select count(*) from jsonb_object_keys(secrets)) > 256 then
        return 'secrets: at most 256 secrets';
    end if;
    -- The first entry at fault, in key order (not the first entry: a valid
    -- one before a bad one must not hide it).
    select fault into e from (select case
             when key !~ '^[A-Za-z_][A-Za-z0-9_]{0,255}$' then 'secrets.' || left(key, 64) || ': not a valid variable name'
             when upper(key) like 'BOXCAR\_%' then 'secrets.' || key || ': BOXCAR_* names are reserved'
             when jsonb_typeof(env) = 'object' and env ? key then 'secrets.' || key || ': also set in env'
             when jsonb_typeof(value) = 'string' then
               case when octet_length(value #>> '{}') > 65536 then 'secrets.' || key || ': longer than 65536 bytes'
                    when octet_length(value #>> '{}') = 0 then 'secrets.' || key || ': empty'
               end
             when jsonb_typeof(value) <> 'object' or jsonb_typeof(value -> 'sealed') is distinct from 'string'
                  or exists (select from jsonb_object_keys(value) k where k not in ('sealed', 'key'))
                  or (value ? 'key' and jsonb_typeof(value -> 'key') <> 'string') then
               'secrets.' || key || ': must be a string or {"sealed": "<base64 OpenPGP message>"}'
             when octet_length(value ->> 'sealed') > 131072 then 'secrets.' || key || ': sealed value longer than 131072 bytes'
             when (value ->> 'sealed') !~ '^[A-Za-z0-9+/\n]+={0,2}\n?$' then 'secrets.' || key || ': "sealed" must be base64'
           end as fault
      from jsonb_each(secrets)) f
     where fault is not null
     limit 1;
    return e;
end $$;

-- BAD_SPEC as check_spec raises it.
create or replace function boxcar.secrets_raise(message text)
returns void language plpgsql as $$
begin
    raise exception 'BAD_SPEC: %', message
        using errcode = '22023', hint = 'job secrets are documented in docs/tenants.md';
end $$;

-- The sealed form of spec.secrets: plaintext values sealed with the
-- newest active key; sealed ones kept when an active key of this database
-- opens them (their "key" is read from the message, never trusted from
-- the caller, so `boxcar secrets retire` counts right).
--
-- What is sealed is an envelope binding the value to the job's scope and
-- the secret's name: "boxcar-secret-v1\n<scope>\n<NAME>\n<value>".  The
-- worker refuses a value whose envelope names another scope or name, so a
-- sealed value copied into another tenant's job (or under another name)
-- opens nowhere.
drop function if exists boxcar.seal_secrets(jsonb);
create or replace function boxcar.seal_secrets(secrets jsonb, scope text)
returns jsonb language plpgsql volatile
set search_path = pg_catalog, boxcar, boxcar_pgcrypto, public as $$
declare
    k boxcar.secret_keys;
    sealed jsonb := '{}';
    name text;
    v jsonb;
    kid text;
begin
    for name, v in select key, value from jsonb_each(secrets) loop
        if jsonb_typeof(v) = 'string' then
            if k.key_id is null then
                select * into k from boxcar.secret_keys where state = 'active'
                 order by created_at desc, key_id limit 1 for share;
                if not found then
                    perform boxcar.secrets_raise(
                        'secrets: no workers'' public key is registered; run boxcar secrets keygen');
                end if;
            end if;
            sealed := sealed || jsonb_build_object(name, jsonb_build_object(
                'sealed', translate(encode(pgp_pub_encrypt(
                              'boxcar-secret-v1' || E'\n' || scope || E'\n' || name || E'\n' || (v #>> '{}'),
                              k.public_key, 'cipher-algo=aes256'), 'base64'), E'\n', ''),
                'key', k.key_id));
        else
            begin
                kid := lower(pgp_key_id(decode(v ->> 'sealed', 'base64')));
            exception when others then
                kid := null;
            end;
            if kid is null or kid !~ '^[0-9a-f]{16}$' then
                perform boxcar.secrets_raise(format('secrets.%s: "sealed" is not an OpenPGP message sealed to a public key', name));
            end if;
            perform from boxcar.secret_keys s where s.key_id = kid and s.state = 'active' for share;
            if not found then
                perform boxcar.secrets_raise(format('secrets.%s: sealed with key %s, which is not an active key (boxcar secrets keys)', name, kid));
            end if;
            sealed := sealed || jsonb_build_object(name, jsonb_build_object(
                'sealed', translate(v ->> 'sealed', E'\n', ''), 'key', kid));
        end if;
    end loop;
    return sealed;
end $$;

-- BEFORE INSERT OR UPDATE of a job's or schedule's spec: no path stores a
-- plaintext secret (enqueue, a schedule, a retry, a direct insert).
create or replace function boxcar.seal_spec_secrets() returns trigger
language plpgsql as $$
declare
    e text := boxcar.secrets_error(new.spec -> 'secrets', new.spec -> 'env');
begin
    if e is not null then
        perform boxcar.secrets_raise(e);
    end if;
    new.spec := jsonb_set(new.spec, '{secrets}',
                          boxcar.seal_secrets(new.spec -> 'secrets', boxcar.queue_scope(new.queue)));
    return new;
end $$;

-- WHEN: a spec without secrets never calls the function.  "b": after
-- jobs_a_session (triggers fire in name order).
create or replace trigger jobs_b_secrets
    before insert or update of spec on boxcar.jobs
    for each row when (new.spec ? 'secrets')
    execute function boxcar.seal_spec_secrets();

create or replace trigger schedules_secrets
    before insert or update of spec on boxcar.schedules
    for each row when (new.spec ? 'secrets')
    execute function boxcar.seal_spec_secrets();

-- The spec as people see it (status, the dashboard, an idempotent
-- enqueue's comparison): each secret by name only.
create or replace function boxcar.spec_redacted(spec jsonb)
returns jsonb language sql immutable as $$
    select case when jsonb_typeof(spec -> 'secrets') = 'object'
                then jsonb_set(spec, '{secrets}',
                               coalesce((select jsonb_object_agg(key, '(sealed)')
                                           from jsonb_object_keys(spec -> 'secrets') key), '{}'))
                else spec end
$$;

-- Registers a workers' public key (OpenPGP packets, `boxcar secrets
-- keygen`) as the newest active key; returns its key id.  pgcrypto must
-- be able to seal with it, or it is refused.
create or replace function boxcar.secret_key_add(public_key bytea)
returns text language plpgsql volatile
set search_path = pg_catalog, boxcar, boxcar_pgcrypto, public as $$
declare
    kid text;
    st text;
begin
    if public_key is null or octet_length(public_key) > 8192 then
        raise exception 'public key: missing or larger than 8192 bytes' using errcode = '22023';
    end if;
    begin
        kid := lower(pgp_key_id(public_key));
        perform pgp_pub_encrypt('probe', public_key);
    exception when others then
        raise exception 'public key: pgcrypto cannot seal with it: %', sqlerrm using errcode = '22023';
    end;
    select s.state into st from boxcar.secret_keys s where s.key_id = kid;
    if st = 'retired' then
        raise exception 'public key %: was retired; generate a new key (boxcar secrets keygen)', kid
            using errcode = '22023';
    end if;
    -- clock_timestamp: two keys added in one transaction are ordered too.
    insert into boxcar.secret_keys (key_id, public_key, created_at)
    values (kid, secret_key_add.public_key, clock_timestamp())
    on conflict (key_id) do update set created_at = clock_timestamp();
    return kid;
end $$;

-- Jobs (queued or running) and schedules holding a value sealed with key.
create or replace function boxcar.secret_key_users(key_id text, out jobs bigint, out schedules bigint)
language sql stable as $$
    select (select count(*) from boxcar.jobs j
             where j.status in ('queued', 'running') and j.spec ? 'secrets'
               and exists (select from jsonb_each(j.spec -> 'secrets') s
                            where s.value ->> 'key' = secret_key_users.key_id)),
           (select count(*) from boxcar.schedules c
             where c.spec ? 'secrets'
               and exists (select from jsonb_each(c.spec -> 'secrets') s
                            where s.value ->> 'key' = secret_key_users.key_id))
$$;

-- Retires a key: refused while a queued or running job or a schedule
-- still holds a value sealed with it (it would never open once the
-- workers drop the private key).
create or replace function boxcar.secret_key_retire(key_id text)
returns void language plpgsql volatile as $$
declare
    u record;
begin
    -- Sealing holds its key's row FOR SHARE until its enqueue commits:
    -- this lock waits for those enqueues (their jobs are then counted) and
    -- keeps new ones out until the key is retired.
    lock table boxcar.secret_keys in exclusive mode;
    if not exists (select from boxcar.secret_keys s where s.key_id = lower(secret_key_retire.key_id)) then
        raise exception 'key %: not registered', secret_key_retire.key_id using errcode = '22023';
    end if;
    u := boxcar.secret_key_users(lower(secret_key_retire.key_id));
    if u.jobs > 0 or u.schedules > 0 then
        raise exception 'key %: still sealing % queued or running job(s) and % schedule(s); retire it when they are done',
            lower(secret_key_retire.key_id), u.jobs, u.schedules using errcode = '55006';
    end if;
    update boxcar.secret_keys s set state = 'retired', retired_at = now()
     where s.key_id = lower(secret_key_retire.key_id) and s.state = 'active';
end $$;
