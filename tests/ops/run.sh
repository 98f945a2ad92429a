#!/usr/bin/env bash
# Ops suite, in parts (each sourced here, sharing $W and $BUILD):
#   t_deploy_files   the deployment files (compose, Dockerfile, KEDA, the
#                    systemd unit, /metrics' exposition format) are valid
#                    and say what they must; no Docker engine needed
#   t_worker_ops     a running worker as an operator sees it
#   t_pgbouncer      1,000 jobs through PgBouncer in transaction mode
#   t_deb            `make deb`'s package installed, run and purged (root)
#   t_docker_privs   the compose worker's privileges, without Docker
#   t_build          `make` installs nothing and names a missing library
#   t_kubernetes     deploy/kubernetes: yamllint, kubectl kustomize, the
#                    API schema, and true to the worker (no cluster)
#   t_compose        the image built with podman and deploy/podman/compose.yml
#                    run: jobs sandboxed on 2, then 3 replicas (root)
# BOXCAR_T (`make test SUITES=ops T=t_deb`) picks parts by name
# (tests/select.sh); --list prints the names.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
cd "$BOXCAR_ROOT"
names=(t_deploy_files t_worker_ops t_pgbouncer t_deb t_docker_privs t_build t_kubernetes t_compose)
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1

BUILD=${BOXCAR_BUILD:-build}
W=$(mktemp -d "${TMPDIR:-/tmp}/boxcar-ops.XXXXXX")
trap 'rm -rf "$W"; cleanup_bg' EXIT
have_yaml() { python3 -c 'import yaml' 2>/dev/null; }

for t in $picked; do
  ops_t0=$SECONDS
  source "tests/ops/$t.sh"
  echo "# $t: $((SECONDS - ops_t0)) s"
done

tap_done
