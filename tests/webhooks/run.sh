#!/usr/bin/env bash
# Webhooks end to end: real workers deliver to a real HTTP receiver
# (receiver.py) that checks every signature with its own code.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"
bash tests/webhooks/test_receiver_selftest.sh
bash tests/webhooks/t_delivery.sh
bash tests/webhooks/t_recorded.sh
bash tests/webhooks/t_load.sh
