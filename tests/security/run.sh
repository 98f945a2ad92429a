#!/usr/bin/env bash
# The security suite, twice: every check in checks.sh against a cold
# sandbox (boxcar-sandbox as spawned per job) and against a warm one (the
# worker's pool: boxcar-sandbox --warm, handed the job, through
# sandbox-warm-run).  Each result line says which path it tested.  Then
# the warm sandboxes' preset limits, then attacks on sessions through a
# real worker (sessions.sh), and each sandbox's own host ids
# (identities.sh).  BOXCAR_T (`make test SUITES=security T=cold`) picks
# parts: cold, warm, preset, identities, sessions (tests/select.sh).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
cd "$BOXCAR_ROOT"
[[ ${1:-} == --list ]] && { printf '%s\n' cold warm preset identities sessions; exit 0; }
t_pick cold warm preset identities sessions >/dev/null || exit 1
here=tests/security
build=${BOXCAR_BUILD:-build}
warm=${SANDBOX_WARM_BIN:-$BOXCAR_ROOT/$build/sandbox-warm-run}
rc=0
label() { sed -u -E "s/^((not )?ok [0-9]+ - )/\1[$1] /"; }
if t_selected cold; then
  bash "$here/checks.sh" | label cold || rc=1
fi
if ! t_selected warm; then :
elif [[ $(id -u) -ne 0 ]]; then
  # Unprivileged there are no warm sandboxes (--warm needs root): running
  # the checks "warm" would only run them cold again.
  echo "ok 1 - [warm] the warm path # SKIP needs root"
elif [[ -x $warm ]]; then
  SANDBOX_BIN=$warm bash "$here/checks.sh" | label warm || rc=1
else
  echo "not ok 1 - [warm] $warm missing (make $build/sandbox-warm-run)"; rc=1
fi
# The worker's warm sandboxes are made with the spec's default limits
# already in their cgroup, and a job that keeps them has none written at
# its handoff (sandbox/warm.c): the ones made ahead must hold as if written
# then, a job's other values replace them, lower or higher, and a job
# cannot lift one.
if t_selected preset && [[ $(id -u) -eq 0 && -x $warm ]]; then
  n=0
  preset() {  # preset "MEMORY PIDS CPUS" EXPECTED-STATUS DESCRIPTION -- OPTIONS AND COMMAND
    local limits=$1 want=$2 what=$3; shift 4
    local out got; out=$(SANDBOX_WARM_LIMITS=$limits "$warm" "$@" 2>&1); got=$?
    n=$((n + 1))
    if [[ $got == "$want" ]]; then echo "ok $n - [preset] $what"
    else echo "not ok $n - [preset] $what"; echo "# status $got, want $want: ${out:0:300}"; rc=1; fi
  }
  alloc=(python3 -c 'x = bytearray(200 << 20)')
  preset "64 32 1" 137 "made with 64 MiB, a job asking 64 MiB: 200 MiB is OOM-killed" -- \
    --memory-mb 64 --pids 32 --cpus 1 -- "${alloc[@]}"
  preset "256 32 1" 137 "made with 256 MiB, a job asking 64 MiB: its 64 apply" -- \
    --memory-mb 64 --pids 32 --cpus 1 -- "${alloc[@]}"
  preset "64 32 1" 0 "made with 64 MiB, a job asking 512 MiB: 200 MiB fits" -- \
    --memory-mb 512 --pids 32 --cpus 1 -- "${alloc[@]}"
  # Exits 0 once a fork is refused with fewer than 8 children, 4 if none is.
  forks=(python3 -c 'import os, sys, time
n = 0
try:
    for i in range(20):
        if os.fork() == 0:
            time.sleep(2); os._exit(0)
        n += 1
except OSError:
    sys.exit(0 if n < 8 else 3)
sys.exit(4)')
  preset "64 8 1" 0 "made with 8 pids, a job asking 8: its 8th process is refused" -- \
    --memory-mb 64 --pids 8 --cpus 1 -- "${forks[@]}"
  preset "64 32 1" 120 "a job without a memory limit cannot lift the sandbox's: refused before it runs" -- \
    --pids 32 --cpus 1 -- sh -c 'echo ran'
fi
if t_selected identities; then
  bash "$here/identities.sh" | label identities || rc=1
fi
if t_selected sessions; then
  bash "$here/sessions.sh" | label sessions || rc=1
fi
exit $rc
