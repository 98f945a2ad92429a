#!/usr/bin/env bash
# End-to-end: real PostgreSQL, real worker processes, real jobs.  Each
# t_*.sh is one scenario with its own database, printing TAP lines.
set -uo pipefail
cd "$(dirname "$0")"
rc=0
for t in t_*.sh; do
  echo "# $t"
  bash "$t" || rc=1
done
exit $rc
