#!/usr/bin/env python3
"""Differential test of the two spec validators over a corpus directory:
the C one (spec-check, one verdict per file) and the SQL one
(boxcar.spec_error, through psql).  Prints TAP: one line for acceptance
(any spec one accepts and the other refuses is listed), one for messages.

  spec_diff.py SPEC_CHECK DATABASE_URL DIR...

Inputs PostgreSQL cannot take as text (NUL bytes, invalid UTF-8) cannot
reach the SQL validator: the C one must refuse them.  Where both refuse a
spec with several faults they may name different ones (each checks in its
own order): those are counted, not failed."""
import base64, json, os, subprocess, sys, tempfile

check, url, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
files = sorted(os.path.join(d, f) for d in dirs if os.path.isdir(d) for f in os.listdir(d))
texts, unholdable = [], []
for path in files:
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        unholdable.append(path)
        continue
    if "\0" in text:
        unholdable.append(path)
        continue
    texts.append((path, text))

# NUL-ended verdicts (a message may hold any other character), line
# breaks made spaces as on the SQL side.
def c_verdicts(paths):
    if not paths:
        return []
    out = subprocess.run([check] + paths, capture_output=True, text=True, errors="replace",
                         check=True).stdout.split("\0")[:-1]
    assert len(out) == len(paths), f"spec-check gave {len(out)} verdicts for {len(paths)} files"
    return [" ".join(v.splitlines()) for v in out]

c_out = c_verdicts([p for p, _ in texts])
c_unholdable = [p for p, v in zip(unholdable, c_verdicts(unholdable)) if v == "OK"]

# One statement: a temporary function that turns a cast error into a verdict.
sql = ["create function pg_temp.verdict(t text) returns text language plpgsql as $f$",
       "begin return coalesce(boxcar.spec_error(t::jsonb), 'OK');",
       "exception when others then return 'not valid JSON: ' || sqlerrm; end $f$;"]
for i, (_, text) in enumerate(texts):
    tag = "q"
    while f"${tag}$" in text:
        tag += "q"
    sql.append(f"select {i} || chr(9) || encode(convert_to(pg_temp.verdict(${tag}${text}${tag}$), 'UTF8'), 'base64');")
res = subprocess.run(["psql", "-X", "-qtA", "-v", "ON_ERROR_STOP=1", url], input="\n".join(sql),
                     capture_output=True, text=True, check=True)
# base64 (wrapped over lines by encode) keeps a verdict whole whatever it holds.
sql_out, cur = {}, None
for line in res.stdout.split("\n"):
    if "\t" in line:
        cur, part = line.split("\t", 1)
        cur = int(cur)
        sql_out[cur] = part
    elif cur is not None and line:
        sql_out[cur] += line
sql_out = {i: " ".join(base64.b64decode(v).decode("utf-8", "replace").splitlines())
           for i, v in sql_out.items()}

# The C validator reads specs as stored, where the database has sealed
# every plaintext secret (sql/12_secrets.sql: a trigger between the two),
# so it refuses a plaintext one.  A spec the SQL validator accepts with
# plaintext secrets is given to C again as it would be stored: each such
# value a sealed one of the stored shape.
def as_stored(text):
    spec = json.loads(text)
    spec["secrets"] = {k: v if isinstance(v, dict) else {"sealed": "c2VhbGVk", "key": "0" * 16}
                       for k, v in spec["secrets"].items()}
    return json.dumps(spec)

resealed = [i for i, (_, text) in enumerate(texts)
            if sql_out.get(i) == "OK" and " not sealed (" in c_out[i]]
if resealed:
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in resealed:
            paths.append(os.path.join(tmp, str(i)))
            with open(paths[-1], "w") as f:
                f.write(as_stored(texts[i][1]))
        for i, v in zip(resealed, c_verdicts(paths)):
            c_out[i] = v

mismatch, msgdiff = [], 0
for i, (path, text) in enumerate(texts):
    c, s = c_out[i], sql_out.get(i, "?")
    if (c == "OK") != (s == "OK"):
        mismatch.append((path, c, s))
    elif c != s and not c.startswith("spec: not valid JSON") and not s.startswith("not valid JSON"):
        msgdiff += 1
        if msgdiff <= 10:
            print(f"#   {os.path.basename(path)}: C says {c[:100]!r}, SQL says {s[:100]!r}")
n = len(texts)
mismatch += [(p, "OK", "(PostgreSQL cannot hold it)") for p in c_unholdable]
if mismatch:
    print(f"not ok 1 - SQL and C validators disagree on {len(mismatch)} of {n + len(unholdable)} specs")
    for path, c, s in mismatch[:10]:
        print(f"#   {os.path.basename(path)}: C says {c[:100]!r}, SQL says {s[:100]!r}")
else:
    print(f"ok 1 - SQL and C validators accept and refuse the same {n + len(unholdable)} specs "
          f"({sum(1 for x in c_out if x == 'OK')} accepted; {len(unholdable)} that PostgreSQL "
          f"cannot hold as text refused by C)")
if msgdiff:
    print(f"# {msgdiff} specs with several faults are refused naming different faults")
print("1..1")
sys.exit(1 if mismatch else 0)
