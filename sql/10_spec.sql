-- Job spec validation (docs/job-spec.md), run at enqueue so a web app gets
-- BAD_SPEC inside its own transaction.  The worker checks again at claim
-- (worker/spec/spec.c) with the same rules: rows can be inserted around this API.

create or replace function boxcar.path_error(field text, p jsonb, reserved boolean)
returns text language plpgsql immutable as $$
declare
    s text;
begin
    if jsonb_typeof(p) is distinct from 'string' then
        return field || ': must be a string';
    end if;
    s := p #>> '{}';
    if left(s, 1) <> '/' then
        return field || ': must be an absolute path';
    end if;
    if octet_length(s) > 1024 then
        return field || ': longer than 1024 bytes';
    end if;
    -- C0, DEL and C1: a path with a newline or an escape sequence would
    -- forge lines in logs and mount tables, and mislead a terminal.
    if s ~ '[\x01-\x1f\x7f\u0080-\u009f]' then
        return field || ': must not contain control characters';
    end if;
    if s ~ '(^|/)\.\.?(/|$)' or s ~ '//' or (s <> '/' and right(s, 1) = '/') then
        return field || ': must be a normalized path without "." or ".." components';
    end if;
    if reserved and (s = '/' or s ~ '^/(proc|sys|dev|tmp|etc|usr|bin|sbin|lib|lib32|lib64|libx32|run|boot|root|var|workspace)(/|$)') then
        return field || ': "' || s || '" is reserved';
    end if;
    return null;
end $$;

create or replace function boxcar.number_error(field text, v jsonb, lo numeric, hi numeric, integral boolean)
returns text language plpgsql immutable as $$
begin
    if jsonb_typeof(v) is distinct from 'number' then
        return field || ': must be a number';
    end if;
    if integral and (v::text)::numeric <> trunc((v::text)::numeric) then
        return field || ': must be a whole number';
    end if;
    if (v::text)::numeric < lo or (v::text)::numeric > hi then
        return field || ': must be between ' || lo || ' and ' || hi;
    end if;
    return null;
end $$;

create or replace function boxcar.name_error(field text, v jsonb)
returns text language sql immutable as $$
    select case
        when jsonb_typeof(v) is distinct from 'string' then field || ': must be a string'
        when (v #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'
            then field || ': must be 1-128 letters, digits, "_", "." or "-"'
    end
$$;

create or replace function boxcar.string_error(field text, v jsonb)
returns text language sql immutable as $$
    select case
        when jsonb_typeof(v) is distinct from 'string' then field || ': must be a string'
        when length(v #>> '{}') = 0 then field || ': must be a non-empty string'
        when octet_length(v #>> '{}') > 4194304 then field || ': longer than 4194304 bytes'
    end
$$;

create or replace function boxcar.limits_error(limits jsonb)
returns text language plpgsql immutable as $$
declare
    k text;
    v jsonb;
    e text;
begin
    if jsonb_typeof(limits) is distinct from 'object' then
        return 'limits: must be an object';
    end if;
    for k, v in select * from jsonb_each(limits) loop
        e := case k
            when 'timeout_s' then boxcar.number_error('limits.timeout_s', v, 1, 86400, false)
            when 'memory_mb' then boxcar.number_error('limits.memory_mb', v, 16, 1048576, true)
            when 'cpus' then boxcar.number_error('limits.cpus', v, 0.01, 256, false)
            when 'pids' then boxcar.number_error('limits.pids', v, 1, 65536, true)
            when 'disk_mb' then boxcar.number_error('limits.disk_mb', v, 1, 1048576, true)
            when 'files' then boxcar.number_error('limits.files', v, 1, 10000000, true)
            when 'output_bytes' then boxcar.number_error('limits.output_bytes', v, 0, 16777216, true)
            else 'limits.' || k || ': unknown field'
        end;
        if e is not null then return e; end if;
    end loop;
    return null;
end $$;

create or replace function boxcar.volumes_error(volumes jsonb)
returns text language plpgsql immutable as $$
declare
    vol jsonb;
    i int := 0;
    f text;
    e text;
    mounts text[] := '{}';
    names text[] := '{}';
    m text;
    other text;
begin
    if jsonb_typeof(volumes) is distinct from 'array' then
        return 'volumes: must be an array';
    end if;
    if jsonb_array_length(volumes) > 32 then
        return 'volumes: at most 32 volumes';
    end if;
    for vol in select * from jsonb_array_elements(volumes) loop
        f := 'volumes[' || i || ']';
        if jsonb_typeof(vol) is distinct from 'object' then
            return f || ': must be an object';
        end if;
        select f || '.' || key || ': unknown field' into e
          from jsonb_object_keys(vol) key
         where key not in ('name', 'mount', 'url', 'sha256', 'storage', 'version') limit 1;
        if e is not null then return e; end if;
        e := coalesce(boxcar.name_error(f || '.name', vol -> 'name'),
                      boxcar.path_error(f || '.mount', vol -> 'mount', true));
        if e is not null then return e; end if;
        if (vol ? 'url') = (vol ? 'storage') then
            return f || ': exactly one of url or storage is required';
        end if;
        if vol ? 'url' and (jsonb_typeof(vol -> 'url') is distinct from 'string'
                            or (vol ->> 'url') !~ '^https?://[^[:space:]]+$'
                            or length(vol ->> 'url') > 8192) then
            return f || '.url: must be an http(s) URL of at most 8192 characters';
        end if;
        if vol ? 'sha256' and (jsonb_typeof(vol -> 'sha256') is distinct from 'string'
                               or (vol ->> 'sha256') !~ '^[0-9a-f]{64}$') then
            return f || '.sha256: must be 64 lowercase hex digits';
        end if;
        if vol ? 'storage' then
            e := boxcar.name_error(f || '.storage', vol -> 'storage');
            if e is not null then return e; end if;
        end if;
        if vol ? 'version' and (not vol ? 'storage' or jsonb_typeof(vol -> 'version') is distinct from 'string'
                                or (vol ->> 'version') !~ '^(latest|[0-9a-f]{64})$') then
            return f || '.version: must be "latest" or a sha256, with storage';
        end if;
        m := vol ->> 'mount';
        foreach other in array mounts loop
            if m = other or left(m, length(other) + 1) = other || '/'
               or left(other, length(m) + 1) = m || '/' then
                return f || '.mount: overlaps another volume at ' || other;
            end if;
        end loop;
        if (vol ->> 'name') = any(names) then
            return f || '.name: duplicate volume name';
        end if;
        mounts := mounts || m;
        names := names || (vol ->> 'name');
        i := i + 1;
    end loop;
    return null;
end $$;

-- One egress rule (common/netallow.h has the grammar; the C parser gives
-- the same messages): name:port, *.name:port, a.b.c.d[/bits]:port.
create or replace function boxcar.network_rule_error(field text, rule text)
returns text language plpgsql immutable as $$
declare
    octet constant text := '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
    label constant text := '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
    last_label constant text := '[a-z]([a-z0-9-]{0,61}[a-z0-9])?';
    syntax constant text := field || ': must be "name:port", "*.name:port" or "a.b.c.d/bits:port"';
    host text := substring(rule from '^(.*):[^:]*$');
    port text := substring(rule from ':([^:]*)$');
    name text;
    is_ip boolean;
begin
    if host is null or port !~ '^[0-9]+$' then
        return syntax;
    end if;
    is_ip := host ~ ('^' || octet || '(\.' || octet || '){3}(/(3[0-2]|[12]?[0-9]))?$');
    name := regexp_replace(host, '^\*\.', '');
    if not is_ip and (length(name) > 253
                      or name !~ ('^(' || label || '\.)*' || last_label || '$')) then
        return syntax;
    end if;
    if port !~ '^[1-9][0-9]{0,4}$' then
        return field || ': port must be between 1 and 65535';
    end if;
    if port::int > 65535 then
        return field || ': port must be between 1 and 65535';
    end if;
    if is_ip and host(host::inet) <> host(network(host::inet)) then
        return field || ': address has bits set past the prefix (the network is '
               || network(host::inet)::text || ')';
    end if;
    if is_ip and host::inet = '169.254.169.254/32'::inet then
        return field || ': 169.254.169.254 is the cloud metadata service, which no rule reaches';
    end if;
    return null;
end $$;

-- "none", "host" or {"allow": [rules]}.
create or replace function boxcar.network_error(v jsonb)
returns text language plpgsql immutable as $$
declare
    e text;
    i int;
begin
    if v in ('"none"'::jsonb, '"host"'::jsonb) then
        return null;
    end if;
    if jsonb_typeof(v) <> 'object' then
        return 'network: must be "none", "host" or {"allow": [rules]}';
    end if;
    select 'network.' || key || ': unknown field' into e from jsonb_object_keys(v) key
     where key <> 'allow' limit 1;
    if e is not null then return e; end if;
    if jsonb_typeof(v -> 'allow') is distinct from 'array' or jsonb_array_length(v -> 'allow') = 0
       or jsonb_array_length(v -> 'allow') > 64 then
        return 'network.allow: must be a non-empty array of at most 64 rules';
    end if;
    for i in 0 .. jsonb_array_length(v -> 'allow') - 1 loop
        if jsonb_typeof(v -> 'allow' -> i) <> 'string' then
            return 'network.allow[' || i || ']: must be a string';
        end if;
        e := boxcar.network_rule_error('network.allow[' || i || ']', v -> 'allow' ->> i);
        if e is not null then return e; end if;
    end loop;
    return null;
end $$;

-- A session id, or the session a fork starts from: a storage name short
-- enough that "session-" || id is one too (worker/spec/spec_session.c): the
-- storage of a session of scope "default" (boxcar.session_storage_name).
create or replace function boxcar.session_name_error(field text, v jsonb)
returns text language sql immutable as $$
    select case
        when jsonb_typeof(v) is distinct from 'string' then field || ': must be a string'
        when (v #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,119}$'
            then field || ': must be 1-120 letters, digits, "_", "." or "-"'
    end
$$;

-- spec.session: {"id", "idle_timeout_s", "from": {"session", "version"}}.
create or replace function boxcar.session_error(s jsonb)
returns text language plpgsql immutable as $$
declare
    e text;
    f jsonb;
begin
    if jsonb_typeof(s) <> 'object' then
        return 'session: must be an object';
    end if;
    select 'session.' || key || ': unknown field' into e from jsonb_object_keys(s) key
     where key not in ('id', 'idle_timeout_s', 'from') limit 1;
    if e is not null then return e; end if;
    e := boxcar.session_name_error('session.id', s -> 'id');
    if e is not null then return e; end if;
    if s ? 'idle_timeout_s' then
        e := boxcar.number_error('session.idle_timeout_s', s -> 'idle_timeout_s', 1, 86400, false);
        if e is not null then return e; end if;
    end if;
    if not s ? 'from' then
        return null;
    end if;
    f := s -> 'from';
    if jsonb_typeof(f) <> 'object' then
        return 'session.from: must be an object';
    end if;
    select 'session.from.' || key || ': unknown field' into e from jsonb_object_keys(f) key
     where key not in ('session', 'version') limit 1;
    if e is not null then return e; end if;
    e := boxcar.session_name_error('session.from.session', f -> 'session');
    if e is not null then return e; end if;
    -- A session forks another one's checkpoint; its own has none yet.
    if f -> 'session' = s -> 'id' then
        return 'session.from.session: must name another session';
    end if;
    if f ? 'version' and (jsonb_typeof(f -> 'version') <> 'string'
                          or (f ->> 'version') !~ '^(latest|[0-9a-f]{64})$') then
        return 'session.from.version: must be "latest" or a sha256';
    end if;
    return null;
end $$;

create or replace function boxcar.file_path_error(field text, v jsonb)
returns text language sql immutable as $$
    select case
        when jsonb_typeof(v) is distinct from 'string' or (v #>> '{}') = ''
             or octet_length(v #>> '{}') > 4096
            then field || ': must be a non-empty path of at most 4096 bytes'
    end
$$;

-- spec.files: 1 to 1000 file operations for a session's agent.  Base64
-- content is groups of four symbols ("+/" alphabet), only the last ending
-- in "=" or "==", whitespace (space, tab, CR, LF) ignored: the grammar the
-- worker's decoder takes, and a subset of what decode(x, 'base64') takes.
create or replace function boxcar.files_error(files jsonb)
returns text language plpgsql immutable as $$
declare
    op jsonb;
    i int := 0;
    f text;
    e text;
    kind text;
    c text;
    total bigint := 0;
begin
    if jsonb_typeof(files) <> 'array' or jsonb_array_length(files) not between 1 and 1000 then
        return 'files: must be an array of 1 to 1000 operations';
    end if;
    for op in select * from jsonb_array_elements(files) loop
        f := 'files[' || i || ']';
        if jsonb_typeof(op) <> 'object' then
            return f || ': must be an object';
        end if;
        kind := case when jsonb_typeof(op -> 'op') = 'string' then op ->> 'op' end;
        if kind is null or kind not in ('write', 'read', 'list', 'stat', 'mkdir', 'remove', 'move') then
            return f || '.op: must be "write", "read", "list", "stat", "mkdir", "remove" or "move"';
        end if;
        select f || '.' || key || ': unknown field for op "' || kind || '"' into e
          from jsonb_object_keys(op) key
         where key not in ('op', 'path')
           and not (kind = 'write' and key in ('content', 'encoding', 'parents'))
           and not (kind = 'mkdir' and key = 'parents')
           and not (kind = 'remove' and key = 'recursive')
           and not (kind = 'move' and key = 'to')
         limit 1;
        if e is not null then return e; end if;
        e := boxcar.file_path_error(f || '.path', op -> 'path');
        if e is not null then return e; end if;
        if kind = 'write' then
            if jsonb_typeof(op -> 'content') is distinct from 'string' then
                return f || '.content: must be a string';
            end if;
            if op ? 'encoding' and op -> 'encoding' not in ('"utf-8"'::jsonb, '"base64"'::jsonb) then
                return f || '.encoding: must be "utf-8" or "base64"';
            end if;
            if op -> 'encoding' = '"base64"'::jsonb then
                c := translate(op ->> 'content', E' \t\r\n', '');
                if length(c) % 4 <> 0 or c !~ '^[A-Za-z0-9+/]*={0,2}$' then
                    return f || '.content: not valid base64';
                end if;
                total := total + length(c) / 4 * 3 - (length(c) - length(rtrim(c, '=')));
            else
                total := total + octet_length(op ->> 'content');
            end if;
        end if;
        if op ? 'parents' and jsonb_typeof(op -> 'parents') <> 'boolean' then
            return f || '.parents: must be true or false';
        end if;
        if op ? 'recursive' and jsonb_typeof(op -> 'recursive') <> 'boolean' then
            return f || '.recursive: must be true or false';
        end if;
        if kind = 'move' then
            e := boxcar.file_path_error(f || '.to', op -> 'to');
            if e is not null then return e; end if;
        end if;
        -- Unreachable while a spec is at most 4 MiB of JSON (no content
        -- decodes longer than its text); kept in step with the worker.
        if total > 4194304 then
            return 'files: the contents written exceed 4194304 bytes';
        end if;
        i := i + 1;
    end loop;
    return null;
end $$;

create or replace function boxcar.spec_error(spec jsonb)
returns text language plpgsql immutable as $$
declare
    k text;
    v jsonb;
    e text;
    modes int;
    i int;
begin
    -- The worker's parser (cJSON) stops at 1000 levels; both validators
    -- stop at 64 (worker/spec/spec.h SPEC_MAX_DEPTH): level 65 is too deep.
    if jsonb_path_exists(spec, 'strict $.**{65}') then
        return 'spec: nested deeper than 64 levels';
    end if;
    if spec is null or jsonb_typeof(spec) <> 'object' then
        return 'spec: must be a JSON object';
    end if;
    if octet_length(spec::text) > 4194304 then
        return 'spec: larger than 4194304 bytes';
    end if;
    select key || ': unknown field' into e from jsonb_object_keys(spec) key
     where key not in ('version', 'command', 'script', 'code', 'env', 'workdir',
                       'startup_script', 'startup_timeout_s', 'volumes', 'artifact',
                       'image', 'limits', 'network', 'webhook', 'retry',
                       'session', 'stdin', 'files', 'secrets')
     limit 1;
    if e is not null then return e; end if;
    if spec ? 'version' and spec -> 'version' <> '1'::jsonb then
        return 'version: must be 1';
    end if;
    -- The session first: stdin, files and the artifact are checked
    -- against it (the worker keeps the same order).
    if spec ? 'session' then
        e := boxcar.session_error(spec -> 'session');
        if e is not null then return e; end if;
    end if;
    modes := (spec ? 'command')::int + (spec ? 'script')::int + (spec ? 'code')::int
             + (spec ? 'files')::int;
    if modes = 0 then
        return 'command: one of command, script, code or files is required';
    elsif modes > 1 then
        return 'command: only one of command, script, code or files may be given';
    end if;
    if spec ? 'command' then
        v := spec -> 'command';
        if jsonb_typeof(v) <> 'array' or jsonb_array_length(v) = 0 then
            return 'command: must be a non-empty array of strings';
        end if;
        if jsonb_array_length(v) > 4096 then
            return 'command: at most 4096 arguments';
        end if;
        for i in 0 .. jsonb_array_length(v) - 1 loop
            if jsonb_typeof(v -> i) <> 'string' then
                return 'command[' || i || ']: must be a string';
            end if;
        end loop;
        if length(v ->> 0) = 0 then
            return 'command[0]: must be a non-empty string';
        end if;
    end if;
    if spec ? 'script' then
        e := boxcar.string_error('script', spec -> 'script');
        if e is not null then return e; end if;
    end if;
    if spec ? 'code' then
        v := spec -> 'code';
        if jsonb_typeof(v) <> 'object' then
            return 'code: must be an object';
        end if;
        select 'code.' || key || ': unknown field' into e from jsonb_object_keys(v) key
         where key not in ('language', 'source', 'arguments') limit 1;
        if e is not null then return e; end if;
        if (v ->> 'language') is null or (v ->> 'language') not in ('python', 'node', 'bash')
           or jsonb_typeof(v -> 'language') <> 'string' then
            return 'code.language: must be "python", "node" or "bash"';
        end if;
        e := boxcar.string_error('code.source', v -> 'source');
        if e is not null then return e; end if;
        if v ? 'arguments' and jsonb_typeof(v -> 'arguments') <> 'object' then
            return 'code.arguments: must be an object';
        end if;
    end if;
    if spec ? 'files' then
        -- Only a session's agent carries file operations out.
        if not spec ? 'session' then
            return 'files: needs a session';
        end if;
        e := boxcar.files_error(spec -> 'files');
        if e is not null then return e; end if;
    end if;
    if spec ? 'stdin' then
        -- Only a session's agent feeds a job's stdin for now.
        if not spec ? 'session' then
            return 'stdin: needs a session';
        end if;
        if jsonb_typeof(spec -> 'stdin') <> 'string' then
            return 'stdin: must be a string';
        end if;
        if octet_length(spec ->> 'stdin') > 1048576 then
            return 'stdin: longer than 1048576 bytes';
        end if;
    end if;
    if spec ? 'env' then
        if jsonb_typeof(spec -> 'env') <> 'object' then
            return 'env: must be an object of strings';
        end if;
        select case
                 when key !~ '^[A-Za-z_][A-Za-z0-9_]{0,255}$' then 'env.' || left(key, 64) || ': not a valid variable name'
                 when jsonb_typeof(value) <> 'string' then 'env.' || key || ': must be a string'
                 when octet_length(value #>> '{}') > 131072 then 'env.' || key || ': longer than 131072 bytes'
               end into e
          from jsonb_each(spec -> 'env')
         where key !~ '^[A-Za-z_][A-Za-z0-9_]{0,255}$' or jsonb_typeof(value) <> 'string'
            or octet_length(value #>> '{}') > 131072
         limit 1;
        if e is not null then return e; end if;
        if (select count(*) from jsonb_object_keys(spec -> 'env')) > 1024 then
            return 'env: at most 1024 variables';
        end if;
    end if;
    if spec ? 'secrets' then
        e := boxcar.secrets_error(spec -> 'secrets', spec -> 'env');
        if e is not null then return e; end if;
    end if;
    if spec ? 'workdir' then
        e := boxcar.path_error('workdir', spec -> 'workdir', false);
        if e is not null then return e; end if;
    end if;
    if spec ? 'startup_script' then
        e := boxcar.string_error('startup_script', spec -> 'startup_script');
        if e is not null then return e; end if;
    end if;
    if spec ? 'startup_timeout_s' then
        e := boxcar.number_error('startup_timeout_s', spec -> 'startup_timeout_s', 1, 600, false);
        if e is not null then return e; end if;
    end if;
    if spec ? 'volumes' then
        e := boxcar.volumes_error(spec -> 'volumes');
        if e is not null then return e; end if;
    end if;
    if spec ? 'artifact' then
        v := spec -> 'artifact';
        if jsonb_typeof(v) <> 'object' then
            return 'artifact: must be an object';
        end if;
        select 'artifact.' || key || ': unknown field' into e from jsonb_object_keys(v) key
         where key not in ('storage', 'mount', 'base') limit 1;
        if e is not null then return e; end if;
        e := boxcar.name_error('artifact.storage', v -> 'storage');
        if e is not null then return e; end if;
        -- A session's checkpoints are its own: no plain job writes there.
        -- Which "session-" name is the session's depends on its scope: the
        -- session's trigger checks it (boxcar.session_job).
        if spec ? 'session' and left(v ->> 'storage', 8) <> 'session-' then
            return 'artifact.storage: a session''s files are in its own storage "session-..."';
        end if;
        if not spec ? 'session' and left(v ->> 'storage', 8) = 'session-' then
            return 'artifact.storage: names starting with "session-" belong to sessions';
        end if;
        if v ? 'mount' and v -> 'mount' <> '"/workspace"'::jsonb then
            return 'artifact.mount: must be "/workspace"';
        end if;
        if v ? 'base' and (jsonb_typeof(v -> 'base') <> 'string'
                           or (v ->> 'base') !~ '^(latest|empty|[0-9a-f]{64})$') then
            return 'artifact.base: must be "latest", "empty" or a sha256';
        end if;
    end if;
    if spec ? 'image' then
        v := spec -> 'image';
        if jsonb_typeof(v) <> 'object' then
            return 'image: must be an object';
        end if;
        select 'image.' || key || ': unknown field' into e from jsonb_object_keys(v) key
         where key not in ('storage', 'version') limit 1;
        if e is not null then return e; end if;
        e := boxcar.name_error('image.storage', v -> 'storage');
        if e is not null then return e; end if;
        if v ? 'version' and (jsonb_typeof(v -> 'version') <> 'string'
                              or (v ->> 'version') !~ '^(latest|[0-9a-f]{64})$') then
            return 'image.version: must be "latest" or a sha256';
        end if;
    end if;
    if spec ? 'limits' then
        e := boxcar.limits_error(spec -> 'limits');
        if e is not null then return e; end if;
    end if;
    if spec ? 'network' then
        e := boxcar.network_error(spec -> 'network');
        if e is not null then return e; end if;
    end if;
    if spec ? 'webhook' then
        v := spec -> 'webhook';
        if jsonb_typeof(v) <> 'object'
           or (select count(*) from jsonb_object_keys(v) key where key not in ('url', 'progress')) > 0 then
            return 'webhook: must be an object with only "url" and "progress"';
        end if;
        -- "url" may be left out when "progress" is there: the URL is then
        -- enqueue's webhook_url or the workers' default.
        if (v ? 'url' or not v ? 'progress')
           and (jsonb_typeof(v -> 'url') is distinct from 'string' or (v ->> 'url') !~ '^https?://[^[:space:]]+$'
                or length(v ->> 'url') > 2048) then
            return 'webhook.url: must be an http(s) URL of at most 2048 characters';
        end if;
        if v ? 'progress' and jsonb_typeof(v -> 'progress') <> 'boolean' then
            return 'webhook.progress: must be true or false';
        end if;
    end if;
    if spec ? 'retry' then
        v := spec -> 'retry';
        if jsonb_typeof(v) <> 'object' or (select count(*) from jsonb_object_keys(v) key where key <> 'on') > 0
           or jsonb_typeof(v -> 'on') is distinct from 'array' then
            return 'retry: must be an object {"on": [codes]}';
        end if;
        select 'retry.on: "' || (x #>> '{}') || '" cannot be retried (NONZERO_EXIT, TIMEOUT or OOM)' into e
          from jsonb_array_elements(v -> 'on') x
         where x not in ('"NONZERO_EXIT"'::jsonb, '"TIMEOUT"'::jsonb, '"OOM"'::jsonb) limit 1;
        if e is not null then return e; end if;
    end if;
    return null;
end $$;

-- Raises BAD_SPEC (SQLSTATE 22023) naming the field when the spec is invalid.
create or replace function boxcar.check_spec(spec jsonb)
returns void language plpgsql immutable as $$
declare
    e text := boxcar.spec_error(spec);
begin
    if e is not null then
        raise exception 'BAD_SPEC: %', e
            using errcode = '22023', hint = 'the job spec is documented in docs/job-spec.md';
    end if;
end $$;
