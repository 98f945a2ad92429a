#!/usr/bin/env bash
# Chaos at scale (chaos.sh), twice: CHAOS_JOBS jobs (10,000 here; `make
# chaos` runs 100,000) over 4 workers without sandboxes, then 2,000 (or
# CHAOS_SANDBOX_JOBS) over 4 workers running every job in a sandbox; both
# under SIGKILLs every few seconds, a PostgreSQL restart, S3 down for 30 s
# and the webhook receiver down for a minute; nothing lost, nothing run or
# delivered twice, and nothing left by the sandboxes.  About 7 minutes.
# BOXCAR_T (`make chaos T=namespace`) runs one of the two: none, namespace
# (tests/select.sh).
set -uo pipefail
cd "$(dirname "$0")"
source ../select.sh
[[ ${1:-} == --list ]] && { printf '%s\n' none namespace; exit 0; }
t_pick none namespace >/dev/null || exit 1
label() { sed -u -E "s/^((not )?ok [0-9]+ - )/\1[$1] /"; }
rc=0
if t_selected none; then
  bash chaos.sh | label none || rc=1
fi
if t_selected namespace; then
  CHAOS_SANDBOX=namespace CHAOS_JOBS=${CHAOS_SANDBOX_JOBS:-2000} bash chaos.sh | label namespace || rc=1
fi
exit $rc
