#!/usr/bin/env python3
"""The SQL functions the docs show exist as shown, on a migrated database.

  1. Every `boxcar.fn(...)` in README.md and docs/*.md names a function of
     schema boxcar, and its arguments fit one of its overloads:
       - a bare name (`boxcar.retry(id, requested_by)`) is the argument at
         that position; `name type` and `name type default X` must also
         have that type and that default;
       - an argument in brackets (`boxcar.create_storage(name, kind [,
         scope])`) must have a default;
       - `name => value` names an argument the function has;
       - any other value (`'acme'`, `$1`, `j.queue`) only takes its place;
       - every argument without a default is given, unless the call
         elides some with `...`.
  2. A parameter table right after a code block that calls a function
     (`| parameter | default | rules |`) names its arguments, and its
     default column agrees: `—` for none, a literal for that default.
  3. Every function the app role is granted (sql/99_roles.sql's
     boxcar.access_list()) is documented: `boxcar.fn(` or `` `fn(` ``.

usage: check_sql_api.py FUNCTIONS.json APP_FUNCTIONS DOC...
  FUNCTIONS.json: [{"name", "args": "<pg_get_function_arguments>"}, ...]
  APP_FUNCTIONS: a file of function names, one a line
Prints TAP lines "ok - ..." / "not ok - ..." (run.sh numbers them).
"""
import json
import re
import sys

IDENT = r"[a-z_][a-z0-9_]*"
# The docs' spellings of PostgreSQL's type names (format_type's).
TYPE_ALIASES = {
    "int": "integer", "int4": "integer", "int2": "smallint", "int8": "bigint",
    "float8": "double precision", "float4": "real", "bool": "boolean",
    "timestamptz": "timestamp with time zone", "varchar": "character varying",
}


def split_top(text, sep=",", opens="("):
    """Splits at top-level separators, outside quotes, $$ strings and the
    brackets OPENS names ("(" or "([": a call's array[...] too)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if text.startswith("$$", i):
            j = text.find("$$", i + 2)
            j = len(text) if j < 0 else j + 2
            cur.append(text[i:j]); i = j; continue
        if c == "'":
            j = i + 1
            while j < len(text) and not (text[j] == "'" and not text.startswith("''", j)):
                j += 2 if text.startswith("''", j) else 1
            cur.append(text[i:j + 1]); i = j + 1; continue
        if c in opens:
            depth += 1
        elif c in ")]" and {")": "(", "]": "["}[c] in opens:
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur)); cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def pg_args(arguments):
    """pg_get_function_arguments' text as [{name, type, default}] (IN args)."""
    out = []
    for item in split_top(arguments) if arguments else []:
        if re.match(r"(OUT|TABLE) ", item):
            continue
        item = re.sub(r"^(IN|INOUT|VARIADIC) ", "", item)
        m = re.match(rf"({IDENT}) (.*?)(?: DEFAULT (.*))?$", item, re.S)
        out.append({"name": m.group(1), "type": m.group(2), "default": m.group(3)})
    return out


def norm_type(t):
    t = re.sub(r"\s+", " ", t.strip().lower())
    arr = t.endswith("[]")
    base = t[:-2] if arr else t
    return TYPE_ALIASES.get(base, base) + ("[]" if arr else "")


INTERVAL_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def interval_seconds(text):
    """'24 hours', '1 day 02:00:00', '00:05:00' in seconds, else None."""
    total, rest = 0, text
    for n, unit in re.findall(r"(\d+)\s*(second|minute|hour|day|week)s?\b", text):
        total += int(n) * INTERVAL_UNITS[unit]
    rest = re.sub(r"(\d+)\s*(second|minute|hour|day|week)s?\b", "", rest).strip()
    if m := re.fullmatch(r"(\d+):(\d\d):(\d\d)", rest):
        total += int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
    elif rest:
        return None
    return total


def norm_default(d):
    """A default as the docs and as PostgreSQL spell it: casts and quotes
    off, an interval in seconds."""
    if d is None:
        return None
    d = d.strip()
    interval = d.endswith("::interval")
    d = re.sub(r"::[a-z ]+(\[\])?$", "", d)
    if re.fullmatch(r"'.*'", d, re.S):
        d = d[1:-1].replace("''", "'")
        seconds = interval_seconds(d)
        if seconds is not None and (interval or re.search(r"[a-z]", d)):
            return f"{seconds}s"
    return d.lower()


def occurrences(path, text):
    """(line, name, argument text) of each boxcar.fn( ... ) in a file."""
    for m in re.finditer(rf"\bboxcar\.({IDENT})\(", text):
        i, depth = m.end(), 1
        while i < len(text) and depth:
            c = text[i]
            if c == "`":  # the code span ended first: not a whole call
                break
            if text.startswith("$$", i):
                j = text.find("$$", i + 2)
                i = len(text) if j < 0 else j + 2
                continue
            if c == "'":
                j = text.find("'", i + 1)
                i = len(text) if j < 0 else j + 1
                continue
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
        if depth:
            continue
        line = text.count("\n", 0, m.start()) + 1
        # SQL comments inside a code block are not arguments.
        inner = re.sub(r"--[^\n]*", "", text[m.end():i - 1])
        yield line, m.group(1), re.sub(r"\s+", " ", inner).strip()


def doc_args(inner):
    """The documented arguments: [(kind, name, type, default, optional)]."""
    if not inner:
        return []
    signature = "=>" not in inner and "'" not in inner and "$" not in inner
    if signature:
        # A signature's optional part: "a, b [, c [, d]]".
        inner = inner.replace("[]", "\0").replace("[,", ",[").replace("[ ,", ",[")
    out, depth = [], 0
    for piece in split_top(inner, opens="(" if signature else "(["):
        opt = depth > 0 or piece.startswith("[")
        depth += piece.count("[") - piece.count("]")
        piece = piece.strip("[] ").replace("\0", "[]")
        if piece in ("...", "…"):
            out.append(("elided", None, None, None, opt))
        elif m := re.fullmatch(rf"({IDENT})\s*=>\s*(.+)", piece, re.S):
            out.append(("named", m.group(1), None, None, opt))
        elif m := re.fullmatch(rf"({IDENT})(?: ((?!default\b)[a-z][a-z0-9 ]*?(?:\[\])?))?(?: default (.+))?",
                               piece, re.S):
            out.append(("name", m.group(1), m.group(2), m.group(3), opt))
        else:
            out.append(("value", piece, None, None, opt))
    return out


def fit(args, overload):
    """Why the documented args do not fit an overload ([] when they do)."""
    problems, given = [], set()
    elided = any(a[0] == "elided" for a in args)
    positional = [a for a in args if a[0] in ("name", "value")]
    if len(positional) > len(overload):
        return [f"{len(positional)} positional arguments, the function takes {len(overload)}"]
    pos = 0
    for kind, name, typ, default, opt in args:
        if kind == "elided":
            continue
        if kind == "named":
            names = [a["name"] for a in overload]
            if name not in names:
                problems.append(f"no argument named {name}")
            elif name in given:
                problems.append(f"{name} given twice")
            given.add(name)
            continue
        pg = overload[pos]
        pos += 1
        given.add(pg["name"])
        if kind == "name" and name != pg["name"]:
            problems.append(f"argument {pos} is {pg['name']}, not {name}")
        if typ and norm_type(typ) != norm_type(pg["type"]):
            problems.append(f"{pg['name']} is {pg['type']}, not {typ}")
        if default is not None and norm_default(default) != norm_default(pg["default"]):
            problems.append(f"{pg['name']}'s default is {pg['default']}, not {default}")
        if opt and pg["default"] is None:
            problems.append(f"{pg['name']} is shown optional but has no default")
    if not elided:
        missing = [a["name"] for a in overload if a["default"] is None and a["name"] not in given]
        if missing:
            problems.append("required argument(s) not shown: " + ", ".join(missing))
    return problems


def check_calls(docs, functions):
    n = 0
    for path, text in docs:
        for line, name, inner in occurrences(path, text):
            n += 1
            where = f"{path}:{line} boxcar.{name}({inner})"
            overloads = functions.get(name)
            if not overloads:
                print(f"not ok - {where}: no function boxcar.{name}")
                continue
            args = doc_args(inner)
            fits = [fit(args, o) for o in overloads]
            best = min(fits, key=len)
            if best:
                print(f"not ok - {where}: " + "; ".join(best))
            else:
                print(f"ok - {where}")
    return n


def check_tables(docs, functions):
    """Parameter tables after a code block that calls a function."""
    for path, text in docs:
        for m in re.finditer(r"```sql\n(.*?)```\n\n(\|[^\n]*\n)(\|[-| ]+\|\n)((?:\|[^\n]*\n)+)",
                             text, re.S):
            header = [h.strip() for h in m.group(2).strip("|\n").split("|")]
            if header[:2] != ["parameter", "default"]:
                continue
            call = re.search(rf"\bboxcar\.({IDENT})\(", m.group(1))
            overloads = functions.get(call.group(1), []) if call else []
            line = text.count("\n", 0, m.start(4)) + 1
            if not overloads:
                print(f"not ok - {path}:{line}: the parameter table's function exists")
                continue
            pg = {a["name"]: a for a in max(overloads, key=len)}
            for row in m.group(4).splitlines():
                cells = [c.strip() for c in row.strip("|").split("|")]
                name, doc_default = cells[0].strip("`"), cells[1].strip("`")
                where = f"{path}:{line} boxcar.{call.group(1)} parameter {name}, default {cells[1]}"
                a = pg.get(name)
                if a is None:
                    print(f"not ok - {where}: no such argument")
                elif doc_default == "—":
                    ok = a["default"] is None
                    print(f"{'ok' if ok else 'not ok'} - {where}" + ("" if ok else f": it has {a['default']}"))
                elif a["default"] is None:
                    print(f"not ok - {where}: it has no default")
                elif re.fullmatch(r"-?[0-9.]+|null|true|false|'.*'", doc_default):
                    ok = norm_default(doc_default) == norm_default(a["default"])
                    print(f"{'ok' if ok else 'not ok'} - {where}" + ("" if ok else f": it is {a['default']}"))
                else:  # an expression (`now()` for a null the function fills in)
                    print(f"ok - {where} (has a default)")


def main():
    functions_json, app_file, *paths = sys.argv[1:]
    functions = {}
    for f in json.load(open(functions_json)):
        functions.setdefault(f["name"], []).append(pg_args(f["args"]))
    docs = [(p, open(p, encoding="utf-8").read()) for p in paths]
    n = check_calls(docs, functions)
    print(f"{'ok' if n >= 30 else 'not ok'} - found the docs' boxcar.fn(...) calls ({n})")
    check_tables(docs, functions)
    alltext = "\n".join(t for _, t in docs)
    app = [l.strip() for l in open(app_file) if l.strip()]
    print(f"{'ok' if len(app) >= 10 else 'not ok'} - read the app role's functions ({len(app)})")
    for name in app:
        documented = re.search(rf"(\bboxcar\.|`){name}\(", alltext)
        print(f"{'ok' if documented else 'not ok'} - the app's function {name} is documented")


main()
