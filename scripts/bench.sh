#!/usr/bin/env bash
# `make bench`: every benchmark, each printing its figures beside its peers'.
set -uo pipefail
cd "$(dirname "$0")/.."
benches=("$@")
[[ ${#benches[@]} -eq 0 ]] && benches=(queue queue-sandbox fairshare sandbox storage workspace images webhooks webhooks-load replicas egress)
rc=0
for b in "${benches[@]}"; do
  script="scripts/bench-$b.sh"
  [[ -x $script ]] || continue
  echo "=== bench $b"
  "$script" || rc=1
done
exit $rc
