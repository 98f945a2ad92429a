-- Cron expressions, evaluated in a time zone (for boxcar.schedules).
--
-- Grammar: five fields, "minute hour day-of-month month day-of-week",
-- each a comma-separated list of "*", "N", "N-M", with an optional "/STEP"
-- ("*/15", "1-30/5", "5/10" = from 5 to the field's end every 10).  Months
-- take jan-dec, weekdays sun-sat (0-7, 7 being Sunday), in any case.  The
-- macros @yearly (@annually), @monthly, @weekly, @daily (@midnight) and
-- @hourly stand for their usual five fields.  As in Vixie cron, when both
-- day fields are restricted (neither starts with "*") a day matches if
-- either does; otherwise both must.
--
-- Time zones and daylight saving time: the fields are matched against the
-- wall clock of the schedule's zone.
--   * A wall time skipped by a jump forward (02:30 on the night clocks go
--     from 02:00 to 03:00) runs at the same distance after the jump
--     (03:30), once.
--   * A wall time that happens twice (clocks go back) runs once, at its
--     first occurrence, unless the hour field starts with "*": then the
--     schedule follows real time and runs in both passes (an every-15-
--     minutes schedule keeps running every 15 minutes).

-- One field's values, sorted.  names, when given, are the words for
-- lo, lo + 1, ...
create or replace function boxcar.cron_field(field text, what text, lo integer, hi integer,
                                             names text[] default null)
returns integer[] language plpgsql immutable as $$
declare
    part text;
    m text[];
    a integer;
    b integer;
    step integer;
    vals integer[] := '{}';
begin
    if field is null or field = '' then
        raise exception 'cron: % field is empty', what using errcode = '22023';
    end if;
    foreach part in array string_to_array(lower(field), ',') loop
        m := regexp_match(part, '^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/([0-9]+))?$');
        if m is null or (m[1] = '*' and m[2] is not null) then
            raise exception 'cron: % field: "%" is not N, N-M, * or one of them with /STEP', what, part
                using errcode = '22023';
        end if;
        if m[1] = '*' then
            a := lo;
            b := hi;
        else
            a := boxcar.cron_value(m[1], what, lo, hi, names);
            b := case when m[2] is not null then boxcar.cron_value(m[2], what, lo, hi, names)
                      when m[3] is not null then hi else a end;
            if b < a then
                raise exception 'cron: % field: range "%" goes backwards', what, part
                    using errcode = '22023';
            end if;
        end if;
        step := 1;
        if m[3] is not null then
            if length(m[3]) > 4 or m[3]::integer not between 1 and hi - lo + 1 then
                raise exception 'cron: % field: step in "%" must be between 1 and %', what, part, hi - lo + 1
                    using errcode = '22023';
            end if;
            step := m[3]::integer;
        end if;
        vals := vals || array(select generate_series(a, b, step));
    end loop;
    return array(select distinct v from unnest(vals) v order by v);
end $$;

create or replace function boxcar.cron_value(word text, what text, lo integer, hi integer,
                                             names text[])
returns integer language plpgsql immutable as $$
declare
    i integer;
begin
    if word ~ '^[0-9]{1,4}$' then
        i := word::integer;
    else
        i := array_position(names, word) - 1 + lo;
    end if;
    if i is null or i < lo or i > hi then
        raise exception 'cron: % field: "%" is not a value from % to %', what, word, lo, hi
            using errcode = '22023';
    end if;
    return i;
end $$;

-- The parsed expression.  dom_star/dow_star: the day field starts with
-- "*" (the Vixie day rule); hour_star: the hour field starts with "*"
-- (the clocks-go-back rule).
create or replace function boxcar.cron_parse(expr text, out minutes integer[], out hours integer[],
                                             out doms integer[], out months integer[],
                                             out dows integer[], out dom_star boolean,
                                             out dow_star boolean, out hour_star boolean)
language plpgsql immutable as $$
declare
    f text[];
    e text := btrim(coalesce(expr, ''));
begin
    if length(e) > 256 then
        raise exception 'cron: the expression is longer than 256 characters' using errcode = '22023';
    end if;
    e := case lower(e)
        when '@yearly' then '0 0 1 1 *' when '@annually' then '0 0 1 1 *'
        when '@monthly' then '0 0 1 * *' when '@weekly' then '0 0 * * 0'
        when '@daily' then '0 0 * * *' when '@midnight' then '0 0 * * *'
        when '@hourly' then '0 * * * *' else e end;
    f := regexp_split_to_array(e, '\s+');
    if e = '' or cardinality(f) <> 5 then
        raise exception 'cron: "%" must have five fields (minute hour day-of-month month day-of-week) or be a macro such as @daily', expr
            using errcode = '22023';
    end if;
    minutes := boxcar.cron_field(f[1], 'minute', 0, 59);
    hours := boxcar.cron_field(f[2], 'hour', 0, 23);
    doms := boxcar.cron_field(f[3], 'day-of-month', 1, 31);
    months := boxcar.cron_field(f[4], 'month', 1, 12,
                                '{jan,feb,mar,apr,may,jun,jul,aug,sep,oct,nov,dec}');
    dows := boxcar.cron_field(f[5], 'day-of-week', 0, 7, '{sun,mon,tue,wed,thu,fri,sat}');
    if 7 = any (dows) then
        dows := array(select distinct v % 7 from unnest(dows) v order by 1);
    end if;
    dom_star := f[3] like '*%';
    dow_star := f[5] like '*%';
    hour_star := f[2] like '*%';
end $$;

-- Raises 22023 unless tz is a time zone PostgreSQL knows (a name such as
-- Europe/Paris, or UTC).  Offsets written as text (+02, UTC+2) are
-- refused: their sign is POSIX's, the reverse of what most people mean.
create or replace function boxcar.check_time_zone(tz text)
returns void language plpgsql stable as $$
begin
    if tz is null or not exists (select from pg_timezone_names n where n.name = tz) then
        raise exception 'time_zone: "%" is not a time zone name such as UTC or Europe/Paris', tz
            using errcode = '22023';
    end if;
end $$;

-- The first instant strictly after "after" that the expression matches in
-- time zone tz (see the rules at the top), or null when it matches
-- nothing within 8 years (such as "0 0 30 2 *").  tz is checked by the
-- callers that take it from users (check_time_zone reads the zone files:
-- too slow for every tick).
create or replace function boxcar.cron_next(expr text, tz text, after timestamptz)
returns timestamptz language plpgsql stable as $$
declare
    f record;
    -- Three hours back covers every zone's daylight saving shift: a time
    -- after "after" can show an earlier wall clock when clocks go back.
    lt timestamp := date_trunc('minute', (after - interval '3 hours') at time zone tz);
    d date := lt::date;
    h integer;
    mi integer;
    wall timestamp;
    t1 timestamptz;
    first timestamptz;
    second timestamptz;
    alt timestamptz;
    shift interval;
    best timestamptz;
    day_ok boolean;
begin
    f := boxcar.cron_parse(expr);
    for i in 0 .. 366 * 8 + 2 loop
        day_ok := case when f.dom_star or f.dow_star
                       then extract(day from d)::integer = any (f.doms)
                            and extract(dow from d)::integer = any (f.dows)
                       else extract(day from d)::integer = any (f.doms)
                            or extract(dow from d)::integer = any (f.dows) end;
        if day_ok and extract(month from d)::integer = any (f.months) then
            foreach h in array f.hours loop
                foreach mi in array f.minutes loop
                    wall := d + make_time(h, mi, 0);
                    continue when wall < lt;
                    t1 := wall at time zone tz;
                    first := t1;
                    second := null;
                    if (t1 at time zone tz) = wall then
                        -- An ambiguous wall time has another instant a
                        -- shift away (PostgreSQL picks one of the two).
                        foreach shift in array array[interval '1 hour', interval '30 minutes',
                                                     interval '2 hours'] loop
                            alt := t1 - shift;
                            if (alt at time zone tz) <> wall then
                                alt := t1 + shift;
                            end if;
                            if (alt at time zone tz) = wall then
                                first := least(t1, alt);
                                second := greatest(t1, alt);
                                exit;
                            end if;
                        end loop;
                    end if;
                    if first > after then
                        return least(best, first);
                    end if;
                    if second is not null and f.hour_star and second > after then
                        best := least(best, second);
                    end if;
                end loop;
            end loop;
        end if;
        d := d + 1;
    end loop;
    return best;
end $$;
