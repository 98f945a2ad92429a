# Loader variables in a spec's env (LD_PRELOAD, LD_LIBRARY_PATH …) are
# allowed (README, "Loader variables in env are allowed"): they reach the
# job's own processes, and nothing boxcar runs outside them loads code from
# them.  The job builds a preload library in its startup script; the main
# command runs with LD_PRELOAD pointing at it.  Every process that loads it
# says so on stderr, naming its executable.  The claim is about the
# sandbox helper, so this runs on the isolating backend whatever E2E_SANDBOX
# says (with --sandbox none the job is a plain process of the worker's user).
source "$(dirname "$0")/../lib.sh"
fresh_db e2e_env_loader
start_worker env-w --concurrency 1 --lease 10s --poll-interval 500ms --sandbox namespace
spec=$(python3 - <<'PY'
import json
src = r'''#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void)
{
        char exe[512];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = '\0';
        fprintf(stderr, "PRELOADED %s\n", exe);
}
'''
print(json.dumps({
    "command": ["/bin/true"],
    "startup_script": "cat > /tmp/p.c <<'EOF'\n" + src + "EOF\ncc -shared -fPIC -o /workspace/p.so /tmp/p.c\n",
    "startup_timeout_s": 120,
    "env": {"LD_PRELOAD": "/workspace/p.so", "LD_LIBRARY_PATH": "/nonexistent/lib",
            "PYTHONPATH": "/nonexistent/py", "NODE_OPTIONS": "--max-old-space-size=64"},
}))
PY
)
id=$(printf '%s' "$spec" | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$id" >/dev/null
is "the job with loader variables ran normally" \
   "$(job_field "$id" "status || ' ' || (result->'startup'->>'exit_code')")" "succeeded 0"
stderr=$(job_field "$id" "result->>'stderr'")
check "its own command loaded the library (LD_PRELOAD reached the job)" \
   grep -qx "PRELOADED /usr/bin/true" <<<"$stderr"
is "no boxcar program loaded it (worker, sandbox helper)" \
   "$(grep PRELOADED <<<"$stderr" | grep -c boxcar)" "0"
is "nothing in the worker's log loaded it either" \
   "$(grep -c PRELOADED "$BOXCAR_DEV/test-logs/env-w.log")" "0"
again=$("$BOXCAR" enqueue -- /bin/echo after)
"$BOXCAR" status --wait "$again" >/dev/null
is "the next job on the same worker is unaffected" \
   "$(job_field "$again" "status || ' ' || trim(result->>'stdout', E'\\n') || ' ' || length(result->>'stderr')")" \
   "succeeded after 0"
tap_done
