#!/usr/bin/env bash
# Builds the container images with podman, pulling nothing from a
# registry: a Debian 12 base made by mmdebstrap, then the Dockerfile on it
# (apt inside the build reaches Debian's mirror), then the two images the
# podman compose stack adds (deploy/podman/: PostgreSQL 15 from Debian,
# s3rver on the boxcar image's nodejs).
#
#   scripts/image.sh base     localhost/debian:12-boxcar-base, once: kept in
#                             podman's storage and as a tarball under
#                             $BOXCAR_DEV/images (rebuilt when its recipe
#                             changes, or with --force)
#   scripts/image.sh build    base, then localhost/boxcar:$VERSION (layers
#                             cached by podman: a warm rebuild only recompiles
#                             what changed)
#   scripts/image.sh stack    build, then localhost/boxcar-postgres:15 and
#                             localhost/boxcar-s3rver:3.7.1
#   scripts/image.sh size     the boxcar image's size in bytes
#
# Needs root, podman and mmdebstrap (make deps installs them).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$BOXCAR_ROOT"

IMAGES_DIR="$BOXCAR_DEV/images"
MIRROR=${BOXCAR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${BOXCAR_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
BASE=${BOXCAR_BASE_IMAGE:-localhost/debian:12-boxcar-base}
VERSION=$(cat VERSION)
IMAGE=${BOXCAR_IMAGE:-localhost/boxcar:$VERSION}
PG_IMAGE=localhost/boxcar-postgres:15
S3_IMAGE=localhost/boxcar-s3rver:3.7.1
# The recipe of the base: a change here rebuilds it.  minbase (essential +
# apt) like debian:12-slim, with the slim images' dpkg excludes, and the
# same three sources as the official image.  mmdebstrap's merged-usr hook
# merges /usr itself: without it bookworm's minbase installs usrmerge,
# leaving perl behind (127 MB instead of 78).
BASE_RECIPE="bookworm minbase merged-usr $MIRROR $SECURITY slim-excludes v2"

need() {
  command -v "$1" >/dev/null || { echo "image: $1 is missing (make deps installs it)" >&2; exit 1; }
}
[[ $(id -u) -eq 0 ]] || { echo "image: needs root (mmdebstrap and podman as root)" >&2; exit 1; }
need podman
source "$BOXCAR_ROOT/scripts/podman-env.sh"

base_label() { podman image inspect --format '{{index .Labels "org.boxcar.recipe"}}' "$BASE" 2>/dev/null || true; }

base() {
  local force=${1:-0} tar="$IMAGES_DIR/debian-12-boxcar-base.tar" start
  local tmp="$IMAGES_DIR/debian-12-boxcar-base.tmp.tar"
  if [[ $force == 0 && $(base_label) == "$BASE_RECIPE" ]]; then return 0; fi
  mkdir -p "$IMAGES_DIR"
  if [[ $force == 1 || ! -s $tar || $(cat "$tar.recipe" 2>/dev/null) != "$BASE_RECIPE" ]]; then
    need mmdebstrap
    start=$(date +%s)
    rm -rf "$tar" "$tar.recipe" "$tmp"
    # debian:12-slim's excludes (docs, man pages, locales) keep the base small;
    # the copyright files stay, as there.
    if ! mmdebstrap --mode=root --variant=minbase --format=tar \
          --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
          --dpkgopt='path-exclude=/usr/share/man/*' \
          --dpkgopt='path-exclude=/usr/share/doc/*' \
          --dpkgopt='path-include=/usr/share/doc/*/copyright' \
          --dpkgopt='path-exclude=/usr/share/locale/*' \
          --dpkgopt='path-exclude=/usr/share/info/*' \
          --aptopt='APT::Install-Recommends "false"' \
          bookworm "$tmp" \
          "deb $MIRROR bookworm main" \
          "deb $MIRROR bookworm-updates main" \
          "deb $SECURITY bookworm-security main" >"$IMAGES_DIR/debian-12-boxcar-base.log" 2>&1; then
      echo "image: mmdebstrap bookworm failed, see $IMAGES_DIR/debian-12-boxcar-base.log" >&2
      tail -5 "$IMAGES_DIR/debian-12-boxcar-base.log" >&2
      rm -f "$tmp"; exit 1
    fi
    mv "$tmp" "$tar"
    echo "$BASE_RECIPE" >"$tar.recipe"
    echo "image: mmdebstrap made the base in $(( $(date +%s) - start )) s" >&2
  fi
  podman import --quiet \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL org.boxcar.recipe=\"$BASE_RECIPE\"" \
    "$tar" "$BASE" >/dev/null
  echo "image: $BASE imported ($(podman image inspect --format '{{.Size}}' "$BASE") bytes)" >&2
}

image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

# podman_build IMAGE ARGS...: builds IMAGE, and removes the image the tag
# named before when the build made a new one, so that rebuilds leave no
# untagged images behind (the build stage's layers stay: they are the cache).
podman_build() {
  local image=$1 old; shift
  old=$(image_id "$image")
  podman build --quiet --layers --pull=never -t "$image" "$@" >/dev/null
  if [[ -n $old && $old != "$(image_id "$image")" ]]; then
    podman rmi "$old" >/dev/null 2>&1 || true
  fi
}

# Untagged images left from an older base (its recipe label, which every
# image built on it inherits): the old base and its build stage.  The
# current build stage, also untagged, is the layer cache and stays.
prune_old() {
  local id r _
  for _ in 1 2 3; do
    for id in $(podman images -q --filter dangling=true); do
      r=$(podman image inspect --format '{{index .Labels "org.boxcar.recipe"}}' "$id" 2>/dev/null) || continue
      if [[ -n $r && $r != "$BASE_RECIPE" ]]; then podman rmi "$id" >/dev/null 2>&1 || true; fi
    done
  done
}

build() {
  base 0
  local start; start=$(date +%s)
  podman_build "$IMAGE" --build-arg DEBIAN_IMAGE="$BASE" -f Dockerfile .
  echo "image: $IMAGE built in $(( $(date +%s) - start )) s, $(size) bytes" >&2
}

stack() {
  build
  local ctx start from; start=$(date +%s)
  podman_build "$PG_IMAGE" --build-arg DEBIAN_IMAGE="$BASE" \
    -f deploy/podman/postgres.Containerfile deploy/podman
  # s3rver and its dependencies installed by npm on the host into a context
  # of their own (the image needs node only, which the boxcar image has);
  # rebuilt only when the boxcar image or this recipe changed.
  from="$(image_id "$IMAGE") $(cat deploy/podman/s3rver.Containerfile package-lock.json | sha256sum | cut -c1-16)"
  if [[ $(podman image inspect --format '{{index .Labels "org.boxcar.from"}}' "$S3_IMAGE" 2>/dev/null) != "$from" ]]; then
    need npm
    ctx=$(mktemp -d "${TMPDIR:-/tmp}/boxcar-s3ctx.XXXXXX")
    cp deploy/podman/s3rver.Containerfile package-lock.json "$ctx/"
    # s3rver alone, at the versions package-lock.json pins for the tests.
    echo '{"private": true, "dependencies": {"s3rver": "3.7.1"}}' >"$ctx/package.json"
    if ! (cd "$ctx" && npm install --silent --no-audit --no-fund --omit=dev >/dev/null); then
      rm -rf "$ctx"; echo "image: npm install s3rver@3.7.1 failed" >&2; exit 1
    fi
    podman_build "$S3_IMAGE" --build-arg BOXCAR_IMAGE="$IMAGE" --label "org.boxcar.from=$from" \
      -f "$ctx/s3rver.Containerfile" "$ctx"
    rm -rf "$ctx"
  fi
  prune_old
  echo "image: $PG_IMAGE and $S3_IMAGE ready in $(( $(date +%s) - start )) s" >&2
}

size() { podman image inspect --format '{{.Size}}' "$IMAGE"; }

# One build at a time (scripts/test.sh starts one early, beside the other
# suites, and t_compose's then waits for it): the lock is flock(1)'s, not
# inherited by what the build starts (-o).
if [[ ${1:-build} =~ ^(base|build|stack)$ && -z ${BOXCAR_IMAGE_LOCKED:-} ]]; then
  mkdir -p "$IMAGES_DIR"
  BOXCAR_IMAGE_LOCKED=1 exec flock -o "$IMAGES_DIR/.lock" "$0" "$@"
fi
case ${1:-build} in
  base) [[ ${2:-} == --force ]] && base 1 || base 0 ;;
  build) build ;;
  stack) stack ;;
  size) size ;;
  *) echo "usage: $0 base [--force] | build | stack | size" >&2; exit 2 ;;
esac
