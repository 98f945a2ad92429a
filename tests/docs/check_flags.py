#!/usr/bin/env python3
"""README.md, `boxcar help ...` and the binary agree on the flags.

  1. Every flag a command's help defines (in its usage lines or at the start
     of an option line) appears in the README's reference for that command:
     the command-line block, the worker flag table, or an inline
     `boxcar CMD ... --flag` span.  --help and --database-url are documented
     once for all commands.
  2. Every flag the README gives a command is accepted by the binary: the
     command run with the flag behaves differently from the same command run
     with an unknown flag in its place (which must be a usage error, exit 2).
     The database URL points at a closed port, so nothing is changed.
  3. Every --flag the README mentions anywhere is defined by some help text
     (boxcar's or boxcar-sandbox's).
  4. Every flag the sources parse (getopt tables, strcmp on argv in worker/
     and sandbox/) is defined by some help text.

Prints TAP lines "ok - ..." / "not ok - ..." (run.sh numbers them).
usage: check_flags.py README BOXCAR BOXCAR_SANDBOX SOURCE_ROOT
"""
import os
import re
import subprocess
import sys

README, BOXCAR, SANDBOX, SOURCE_ROOT = sys.argv[1:5]
UNKNOWN = "--zz-not-a-flag"
UUID = "00000000-0000-0000-0000-000000000000"
# Arguments that make each command's invocation complete apart from the flag
# under test.  worker gets --help after the flag: getopt reads the flag
# first (an unknown flag or a bad value stops there), then --help exits 0
# before anything connects.
SAMPLE_ARGS = {
    "": [], "migrate": [], "worker": ["--help"], "worker drain": ["w-1"],
    "enqueue": ["--", "true"], "status": [UUID], "cancel": [UUID], "events": [UUID],
    "logs": [UUID], "storage push": ["n", "/nonexistent"], "storage pull": ["n", "/nonexistent"],
    "storage ls": [], "storage url": ["n"], "storage rm": ["n"], "storage retain": ["n"],
    "storage gc": [], "webhooks ls": [], "webhooks retry": ["1"],
    "webhooks verify": [], "webhooks secret": ["--scope", "s"],
    "webhooks rotate": ["--scope", "s"], "sandbox detect": [], "version": [], "help": [],
    "schedule add": ["n", "--cron", "@daily", "--", "true"], "schedule ls": [],
    "schedule rm": ["n"], "schedule pause": ["n"], "schedule resume": ["n"],
    "queue config": ["q"], "queue pause": ["q"], "queue resume": ["q"], "queue ls": [],
    "queue caps": ["q"], "queue show": ["q"], "quota set": ["s"], "quota show": [],
    "jobs ls": [], "jobs retry": [UUID], "queues": [], "workers": [], "ui": [],
    "sessions": [], "sessions end": ["s1"],
    "secrets keygen": ["--out", "/nonexistent"], "secrets add-key": ["/nonexistent"],
    "secrets keys": [], "secrets retire": ["0123456789abcdef"],
}
GLOBAL = {"--help", "--database-url"}
FLAG = r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-z])(?![\w-])"

results = []


def report(ok, desc, detail=None):
    print(("ok - " if ok else "not ok - ") + desc)
    if not ok and detail:
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def run(argv, env=None):
    e = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8",
         "DATABASE_URL": "postgresql://boxcar@127.0.0.1:1/none?connect_timeout=2"}
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=e,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


# ---- help texts -----------------------------------------------------------------
def help_flags(text):
    """Flags a help text defines: in its usage lines (up to the first empty
    line) and at the start of option lines."""
    flags = set()
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i].strip():
        flags |= set(re.findall(FLAG, lines[i]))
        i += 1
    for line in lines[i:]:
        m = re.match(r"\s+(-[a-z], )?--[a-z]", line)
        if m:
            # "  --id ID, --timestamp TS, --signature SIG": every flag before the
            # description (two or more spaces) counts.
            head = re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0]
            flags |= set(re.findall(FLAG, head))
    return flags


rc, top = run([BOXCAR, "--help"])
commands = re.findall(r"^  ([a-z]+) ", top.split("Commands:", 1)[-1], re.M)
report(rc == 0 and {"worker", "enqueue", "storage", "webhooks"} <= set(commands),
       f"boxcar --help lists the commands ({', '.join(commands)})", top)
helps = {}
for c in commands:
    if c == "help":
        continue
    rc, text = run([BOXCAR, "help", c])
    if rc != 0:
        report(False, f"boxcar help {c} exits 0", text)
    helps[c] = text
# "boxcar COMMAND --help" (README) prints the same as "boxcar help COMMAND".
for c, text in sorted(helps.items()):
    rc, out = run([BOXCAR, c, "--help"])
    report(rc == 0 and out == text, f"boxcar {c} --help exits 0 and prints boxcar help {c}",
           f"exit {rc}: {out[:300]}")
rc, helps["webhooks verify"] = run([BOXCAR, "webhooks", "verify", "--help"])
rc2, sandbox_help = run([SANDBOX, "--help"])
all_help_flags = set().union(*(help_flags(t) for t in helps.values()), help_flags(top),
                             re.findall(FLAG, sandbox_help), {"--version"})

# ---- the README reference ------------------------------------------------------------
readme = open(README, encoding="utf-8").read()
cli_block = re.search(r"## The command line\n+```\n(.*?)```", readme, re.S)
report(cli_block is not None, "README has a command-line block")
cli_block = cli_block.group(1) if cli_block else ""


def command_path(text):
    """'boxcar storage push [--kind ...' -> 'storage push'."""
    words = []
    for w in text.split()[1:]:
        if not re.fullmatch(r"[a-z]+", w):
            break
        words.append(w)
    path = " ".join(words)
    while path and path not in SAMPLE_ARGS:
        path = path.rsplit(" ", 1)[0] if " " in path else ""
    return path or " ".join(words[:1])


def value_follows(text, flag):
    """Whether the README shows a value after the flag (a metavar such as N,
    DUR, FILE, or choices such as text|json)."""
    m = re.search(re.escape(flag) + r"(?:[ =]([^\s\]\)|`]+))?", text)
    v = m.group(1) if m else None
    return bool(v) and not v.startswith("-")


readme_flags = {}  # path -> {flag: takes_value}


def add(path, text, reference=True):
    """Flags of the reference (command-line block, worker table) come with
    their arity; inline spans elsewhere only add flags not seen there."""
    for flag in re.findall(FLAG, text):
        if flag == "-f" and path != "logs":
            continue
        flags = readme_flags.setdefault(path, {})
        if reference or flag not in flags:
            flags[flag] = value_follows(text, flag)


entries, cur = [], None
for line in cli_block.splitlines():
    if line.startswith("boxcar "):
        cur = [line]
        entries.append(cur)
    elif line.startswith(" ") and cur:
        cur.append(line)
for e in entries:
    # "boxcar version | boxcar --version | boxcar help [COMMAND] | ..." holds several.
    for part in re.split(r"\s\|\s(?=boxcar )", " ".join(x.strip() for x in e)):
        add(command_path(part), re.split(r"\s{3,}", part.strip(), maxsplit=1)[0])
table = re.search(r"`boxcar worker` flags.*?\n\n(\|.*?)\n\n", readme, re.S)
report(table is not None, "README has the worker flag table")
for row in (table.group(1).splitlines() if table else []):
    cell = row.split(" | ")[0]
    for span in re.findall(r"`([^`]*)`", cell):
        add("worker", span.replace("\\|", "|"))
for span in re.findall(r"`(boxcar [^`]*)`", readme, re.S):
    span = " ".join(span.split())
    if "--" in span or " -f" in span:
        add(command_path(span), span, reference=False)

# 1. help -> README
for c, text in sorted(helps.items()):
    want = help_flags(text) - GLOBAL
    have = set()
    for path, flags in readme_flags.items():
        if path in ("", c) or (path.startswith(c + " ") and not
                         (c == "webhooks" and path == "webhooks verify")):
            have |= set(flags)
    missing = sorted(want - have)
    report(not missing, f"README documents every flag of boxcar help {c} ({len(want)})",
           "missing: " + " ".join(missing))
report("--database-url" in cli_block or "`--database-url URL`" in readme,
       "README documents --database-url for the commands")

# 2. README -> binary
for path, flags in sorted(readme_flags.items()):
    if path not in SAMPLE_ARGS:
        report(False, f"the README's {path!r} is a known command (add it to SAMPLE_ARGS)")
        continue
    words = path.split()
    for flag, takes_value in sorted(flags.items()):
        value = ["VALUE"] if takes_value else []
        rc_u, out_u = run([BOXCAR, *words, UNKNOWN, *value, *SAMPLE_ARGS[path]])
        rc_f, out_f = run([BOXCAR, *words, flag, *value, *SAMPLE_ARGS[path]])
        norm_u = out_u.replace(UNKNOWN, "FLAG")
        norm_f = out_f.replace(flag, "FLAG")
        accepted = rc_u == 2 and (rc_f != rc_u or norm_f != norm_u)
        report(accepted, f"{' '.join(['boxcar', *words])} accepts {flag}{' VALUE' if takes_value else ''}",
               f"with the flag: exit {rc_f}: {out_f.strip()[:300]}\n"
               f"with an unknown flag instead: exit {rc_u}: {out_u.strip()[:300]}")
# The database URL flag, for every command whose help gives it.
for c, text in sorted(helps.items()):
    if "--database-url" not in help_flags(text):
        continue
    path = {"storage": "storage ls", "webhooks": "webhooks ls", "sandbox": "sandbox detect",
            "schedule": "schedule ls", "queue": "queue ls", "quota": "quota show",
            "jobs": "jobs ls", "secrets": "secrets keys"}.get(c, c)
    words = path.split()
    rc_u, out_u = run([BOXCAR, *words, UNKNOWN, "postgresql://x@127.0.0.1:1/none",
                       *SAMPLE_ARGS[path]])
    rc_f, out_f = run([BOXCAR, *words, "--database-url",
                       "postgresql://x@127.0.0.1:1/none?connect_timeout=2", *SAMPLE_ARGS[path]])
    report(rc_u == 2 and (rc_f, out_f) != (rc_u, out_u.replace(UNKNOWN, "--database-url")),
           f"boxcar {path} accepts --database-url URL",
           f"exit {rc_f}: {out_f.strip()[:300]}\nunknown flag: exit {rc_u}: {out_u.strip()[:300]}")

# 3. every --flag in the README exists somewhere
mentioned = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", readme))
unknown = sorted(mentioned - all_help_flags)
report(not unknown, f"every --flag the README mentions ({len(mentioned)}) is defined by a help text",
       "not in any help: " + " ".join(unknown))

# 4. every flag the sources parse is in some help text
parsed = set()
for d in ("worker", "sandbox"):
    for dirpath, _, names in sorted(os.walk(os.path.join(SOURCE_ROOT, d))):
        for name in sorted(n for n in names if n.endswith(".c")):
            src = open(os.path.join(dirpath, name), encoding="utf-8").read()
            parsed |= {"--" + n for n in re.findall(r'\{\s*"([a-z][a-z0-9-]*)",\s*(?:required|no|optional)_argument', src)}
            parsed |= set(re.findall(r'strn?cmp\((?:opt|a|argv\[[^]]+\]|verb), "(--?[a-z][a-z0-9-]*)=?"', src))
undocumented = sorted(parsed - all_help_flags - {"-h"})
report(len(parsed) >= 40 and not undocumented,
       f"every flag the sources parse ({len(parsed)}) is in a help text",
       "not in any help: " + " ".join(undocumented) if undocumented else f"only {len(parsed)} found")
