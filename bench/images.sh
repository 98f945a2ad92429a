#!/usr/bin/env bash
# Images (issue 15): a job on a 500 MiB image, on a cache hit, starts in
# the same time as on the host's root (the image is bound, never copied:
# its size does not matter), and unpacking an image on a cache miss
# (hostile-input-safe extraction, setuid bits cleared) against GNU
# `tar xzf` of the same tarball.
#   - start: boxcar-sandbox -- true, with and without --image, hyperfine
#     (the cold path; the warm path builds the same root ahead of the job,
#     so the job's handoff is the same either way: t_images.sh checks a job
#     on an image takes a warm sandbox);
#   - miss: storage-tool extract (what the worker's cache runs) vs tar xzf.
# Needs root, mmdebstrap the first time (scripts/images.sh), hyperfine, jq.
# Usage: bench/images.sh [RUNS]   (default 100)
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$BOXCAR_ROOT"

runs=${1:-100}
SB=build/boxcar-sandbox
TOOL="$BOXCAR_ROOT/build/storage-tests/storage-tool"
for t in hyperfine jq; do
  command -v "$t" >/dev/null || { echo "bench-images: $t is missing" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-images: needs root (mmdebstrap, the image's binds)" >&2; exit 1; }
make --no-print-directory -s build/boxcar-sandbox build/libstorage.a build/libcommon.a >/dev/null
mkdir -p "$(dirname "$TOOL")"
cc -std=c17 -O2 -I. -D_GNU_SOURCE -o "$TOOL" tests/storage/storage-tool.c \
  build/libstorage.a build/libcommon.a -lcurl -larchive -lz -lcrypto -lpthread

# ---- a 500 MiB image: the Debian test image plus incompressible data,
# made once -------------------------------------------------------------
scripts/images.sh bookworm-py
base=$(scripts/images.sh path bookworm-py)
B="$BOXCAR_DEV/bench-images"
IMG="$B/img500"
if [[ ! -f $B/img500.done ]]; then
  echo "bench-images: making a 500 MiB image in $IMG" >&2
  rm -rf "$B"; mkdir -p "$B"
  cp -a "$base" "$IMG"
  have=$(du -sm "$IMG" | cut -f1)
  mkdir -p "$IMG/opt/data"
  for i in $(seq 1 $(( 500 - have ))); do
    head -c 1048576 /dev/urandom > "$IMG/opt/data/blob$i"
  done
  "$TOOL" pack "$IMG" "$B/img500.tar.gz" >/dev/null
  touch "$B/img500.done"
fi
size_mb=$(du -sm "$IMG" | cut -f1)
tgz_mb=$(( $(stat -c %s "$B/img500.tar.gz") >> 20 ))

# ---- start on a cache hit: image vs host root --------------------------
# The image as the worker's cache holds it: unpacked by the worker's rules.
CACHED="$B/cached"
if [[ ! -d $CACHED ]]; then
  BOXCAR_TEST_IMAGE=1 "$TOOL" extract "$B/img500.tar.gz" "$CACHED" >/dev/null
fi
hyperfine -N --warmup 10 --runs "$runs" --export-json "$B/start.json" \
  -n host-root "$SB --timeout 30 -- /bin/true" \
  -n image-500MiB "$SB --image $CACHED --timeout 30 -- /bin/true" >&2
med() { jq ".results[] | select(.command==\"$1\") | .median * 1000" "$B/start.json"; }
host_ms=$(med host-root) img_ms=$(med image-500MiB)
printf 'start, host root:          median %.2f ms\n' "$host_ms"
printf 'start, %d MiB image (hit): median %.2f ms (ratio %.2f)\n' "$size_mb" "$img_ms" \
  "$(jq -n "$img_ms / $host_ms")"

# ---- a miss: unpacking the image vs tar xzf ----------------------------
hyperfine -N --warmup 1 --runs 5 --export-json "$B/miss.json" \
  --prepare "sh -c 'rm -rf $B/x-boxcar $B/x-tar && mkdir $B/x-tar'" \
  -n boxcar-extract "env BOXCAR_TEST_IMAGE=1 $TOOL extract $B/img500.tar.gz $B/x-boxcar" \
  -n tar-xzf "tar xzf $B/img500.tar.gz -C $B/x-tar" >&2
rm -rf "$B/x-boxcar" "$B/x-tar"
mmed() { jq ".results[] | select(.command==\"$1\") | .median * 1000" "$B/miss.json"; }
bx=$(mmed boxcar-extract) tx=$(mmed tar-xzf)
printf 'miss, unpack %d MiB (%d MiB .tar.gz): boxcar %.0f ms, tar xzf %.0f ms (ratio %.2f)\n' \
  "$size_mb" "$tgz_mb" "$bx" "$tx" "$(jq -n "$bx / $tx")"
