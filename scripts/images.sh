#!/usr/bin/env bash
# Builds the small Debian root filesystems the image tests and benchmark
# run jobs on, once: they are cached under $BOXCAR_DEV/images and rebuilt
# only when missing (or with --force).  Needs root, mmdebstrap and the
# Debian mirror.
#
#   bookworm-py   Debian 12, essential packages + python3-minimal (3.11)
#   trixie-py     Debian 13, essential packages + python3-minimal (3.13)
#                 + lua5.4 (a tool the worker host does not have)
#
# Two releases, so the same job sees two different /etc/os-release and
# `python3 --version`.  --variant=essential (the Essential: yes packages,
# no apt) with docs, man pages and locales left out keeps each one small
# (80-130 MB) and fast to build (2.5 min each on an idle machine, up to
# 10 on a busy one).  An image is rebuilt when its recipe changes.
#
# Usage: scripts/images.sh [--force] [NAME...]    build (default: all)
#        scripts/images.sh path NAME              the image's directory
set -euo pipefail
source "$(dirname "$0")/env.sh"

IMAGES_DIR="$BOXCAR_DEV/images"
ALL=(bookworm-py trixie-py)
MIRROR=${BOXCAR_DEBIAN_MIRROR:-http://deb.debian.org/debian}

suite_of() {
  case "$1" in
    bookworm-py) echo bookworm ;;
    trixie-py) echo trixie ;;
    *) echo "images: unknown image '$1' (known: ${ALL[*]})" >&2; exit 2 ;;
  esac
}
packages_of() {
  case "$1" in
    bookworm-py) echo python3-minimal ;;
    trixie-py) echo python3-minimal,lua5.4 ;;
  esac
}

build() {
  local name=$1 suite dir tmp start recipe
  suite=$(suite_of "$name")
  recipe="$suite essential $(packages_of "$name")"
  dir="$IMAGES_DIR/$name"
  [[ -d $dir && -f $IMAGES_DIR/$name.built && $(cat "$IMAGES_DIR/$name.recipe" 2>/dev/null) == "$recipe" && $force == 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "images: building $name needs root (mmdebstrap --mode=root)" >&2
    exit 1
  fi
  command -v mmdebstrap >/dev/null || {
    echo "images: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 1; }
  mkdir -p "$IMAGES_DIR"
  rm -rf "$dir" "$dir.tmp" "$IMAGES_DIR/$name.built"
  tmp="$dir.tmp"
  start=$(date +%s)
  # Quiet unless it fails; the log stays beside the image.
  if ! mmdebstrap --mode=root --variant=essential --include="$(packages_of "$name")" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --skip=cleanup/apt/lists \
        "$suite" "$tmp" "$MIRROR" >"$IMAGES_DIR/$name.log" 2>&1; then
    echo "images: mmdebstrap $suite failed, see $IMAGES_DIR/$name.log" >&2
    tail -5 "$IMAGES_DIR/$name.log" >&2
    rm -rf "$tmp"
    exit 1
  fi
  # apt's lists and caches are not part of what a job needs.
  rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/* "$tmp"/var/cache/debconf/*-old
  mv "$tmp" "$dir"
  echo "$recipe" >"$IMAGES_DIR/$name.recipe"
  # Beside the image, not in it: the image is exactly what mmdebstrap made.
  echo "$(( $(date +%s) - start ))" >"$IMAGES_DIR/$name.built"
  echo "images: built $name ($suite) in $(cat "$IMAGES_DIR/$name.built") s, $(du -sh "$dir" | cut -f1)" >&2
}

force=0
if [[ ${1:-} == path ]]; then
  suite_of "${2:?usage: $0 path NAME}" >/dev/null
  echo "$IMAGES_DIR/$2"
  exit 0
fi
if [[ ${1:-} == --force ]]; then force=1; shift; fi
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${ALL[@]}")
for n in "${names[@]}"; do build "$n"; done
