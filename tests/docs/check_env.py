#!/usr/bin/env python3
"""The README's tables of variables agree with the code.

`boxcar worker --help` and `boxcar ui --help` end with a table built from
their option tables (worker/config/config_table.c, worker/cli/cmd_ui.c):
flag, variable, default.  The README's `boxcar worker` flag table and its
`boxcar ui` table must hold the same rows: every flag of the code's table
with its variable and its default, word for word (backticks aside), and no
flag the code's table does not have.  A new flag without its README row,
or a row whose variable or default disagrees with the code, fails.

Prints TAP lines "ok - ..." / "not ok - ..." (run.sh numbers them).
usage: check_env.py README BOXCAR
"""
import re
import subprocess
import sys

README, BOXCAR = sys.argv[1:3]


def report(ok, desc, detail=None):
    print(("ok - " if ok else "not ok - ") + desc)
    if not ok and detail:
        for line in str(detail).splitlines()[:30]:
            print("# " + line)


def code_table(command):
    """{flag: (variable, default)} from the end of `boxcar COMMAND --help`."""
    p = subprocess.run([BOXCAR, command, "--help"], capture_output=True, text=True, timeout=20,
                       env={"PATH": "/usr/bin:/bin"})
    rows = {}
    lines = p.stdout.splitlines()
    head = [i for i, l in enumerate(lines) if re.match(r"\s+FLAG\s+VARIABLE\s+DEFAULT$", l)]
    for line in lines[head[-1] + 1:] if head else []:
        m = re.match(r"\s+(--[a-z][a-z0-9-]*)\s+([A-Z][A-Z0-9_]*)\s+(.*?)\s*$", line)
        if not m:
            break
        rows[m.group(1)] = (m.group(2), m.group(3))
    return p.returncode, rows


def readme_table(text, heading):
    """{flag: (variable, default)} of the first table after HEADING: the
    first cell's flag, the cell that is one `VARIABLE`, and the next."""
    i = text.find(heading)
    if i < 0:
        return None
    m = re.search(r"\n\n(\|.*?)(?:\n\n|\Z)", text[i:], re.S)
    if not m:
        return None
    header = [c.strip() for c in m.group(1).splitlines()[0].strip("|").split("|")]
    if "variable" not in header or "default" not in header:
        return None
    iv, idf = header.index("variable"), header.index("default")
    rows = {}
    for row in m.group(1).splitlines()[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
        flag = re.search(r"`(--[a-z][a-z0-9-]*)", cells[0])
        if flag:
            clean = lambda c: c.replace("`", "").replace("\\|", "|").strip()
            rows[flag.group(1)] = (clean(cells[iv]), clean(cells[idf]))
    return rows


readme = open(README, encoding="utf-8").read()
for command, heading in (("worker", "`boxcar worker` flags"),
                         ("ui", "`boxcar ui` flags' variables")):
    rc, code = code_table(command)
    report(rc == 0 and len(code) >= (35 if command == "worker" else 6),
           f"boxcar {command} --help ends with its table of variables ({len(code)} flags)")
    doc = readme_table(readme, heading)
    report(doc is not None, f"the README has the {command} table with variable and default columns")
    doc = doc or {}
    missing = sorted(set(code) - set(doc))
    report(not missing, f"the README's {command} table has a row for every flag of the code's",
           "no row: " + " ".join(missing))
    # A flag without a variable (--print-config) says so with "—".
    extra = sorted(f for f in set(doc) - set(code) - {"--help"} if doc[f][0] != "—")
    report(not extra, f"the README's {command} table has no flag the code's table lacks",
           "not in the code: " + " ".join(extra))
    wrong = [f"{f}: README {doc[f]}, code {code[f]}" for f in sorted(set(code) & set(doc))
             if doc[f] != code[f]]
    report(not wrong, f"the README's {command} rows give the code's variable and default",
           "\n".join(wrong))
    # Each variable is one flag's: two flags cannot share a variable.
    names = [v for v, _ in code.values()]
    report(len(names) == len(set(names)), f"boxcar {command}'s variables are distinct")
