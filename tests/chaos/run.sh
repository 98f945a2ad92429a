#!/usr/bin/env bash
# Chaos at scale (chaos.sh): CHAOS_JOBS jobs (10,000 here; `make chaos`
# runs 100,000) over 4 workers killed with SIGKILL every few seconds, a
# PostgreSQL restart, S3 down for 30 s and the webhook receiver down for a
# minute; nothing lost, nothing run or delivered twice.  About 4 minutes.
set -uo pipefail
cd "$(dirname "$0")"
bash chaos.sh
