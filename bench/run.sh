#!/usr/bin/env bash
# `make bench`: every benchmark, each printing its figures beside its
# peers'; `make bench BENCHES="queue egress"` (or bench/run.sh queue
# egress) some of them.  A benchmark is bench/<name>.sh, run from the
# repository's root; each starts what it needs (PostgreSQL, S3) and builds
# what it runs.  A name with no script is an error, not a silent skip.
set -uo pipefail
cd "$(dirname "$0")/.."
benches=("$@")
[[ ${#benches[@]} -eq 0 ]] && benches=(queue enqueue queue-sandbox fairshare sandbox storage workspace session images webhooks webhooks-load replicas egress)
rc=0
for b in "${benches[@]}"; do
  script="bench/$b.sh"
  if [[ ! -x $script || $b == run ]]; then
    echo "bench: no benchmark $b (bench/$b.sh); there are:" \
      $(cd bench && ls *.sh | sed 's/\.sh$//' | grep -vx run) >&2
    rc=1; continue
  fi
  echo "=== bench $b"
  "$script" || rc=1
done
exit $rc
