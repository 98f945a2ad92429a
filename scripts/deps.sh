#!/usr/bin/env bash
# Installs the Debian packages boxcar needs to build, run and test, only
# when some are missing, so it is cheap to call from every make target.
set -euo pipefail

BUILD_PKGS=(gcc make pkg-config libpq-dev libcurl4-openssl-dev libcjson-dev
            libarchive-dev libseccomp-dev libssl-dev libcmocka-dev
            libmicrohttpd-dev zlib1g-dev libsystemd-dev)
RUN_PKGS=(postgresql-15 postgresql-client-15 ca-certificates procps iproute2
          util-linux e2fsprogs)
# iptables: podman's network backend (netavark) sets up a container's
# network with it, and no package pulls it in; without it every image
# build's RUN step fails "netavark: No such file or directory".
TEST_PKGS=(postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl
           python3 python3-botocore python3-jsonschema python3-psycopg python3-build python3-venv curl bubblewrap hyperfine pgbouncer
           valgrind docker-compose nodejs npm clang libclang-rt-14-dev jq mmdebstrap
           podman podman-compose runc catatonit netavark aardvark-dns iptables
           qemu-system-x86 busybox-static cpio lintian man-db
           chromium clang-format clang-tidy cppcheck
           kubernetes-client yamllint python3-kubernetes
           radosgw ceph-mon ceph-osd)

want=("${BUILD_PKGS[@]}")
case "${1:-all}" in
  build) ;;
  run) want+=("${RUN_PKGS[@]}") ;;
  all) want+=("${RUN_PKGS[@]}" "${TEST_PKGS[@]}") ;;
  *) echo "usage: $0 [build|run|all]" >&2; exit 2 ;;
esac

# Node test peers (s3rver, graphile-worker), pinned by package-lock.json.
npm_peers() {
  cd "$(dirname "$0")/.."
  if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
    echo "deps: installing npm test peers" >&2
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
  fi
}

# The Node client's own dependencies (pg, standardwebhooks, typescript),
# pinned by clients/node/package-lock.json, installed into clients/node:
# its tests type-check, pack and install it (tests/clients/t_node.sh).
CLIENT_NODE=$(cd "$(dirname "$0")/../clients/node" && pwd)
npm_client() {
  cd "$CLIENT_NODE"
  if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
    echo "deps: installing clients/node's npm dependencies" >&2
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
  fi
}

missing=()
for p in "${want[@]}"; do
  # npm/node may come from outside Debian (nodesource, nvm): the command is what matters.
  case "$p" in
    nodejs) command -v node >/dev/null && continue ;;
    npm) command -v npm >/dev/null && continue ;;
    # Any kubectl serves tests/ops/t_kubernetes.sh; Debian's would not
    # install over another package's /usr/bin/kubectl (the Kubernetes
    # project's own package, on some machines).
    kubernetes-client) command -v kubectl >/dev/null && continue ;;
  esac
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  [[ "${1:-all}" == all ]] && npm_peers && npm_client
  exit 0
fi

echo "deps: installing ${missing[*]}" >&2
if [[ $(id -u) -ne 0 ]]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# One 'apt-get update' per machine is enough; a stale list makes installs fail.
stamp=/var/lib/apt/periodic/boxcar-update-stamp
if [[ ! -e $stamp ]] || ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO mkdir -p "$(dirname $stamp)" && $SUDO touch $stamp
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[[ "${1:-all}" == all ]] && npm_peers && npm_client
exit 0
