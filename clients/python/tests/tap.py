"""A few lines of TAP for the client's tests: numbered ok / not ok lines,
an exception in a scenario is a failure naming it, and the plan at the end."""

import os
import sys
import traceback

n = int(os.environ.get("TAP_START", "0"))
failed = 0


def ok(cond, desc, *diag):
    global n, failed
    n += 1
    if cond:
        print("ok %d - %s" % (n, desc), flush=True)
    else:
        failed += 1
        print("not ok %d - %s" % (n, desc), flush=True)
        for d in diag:
            for line in str(d).splitlines():
                print("#   " + line, flush=True)
    return bool(cond)


def eq(got, want, desc, *diag):
    return ok(got == want, desc, "got:  %r" % (got,), "want: %r" % (want,), *diag)


def skip(desc, why):
    global n
    n += 1
    print("ok %d - %s # SKIP %s" % (n, desc, why), flush=True)


def scenario(fn):
    """Runs fn; an exception fails it (the checks it made still count)."""
    try:
        fn()
    except Exception:
        ok(False, "%s raised" % fn.__name__, traceback.format_exc())
    return fn


def done():
    print("1..%d" % n, flush=True)
    sys.exit(1 if failed else 0)
