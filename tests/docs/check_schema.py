#!/usr/bin/env python3
"""docs/job-spec.schema.json against what the validators enforce.

Prints TAP lines ("ok - ..." / "not ok - ...", numbered by run.sh):
  - the schema is a valid draft 2020-12 schema;
  - every malformed spec of tests/data/bad_specs.tsv is rejected, except the
    rows whose rule JSON Schema cannot express (INEXPRESSIBLE below, listed in
    docs/job-spec.md), which must still be accepted: when the schema learns
    one, this list and the doc must change with it;
  - every example spec (README.md, docs/job-spec.md, scripts/demo.sh) is
    valid.  The examples are also written to EXAMPLES_OUT, one per line, for
    run.sh to check against the SQL validator.

usage: check_schema.py ROOT EXAMPLES_OUT
"""
import json
import re
import sys

import jsonschema

ROOT, EXAMPLES_OUT = sys.argv[1], sys.argv[2]

# Corpus messages (their rule part) that JSON Schema cannot express.
INEXPRESSIBLE = {
    "overlaps another volume": "volume mounts must not overlap",
    "duplicate volume name": "volume names must be unique",
    "mount: longer than 1024 bytes": "lengths count bytes (maxLength counts characters)",
    "nested deeper than 64 levels": "no value is nested deeper than 64 levels",
    "bits set past the prefix": "a network rule's address has no bits set past its prefix",
    "a session's files are in its own storage": "a session job's artifact.storage is its own",
    "must name another session": "a session forks another session, not itself",
}


def report(ok, desc, detail=None):
    print(("ok - " if ok else "not ok - ") + desc)
    if not ok and detail:
        for line in str(detail).splitlines()[:12]:
            print("# " + line)


def read(path):
    with open(f"{ROOT}/{path}", encoding="utf-8") as f:
        return f.read()


schema = json.loads(read("docs/job-spec.schema.json"))
try:
    jsonschema.Draft202012Validator.check_schema(schema)
    report(True, "job-spec.schema.json is a valid draft 2020-12 schema")
except jsonschema.SchemaError as e:
    report(False, "job-spec.schema.json is a valid draft 2020-12 schema", e)
    sys.exit(0)
validator = jsonschema.Draft202012Validator(schema)

# ---- the malformed-spec corpus -------------------------------------------------
rows = []
for line in read("tests/data/bad_specs.tsv").splitlines():
    if not line or line.startswith("#"):
        continue
    message, spec = line.split("\t", 1)
    rows.append((message, json.loads(spec)))
accepted_wrongly, inexpressible, now_rejected = [], [], []
for message, spec in rows:
    rule = next((r for r in INEXPRESSIBLE if r in message), None)
    valid = validator.is_valid(spec)
    if rule:
        inexpressible.append(rule)
        if not valid:
            now_rejected.append(message)
    elif valid:
        accepted_wrongly.append(f"{message}\t{json.dumps(spec)}")
report(not accepted_wrongly and len(rows) >= 60,
       f"the schema rejects every expressible malformed spec of the corpus "
       f"({len(rows) - len(inexpressible)} of {len(rows)})",
       "\n".join(accepted_wrongly) or f"only {len(rows)} rows")
# Each documented rule has a row (some have several).
report(set(inexpressible) == set(INEXPRESSIBLE) and not now_rejected,
       "the corpus rows the schema cannot express are the documented ones: "
       + "; ".join(INEXPRESSIBLE.values()),
       "now rejected (update INEXPRESSIBLE and docs/job-spec.md): " + ", ".join(now_rejected)
       if now_rejected else f"found rows for {sorted(set(inexpressible))}")
doc = read("docs/job-spec.md")
report(all(w in doc for w in ("overlap", "unique", "64 levels", "past its prefix",
                              "`session-` followed by its", "is not `session.id`")),
       "docs/job-spec.md names the rules the schema cannot express")

# ---- the examples ------------------------------------------------------------------
examples = []  # (where, spec)
readme = read("README.md")
# SQL examples: spec => $${...}$$ and spec => '{...}'.
for m in re.finditer(r"spec\s*=>\s*\$\$(.*?)\$\$", readme, re.S):
    examples.append(("README enqueue example", m.group(1)))
for m in re.finditer(r"spec\s*=>\s*'(\{.*?\})'", readme):
    examples.append(("README enqueue example", m.group(1)))
for i, m in enumerate(re.finditer(r"```json\n(.*?)```", doc, re.S)):
    examples.append((f"docs/job-spec.md example {i + 1}", m.group(1)))
demo = read("scripts/demo.sh")
m = re.search(r"spec=\$\(cat <<JSON\n(.*?)\nJSON\n", demo, re.S)
if m:
    examples.append(("scripts/demo.sh spec",
                     m.group(1).replace("$hook", "http://127.0.0.1:8080/hooks/boxcar")))
report(len(examples) >= 4 and m is not None,
       f"found the example specs ({len(examples)}: README, docs, demo)")
with open(EXAMPLES_OUT, "w", encoding="utf-8") as out:
    for where, text in examples:
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as e:
            report(False, f"{where} is JSON", e)
            continue
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in validator.iter_errors(spec)]
        report(not errors, f"{where} is valid by the schema", "\n".join(errors))
        out.write(where + "\t" + json.dumps(spec) + "\n")
