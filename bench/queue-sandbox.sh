#!/usr/bin/env bash
# Queue benchmark with sandboxed jobs (issue 3): boxcar --sandbox namespace
# against graphile-worker spawning bwrap, see bench/queue.sh.
#   bench/queue-sandbox.sh    (or `make bench BENCHES=queue-sandbox`)
BENCH_SANDBOX=1 exec "$(dirname "$0")/queue.sh" "$@"
