#!/usr/bin/env python3
"""The README's table of test suites (Development) agrees with the suites.

  1. It has one row per suite of scripts/test.sh's ALL_SUITES, and no other.
  2. The test names a row gives (`name` in its second column) are names
     its suite's `run.sh --list` prints, or their base names.  Only
     runners that take --list (`[[ ${1:-} == --list ]]`) are asked: another
     would run its whole suite.

usage: check_suites.py README ROOT
Prints TAP lines "ok - ..." / "not ok - ..." (run.sh numbers them).
"""
import os
import re
import subprocess
import sys

readme, root = sys.argv[1:3]
text = open(readme, encoding="utf-8").read()
test_sh = open(os.path.join(root, "scripts/test.sh")).read()
suites = re.search(r"^ALL_SUITES=\(([^)]*)\)", test_sh, re.M).group(1).split()
rows = {m.group(1): m.group(2)
        for m in re.finditer(r"^  \| ([a-z0-9]+) \| (.*) \| .* \|$", text, re.M)
        if m.group(1) != "suite"}  # the header
missing = [s for s in suites if s not in rows]
extra = [r for r in rows if r not in suites]
ok = not missing and not extra
print(f"{'ok' if ok else 'not ok'} - the README's suite table has a row for each suite "
      f"of scripts/test.sh ({len(suites)})"
      + (f"; missing: {' '.join(missing)}" if missing else "")
      + (f"; not a suite: {' '.join(extra)}" if extra else ""))
for s in suites:
    runner = os.path.join(root, "tests", s, "run.sh")
    if s not in rows or "[[ ${1:-} == --list ]]" not in open(runner).read():
        continue
    env = dict(os.environ, BOXCAR_T="")
    names = subprocess.run([runner, "--list"], capture_output=True, text=True, env=env,
                           cwd=root, timeout=60).stdout.split()
    known = set(names) | {n.rsplit("/", 1)[-1] for n in names}
    unknown = [n for n in re.findall(r"`([a-z0-9_/]+)`", rows[s]) if n not in known]
    print(f"{'ok' if not unknown else 'not ok'} - the README's {s} row names only tests "
          f"of its suite" + (f"; not: {' '.join(unknown)}" if unknown else ""))
