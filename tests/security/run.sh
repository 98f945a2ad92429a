#!/usr/bin/env bash
# The security suite, twice: every check in checks.sh against a cold
# sandbox (boxcar-sandbox as spawned per job) and against a warm one (the
# worker's pool: boxcar-sandbox --warm, handed the job, through
# sandbox-warm-run).  Each result line says which path it tested.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"
here=tests/security
build=${BOXCAR_BUILD:-build}
warm=${SANDBOX_WARM_BIN:-$BOXCAR_ROOT/$build/sandbox-warm-run}
rc=0
label() { sed -u -E "s/^((not )?ok [0-9]+ - )/\1[$1] /"; }
bash "$here/checks.sh" | label cold || rc=1
if [[ $(id -u) -ne 0 ]]; then
  # Unprivileged there are no warm sandboxes (--warm needs root): running
  # the checks "warm" would only run them cold again.
  echo "ok 1 - [warm] the warm path # SKIP needs root"
elif [[ -x $warm ]]; then
  SANDBOX_BIN=$warm bash "$here/checks.sh" | label warm || rc=1
else
  echo "not ok 1 - [warm] $warm missing (make $build/sandbox-warm-run)"; rc=1
fi
exit $rc
