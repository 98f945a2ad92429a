#!/usr/bin/env python3
"""Writes a pgTAP test that enqueues every spec of tests/data/bad_specs.tsv
and expects BAD_SPEC with exactly the message the C validator gives."""
import sys

def quote(s):
    return "'" + s.replace("'", "''") + "'"

cases = []
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        message, spec = line.split("\t", 1)
        cases.append((message, spec))

print("begin;")
print(f"select plan({len(cases) + 1});")
for message, spec in cases:
    call = f"select boxcar.enqueue('default', {quote(spec)}::jsonb)"
    print(f"select throws_ok({quote(call)}, '22023', {quote('BAD_SPEC: ' + message)}, "
          f"{quote('enqueue rejects ' + spec[:60])});")
print("select is((select count(*)::int from boxcar.jobs), 0, 'no malformed job was stored');")
print("select * from finish();")
print("rollback;")
