#!/usr/bin/env bash
# Storage suite: libstorage against a real S3 HTTP server, driven by
# tests/storage/storage-tool.c: Ceph's RADOS Gateway (scripts/rgw.sh), which
# checks signatures and conditions as AWS does, or with BOXCAR_TEST_S3=s3rver
# s3rver (scripts/s3.sh, quicker to start, checks neither).  The credential
# sources (aws.sh) run against s3rver behind tests/storage/sigv4_proxy.py
# either way: their keys come from a stand-in STS that RGW does not know.
# SAN=1 runs the same checks on the sanitizer build (build-san/).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"

PY=/usr/bin/python3   # Debian's python3-botocore lives there
BUILD=build
[[ ${SAN:-0} == 1 ]] && BUILD=build-san

# ---- build: only our libraries and the driver ----------------------------
make --no-print-directory -s BUILD=$BUILD SAN="${SAN:-0}" $BUILD/libstorage.a $BUILD/libcommon.a >/dev/null || {
  not_ok "build libstorage"; tap_done; exit 1; }
TOOL="$BOXCAR_ROOT/$BUILD/storage-tests/storage-tool"
mkdir -p "$(dirname "$TOOL")"
SANFLAGS=()
[[ ${SAN:-0} == 1 ]] && SANFLAGS=(-fsanitize=address,undefined -fno-sanitize-recover=all)
cc -std=c17 -Wall -Wextra -Werror -g -O1 -I. -D_GNU_SOURCE "${SANFLAGS[@]}" -o "$TOOL" \
  tests/storage/storage-tool.c $BUILD/libstorage.a $BUILD/libcommon.a \
  $(pkg-config --libs libcjson libcurl libarchive zlib libcrypto) -lpthread || { not_ok "build storage-tool"; tap_done; exit 1; }
ok "built libstorage and storage-tool ($BUILD)"

W=$(mktemp -d "$BOXCAR_DEV/storage-test.XXXXXX")
S3KIND=${BOXCAR_TEST_S3:-rgw}
case $S3KIND in
  rgw) S3SH=scripts/rgw.sh ;;
  s3rver) S3SH=scripts/s3.sh ;;
  *) not_ok "BOXCAR_TEST_S3=$S3KIND: want rgw or s3rver"; tap_done; exit 1 ;;
esac
started_s3=0 started_s3rver=0
finish() {
  [[ $started_s3 == 1 ]] && $S3SH stop
  [[ $started_s3rver == 1 ]] && scripts/s3.sh stop
  chmod -R u+w "$W" 2>/dev/null; rm -rf "$W"
  cleanup_bg
}
trap finish EXIT

$S3SH status || started_s3=1
t0=$(date +%s%N)
eval "$($S3SH start)" || { not_ok "$S3KIND starts"; tap_done; exit 1; }
ok "$S3KIND up at $AWS_ENDPOINT_URL_S3 ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
# A fresh prefix per run, so dedup is measured against this run only.
export BOXCAR_S3_PREFIX="t$$-$(date +%s)"
export BOXCAR_TEST_RETRIES=2 BOXCAR_TEST_RETRY_MS=100
S3LOG=$($S3SH log)
# s3curl ARGS...: curl signing with the suite's keys (RGW refuses anonymous
# reads).  curl signs the query as written: '/' in it must be sent as %2F.
s3curl() {
  curl -s --aws-sigv4 "aws:amz:$AWS_REGION:s3" -u "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}
# stored_count: objects the server has stored so far, from its own log.
stored_count() {
  if [[ $S3KIND == rgw ]]; then grep -ac '"PUT /'"$BOXCAR_S3_BUCKET"'/.* 200 ' "$S3LOG"
  else grep -c 'Stored object' "$S3LOG"; fi
}

tool() { "$TOOL" "$@"; }
has() { grep -qF -- "$2" <<<"$1"; }                       # has TEXT NEEDLE
no_secrets() { ! grep -qE "X-Amz-|$AWS_SECRET_ACCESS_KEY|Signature|[?]" <<<"$1"; }
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }
# tree_listing DIR: type, mode, size, link target of everything, sorted.
tree_listing() { (cd "$1" && find . -mindepth 1 ! -type p -printf '%P %y %m %s %l\n' | LC_ALL=C sort); }

# ---- botocore, live: fresh vectors at the current time ------------------
live_ok=0 live_n=0
while IFS=$'\t' read -r region ep bucket keyhex method exp tok now base sig; do
  live_n=$((live_n + 1))
  url=$(tool presign-raw "$region" "$ep" "$bucket" "$keyhex" "$method" "$exp" "$tok" "$now")
  if [[ ${url%%\?*} == "$base" && ${url##*X-Amz-Signature=} == "$sig" ]]; then
    live_ok=$((live_ok + 1))
  else
    diag "mismatch for key hex $keyhex: $url vs $base $sig"
  fi
done < <($PY tests/storage/gen_vectors.py --live 8)
is "botocore live cross-check ($live_n fresh presigned URLs)" "$live_ok/$live_n" "8/8"

# ---- a tree with everything packing must keep ----------------------------
make_tree() {
  local d=$1
  mkdir -p "$d/src/lib/deep/er" "$d/empty dir" "$d/private"
  printf 'print("hi")\n' > "$d/src/main.py"
  printf '#!/bin/sh\necho run\n' > "$d/run.sh"; chmod 0755 "$d/run.sh"
  printf 'secret\n' > "$d/private/key"; chmod 0600 "$d/private/key"; chmod 0700 "$d/private"
  head -c 200000 /dev/urandom > "$d/src/lib/blob.bin"
  seq 1 20000 > "$d/src/lib/deep/er/numbers.txt"
  printf 'x' > "$d/a file with spaces+plus~tilde.txt"
  printf 'é' > "$d/données-日本語.txt"
  : > "$d/empty"
  ln -s src/main.py "$d/link-rel"
  ln -s /etc/hostname "$d/link-abs"
  ln -s missing "$d/src/dangling"
  chmod 0750 "$d/src/lib"
}

T="$W/tree"; mkdir -p "$T"; make_tree "$T"
mkfifo "$T/a-fifo"   # not packable: skipped and counted

out=$(tool push "$T" "$W"); rc=$?
diag "$out"
sha=$(field sha256 "$out"); key=$(field key "$out")
check "push: packs and uploads a new tree" test $rc -eq 0 -a "$(field uploaded "$out")" = 1
is "push: fifo skipped and counted" "$(tool pack "$T" "$W/t.tgz" | sed -n 's/.*skipped=\([0-9]*\).*/\1/p')" 1
is "push: object key is content addressed" "$key" "$BOXCAR_S3_PREFIX/sha256/${sha:0:2}/$sha.tar.gz"

url=$(tool presign GET "$key" 300)
out=$(tool fetch "$url" "$W/pulled" "$sha"); rc=$?
check "pull: presigned GET streams into extraction with the sha256 checked" test $rc -eq 0
check "pull: trees identical (diff -r)" diff -r --no-dereference -x a-fifo "$T" "$W/pulled"
is "pull: modes, types, sizes, link targets identical" "$(tree_listing "$W/pulled")" "$(tree_listing "$T")"

# ---- dedup ------------------------------------------------------------------
stored_before=$(stored_count)
out=$(tool push "$T" "$W")
is "dedup: second push of the same tree uploads nothing (API flag)" "$(field uploaded "$out")" 0
is "dedup: $S3KIND stored no object the second time (its log)" "$(stored_count)" "$stored_before"
listing=$(s3curl "$AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET?prefix=$BOXCAR_S3_PREFIX%2F")
is "dedup: exactly one object under the prefix" "$(grep -o '<Key>' <<<"$listing" | wc -l)" 1
# What s3rver keeps of a PUT cut short (its uploader killed): an empty
# object, no metadata.  HEAD says 200; the same bytes must be stored again.
# RGW's PUTs are atomic; the same state is made there by an empty PUT.
obj="$BOXCAR_DEV/s3/data/$BOXCAR_S3_BUCKET/$key._S3rver_object"
if [[ $S3KIND == rgw ]] && [[ $(s3curl -o /dev/null -w '%{http_code}' -X PUT --data-binary '' \
                                 "$AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET/$key") == 200 ]] ||
   [[ -f $obj ]]; then
  if [[ $S3KIND == s3rver ]]; then
    : > "$obj"; rm -f "$obj.md5" "$BOXCAR_DEV/s3/data/$BOXCAR_S3_BUCKET/$key._S3rver_metadata.json"
  fi
  out=$(tool push "$T" "$W")
  is "partial object: a push of the same tree stores it again" "$(field uploaded "$out")" 1
  rm -rf "$W/pulled2"
  check "partial object: then it can be fetched" tool fetch "$url" "$W/pulled2" "$sha"
else
  not_ok "partial object: could not empty $key on $S3KIND"
fi

# ---- reproducibility -------------------------------------------------------
mkdir -p "$W/r1" "$W/r2"
make_tree "$W/r1"
# The second copy: created in another order, other mtimes, other umask.
(umask 077; cp -a "$W/r1/." "$W/r2/")
find "$W/r1" -exec touch -h -d '2001-02-03 04:05:06' {} +
find "$W/r2" -exec touch -h -d '2024-12-31 23:59:59' {} +
# random data differs between make_tree calls: copy the blob over
cp "$W/r1/src/lib/blob.bin" "$W/r2/src/lib/blob.bin"; touch -d @0 "$W/r2/src/lib/blob.bin"
s1=$(field sha256 "$(tool pack "$W/r1" "$W/r1.tgz")")
s2=$(field sha256 "$(LC_ALL=C.UTF-8 tool pack "$W/r2" "$W/r2.tgz")")
s3=$(field sha256 "$(LC_ALL=C tool pack "$W/r1" "$W/r1b.tgz")")
is "reproducible: two copies with different mtimes/order/locale pack to the same sha256" "$s2" "$s1"
is "reproducible: a second run gives the same sha256" "$s3" "$s1"
check "reproducible: bytes identical" cmp -s "$W/r1.tgz" "$W/r2.tgz"
check "reproducible: gzip header has no mtime and no name" \
  test "$(head -c 10 "$W/r1.tgz" | od -An -tx1 | tr -d ' \n')" = "1f8b0800000000000003"
check "reproducible: entries sorted bytewise, owners zeroed (GNU tar reads it)" \
  bash -c "tar tvzf '$W/r1.tgz' 2>/dev/null | awk '{print \$2}' | sort -u | grep -qx 0/0 && \
           tar tzf '$W/r1.tgz' 2>/dev/null | sed 's,/\$,,' | LC_ALL=C sort -c"

# ---- wrong checksum, expired URL ------------------------------------------
bad=0000000000000000000000000000000000000000000000000000000000000000
out=$(tool fetch "$url" "$W/wrongsum" "$bad")
is "checksum: wrong sha256 is CHECKSUM_MISMATCH" "$(cut -d: -f1 <<<"$out")" "ERROR CHECKSUM_MISMATCH"
check "checksum: the partially extracted directory is removed" test ! -e "$W/wrongsum"
mkdir "$W/wrongsum-existing"
tool fetch "$url" "$W/wrongsum-existing" "$bad" >/dev/null
check "checksum: an existing (empty) dest is left empty" test -z "$(ls -A "$W/wrongsum-existing")"

expired=$(tool presign GET "$key" 1 $(( $(date +%s) - 120 )))
t0=$(date +%s%N)
out=$(tool fetch "$expired" "$W/expired" "$sha")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "expired URL: FETCH_FAILED" "$(cut -d: -f1 <<<"$out")" "ERROR FETCH_FAILED"
check "expired URL: 403 AccessDenied reported, not retried ($ms ms)" \
  eval 'has "$out" "HTTP 403 (AccessDenied)" && ! has "$out" "gave up"'
check "expired URL: message has no signature or credential" no_secrets "$out"

# ---- volume cache ------------------------------------------------------------
C="$W/cache"
declare -A VSHA VURL
for v in A B C; do
  mkdir -p "$W/vol$v"; head -c 300000 /dev/urandom > "$W/vol$v/data"; echo "$v" > "$W/vol$v/name"
  o=$(tool push "$W/vol$v" "$W"); VSHA[$v]=$(field sha256 "$o")
  VURL[$v]=$(tool presign GET "$(field key "$o")" 3600)
done
o=$(tool cache "$C" 100000000 get "${VURL[A]}" "${VSHA[A]}")
is "cache: miss downloads" "$(field downloaded "$o")" 1
p=$(field path "$o")
check "cache: entry is the extracted volume" cmp -s "$p/data" "$W/volA/data"
check "cache: entry is read-only on disk" bash -c "[[ -z \$(find '$p' -perm /222 ! -type l) ]]"
o=$(tool cache "$C" 100000000 get "${VURL[A]}" "${VSHA[A]}")
is "cache: hit does not download" "$(field downloaded "$o")" 0
o=$(tool cache "$C" 100000000 get - "${VSHA[A]}")
is "cache: hit needs no URL at all" "$(field downloaded "$o")" 0
o=$(tool cache "$C" 100000000 get "${VURL[A]}" -)
check "cache: by URL without sha256 finds the same entry" \
  test "$(field sha256 "$o")" = "${VSHA[A]}" -a "$(ls "$C/v" | grep -c '\.size$')" = 1

# Artifact versions (owner mode): modes exact, owned by the job's uid, in a
# directory only the worker reaches.
if [[ $(id -u) -eq 0 ]]; then
  chmod 640 "$W/volB/name"; chmod 750 "$W/volB"
  o=$(tool push "$W/volB" "$W"); osha=$(field sha256 "$o"); ourl=$(tool presign GET "$(field key "$o")" 3600)
  o=$(tool cache "$W/cache-own" 100000000 owner 65534 65534 get "$ourl" "$osha")
  p=$(field path "$o")
  is "cache owner: modes kept exactly (write bits too)" "$(stat -c %a "$p/data" "$p/name" | tr '\n' ' ')" "$(stat -c %a "$W/volB/data" "$W/volB/name" | tr '\n' ' ')"
  is "cache owner: every entry owned by 65534:65534" "$(find "$p" ! -uid 65534 -o ! -gid 65534 | wc -l)" "0"
  is "cache owner: the cache directory is 0700" "$(stat -c %a "$W/cache-own")" "700"
  chmod 644 "$W/volB/name"; chmod 755 "$W/volB"
else
  skip "cache owner mode needs root (chown)"
fi

# LRU: room for two volumes of ~300 KB
C2="$W/cache-lru"
tool cache "$C2" 700000 get "${VURL[A]}" "${VSHA[A]}" get "${VURL[B]}" "${VSHA[B]}" \
  get "${VURL[C]}" "${VSHA[C]}" >/dev/null
is "cache LRU: oldest evicted, size bounded" \
  "$(ls "$C2/v" | grep -v '\.' | sort | tr '\n' ' ')" "$(printf '%s\n' "${VSHA[B]}" "${VSHA[C]}" | sort | tr '\n' ' ')"
o=$(tool cache "$C2" 700000 size); check "cache LRU: total within bound ($(field cache_size "$o") bytes)" test "$(field cache_size "$o")" -le 700000

# Refcount: A is held while B and C arrive; B (unheld, older) goes instead.
C3="$W/cache-ref"
tool cache "$C3" 700000 hold "${VURL[A]}" "${VSHA[A]}" get "${VURL[B]}" "${VSHA[B]}" \
  get "${VURL[C]}" "${VSHA[C]}" >/dev/null
is "cache refcount: held entry survives eviction" \
  "$(ls "$C3/v" | grep -v '\.' | sort | tr '\n' ' ')" "$(printf '%s\n' "${VSHA[A]}" "${VSHA[C]}" | sort | tr '\n' ' ')"

# Reclaim (the disk budget asks when a job does not fit): the least
# recently used entries nobody holds go first, at least the bytes asked,
# deleted from disk before it returns; a held entry stays whatever is asked.
C5="$W/cache-reclaim"
o=$(tool cache "$C5" 100000000 get "${VURL[A]}" "${VSHA[A]}" get "${VURL[B]}" "${VSHA[B]}" \
      get "${VURL[C]}" "${VSHA[C]}" size)
full=$(field cache_size "$o")
o=$(tool cache "$C5" 100000000 reclaim 1 size)
is "cache reclaim: one byte asked evicts the least recently used entry (A)" \
  "$(ls "$C5/v" | grep -v '\.' | sort | tr '\n' ' ')" "$(printf '%s\n' "${VSHA[B]}" "${VSHA[C]}" | sort | tr '\n' ' ')"
check "cache reclaim: says what it evicted ($(field reclaimed "$o") of $full bytes)" \
  test "$(field reclaimed "$o")" -gt 0 -a "$(( $(field reclaimed "$o") + $(field cache_size "$o") ))" -eq "$full"
check "cache reclaim: the evicted tree is deleted, not parked in tmp/" \
  bash -c "[[ -z \$(ls -A '$C5/tmp') ]]"
o=$(tool cache "$C5" 100000000 hold - "${VSHA[C]}" reclaim 100000000000 size)
is "cache reclaim: everything unheld goes, the held entry stays" \
  "$(ls "$C5/v" | grep -v '\.' | tr '\n' ' ')" "${VSHA[C]} "
o=$(tool cache "$C5" 100000000 reclaim 0 size)
is "cache reclaim: nothing asked, nothing evicted" "$(field reclaimed "$o")" 0

# Downloads keep the reserve free (min-free, the worker's --disk-reserve):
# on a 64 MiB tmpfs, a download that would start below it first evicts
# the entries nobody holds, then tries once more; with nothing to evict it
# fails, naming the figures, and leaves nothing behind.
if [[ $(id -u) -eq 0 ]]; then
  C6="$W/cache-low"
  mkdir -p "$C6"
  if mount -t tmpfs -o size=64m boxcar-storage-low "$C6"; then
    avail() { echo $(( $(stat -f -c '%a * %S' "$C6") )); }
    tool cache "$C6" 100000000 get "${VURL[A]}" "${VSHA[A]}" get "${VURL[B]}" "${VSHA[B]}" >/dev/null
    low=$(( $(avail) + 200000 ))
    o=$(tool cache "$C6" 100000000 min-free "$low" get "${VURL[C]}" "${VSHA[C]}")
    check "low disk: the download went through once A and B were evicted ($o)" \
      has "$o" "acquired sha256=${VSHA[C]} downloaded=1"
    is "low disk: only C is left in the cache" "$(ls "$C6/v" | grep -v '\.' | tr '\n' ' ')" "${VSHA[C]} "
    o=$(tool cache "$C6" 100000000 hold - "${VSHA[C]}" min-free 67108864 get "${VURL[A]}" "${VSHA[A]}")
    check "low disk, nothing to evict: the download fails as an I/O error naming the reserve" \
      grep -Eq "^ERROR IO: .*MiB free on the filesystem after 0 MiB of the archive, below the 64 MiB kept free" <<<"$o"
    check "low disk: the held entry stays, nothing is left in tmp/" \
      bash -c "[[ \$(ls '$C6/v' | grep -v '\.') == '${VSHA[C]}' && -z \$(ls -A '$C6/tmp') ]]"
    o=$(tool cache "$C6" 100000000 get "${VURL[A]}" "${VSHA[A]}")
    check "control: without min-free the same download fits" has "$o" "acquired sha256=${VSHA[A]} downloaded=1"
    umount "$C6"
  else
    skip "low disk: no tmpfs to fill"
  fi
else
  skip "low disk needs root (a tmpfs of its own)"
fi

# Two processes fetching the same volume into one cache at once.
C4="$W/cache-mp"
tool cache "$C4" 100000000 get "${VURL[B]}" "${VSHA[B]}" > "$W/mp1" &
tool cache "$C4" 100000000 get "${VURL[B]}" "${VSHA[B]}" > "$W/mp2" &
wait
check "cache: two processes acquire one volume concurrently, one entry results" \
  bash -c "grep -q acquired '$W/mp1' && grep -q acquired '$W/mp2' && [[ \$(ls '$C4/v' | grep -vc '\.') == 1 && -z \$(ls -A '$C4/tmp') ]]"

# ---- layered versions in the cache ------------------------------------------
# Layers are packed directories (a whiteout is an empty ".wh.<name>" file),
# pushed as any tarball.  A stack is built from its longest cached prefix:
# a 4-layer stack on a cached 3-layer one downloads the 4th layer only.
L="$W/layers"; mkdir -p "$L/l0/d" "$L/l1/d" "$L/l2/d" "$L/l3/sub" "$L/bad"
head -c 200000 /dev/urandom > "$L/l0/data"; echo keep > "$L/l0/keep"
echo one > "$L/l0/d/one"; echo two > "$L/l0/d/two"; echo gone > "$L/l0/gone"
echo three > "$L/l1/d/three"; : > "$L/l1/.wh.gone"
head -c 1000 /dev/urandom > "$L/l2/data"; : > "$L/l2/d/.wh.one"
echo new > "$L/l3/sub/new"; : > "$L/l3/.wh.keep"; chmod 0700 "$L/l3/sub"
: > "$L/bad/.wh.nothere"
declare -A LSHA LURL LSIZE
for l in l0 l1 l2 l3 bad; do
  o=$(tool push "$L/$l" "$W"); LSHA[$l]=$(field sha256 "$o"); LSIZE[$l]=$(field size "$o")
  LURL[$l]=$(tool presign GET "$(field key "$o")" 3600)
done
# The trees expected, made by hand.
mkdir -p "$L/e3"; cp -a "$L/l0/." "$L/e3/"; rm "$L/e3/gone" "$L/e3/d/one"
cp "$L/l1/d/three" "$L/e3/d/"; cp "$L/l2/data" "$L/e3/data"
cp -a "$L/e3" "$L/e4"; rm "$L/e4/keep"; cp -a "$L/l3/sub" "$L/e4/"
ro_listing() { tree_listing "$1" | awk '{ print $1, $2, $4, $5 }'; }   # modes aside
same_tree() { [[ "$(ro_listing "$1")" == "$(ro_listing "$2")" ]] && diff -r "$1" "$2" >/dev/null; }
stack() { local a=(); for l in "$@"; do a+=("${LURL[$l]}" "${LSHA[$l]}"); done; echo "$#" "${a[@]}"; }
CL="$W/cache-layers"
o=$(tool cache "$CL" 100000000 layers $(stack l0 l1 l2))
is "layers: a cold 3-layer stack downloads its 3 layers" \
  "$(field downloaded "$o") $(field downloaded_bytes "$o")" "1 $(( LSIZE[l0] + LSIZE[l1] + LSIZE[l2] ))"
p3=$(field path "$o")
check "layers: the 3-layer tree is the bottom with both layers applied" same_tree "$p3" "$L/e3"
check "layers: the entry is read-only on disk" bash -c "[[ -z \$(find '$p3' -perm /222 ! -type l) ]]"
o=$(tool cache "$CL" 100000000 layers $(stack l0 l1 l2 l3))
is "layers: the 4-layer stack on it downloads exactly its 4th layer" \
  "$(field downloaded "$o") $(field downloaded_bytes "$o")" "1 ${LSIZE[l3]}"
p4=$(field path "$o")
check "layers: the 4-layer tree is right" same_tree "$p4" "$L/e4"
check "layers: the 3-layer entry is unchanged" same_tree "$p3" "$L/e3"
is "layers: a file the 4th layer did not touch is shared with the 3-layer entry" \
  "$(stat -c %i "$p4/d/two")" "$(stat -c %i "$p3/d/two")"
ex=$(tool pack "$L/e4" "$W/e4.tgz" >/dev/null && tool extract "$W/e4.tgz" "$W/e4x")
is "layers: the entry's stats are its whole tree's (as extracting it would count)" \
  "$(field bytes "$o") $(field entries "$o")" "$(field bytes "$ex") $(field entries "$ex")"
o=$(tool cache "$CL" 100000000 layers $(stack l0 l1 l2 l3))
is "layers: a hit downloads nothing" "$(field downloaded "$o") $(field downloaded_bytes "$o")" "0 0"
o=$(tool cache "$CL" 100000000 layers 4 - "${LSHA[l0]}" - "${LSHA[l1]}" - "${LSHA[l2]}" - "${LSHA[l3]}")
is "layers: a hit needs no URL" "$(field downloaded "$o")" 0
o=$(tool cache "$CL" 100000000 layers 1 - "${LSHA[l0]}")
check "layers: a 1-layer stack is the tarball's own entry (not cached alone: NOT_FOUND)" \
  has "$o" "ERROR NOT_FOUND"
o=$(tool cache "$CL" 100000000 layers $(stack l0 l1 l0))
check "layers: a layer listed twice is BAD_ARCHIVE" has "$o" "ERROR BAD_ARCHIVE"
entries_before=$(ls "$CL/v" | grep -vc '\.')
o=$(tool cache "$CL" 100000000 layers $(stack l0 l1 bad))
check "layers: a hostile layer fails the build as BAD_ARCHIVE ($o)" has "$o" "ERROR BAD_ARCHIVE"
check "layers: nothing published, nothing left in tmp/" \
  bash -c "[[ \$(ls '$CL/v' | grep -vc '\.') == $entries_before && -z \$(ls -A '$CL/tmp') ]]"
o=$(tool cache "$CL" 100000000 layers $(stack l0 l1 l2 l3 l2))
check "layers: a layer listed twice, even applied, is refused before any download" \
  has "$o" "ERROR BAD_ARCHIVE"
# Two processes building the same stack at once.
CL2="$W/cache-layers-mp"
tool cache "$CL2" 100000000 layers $(stack l0 l1 l2 l3) > "$W/lmp1" &
tool cache "$CL2" 100000000 layers $(stack l0 l1 l2 l3) > "$W/lmp2" &
wait
check "layers: two processes build one stack at once, one entry results, tmp/ empty" \
  bash -c "grep -q acquired '$W/lmp1' && grep -q acquired '$W/lmp2' && [[ \$(ls '$CL2/v' | grep -vc '\.') == 1 && -z \$(ls -A '$CL2/tmp') ]]"
check "layers: and it is right" same_tree "$(field path "$(cat "$W/lmp1")")" "$L/e4"
if [[ $(id -u) -eq 0 ]]; then
  CL3="$W/cache-layers-own"
  tool cache "$CL3" 100000000 owner 65534 65534 layers $(stack l0 l1 l2) >/dev/null
  o=$(tool cache "$CL3" 100000000 owner 65534 65534 layers $(stack l0 l1 l2 l3))
  p=$(field path "$o")
  is "layers, owned cache: 4th layer only" "$(field downloaded_bytes "$o")" "${LSIZE[l3]}"
  is "layers, owned cache: modes kept exactly" "$(tree_listing "$p")" "$(tree_listing "$L/e4")"
  is "layers, owned cache: everything owned by 65534:65534" "$(find "$p" ! -uid 65534 -o ! -gid 65534 | wc -l)" 0
else
  skip "layers, owned cache needs root (chown)"
fi

# ---- S3 down ------------------------------------------------------------------
$S3SH stop
t0=$(date +%s%N)
out=$(tool fetch "$url" "$W/down" "$sha")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "S3 down: fetch is FETCH_FAILED" "$(cut -d: -f1 <<<"$out")" "ERROR FETCH_FAILED"
check "S3 down: fetch retried a bounded number of times ($ms ms)" \
  eval 'has "$out" "gave up after 3 attempts" && (( ms < 10000 ))'
check "S3 down: fetch message names the URL without query or secrets" \
  eval 'has "$out" "/$BOXCAR_S3_BUCKET/$key:" && no_secrets "$out"'
diag "$out"
check "S3 down: nothing left at dest" test ! -e "$W/down"
mkdir -p "$W/newtree"; echo new > "$W/newtree/f"
out=$(tool push "$W/newtree" "$W")
is "S3 down: push is UPLOAD_FAILED" "$(cut -d: -f1 <<<"$out")" "ERROR UPLOAD_FAILED"
check "S3 down: push message bounded retries, no secrets" \
  eval 'has "$out" "gave up after 3 attempts" && no_secrets "$out"'
diag "$out"
o=$(tool cache "$C" 100000000 get "${VURL[A]}" "${VSHA[A]}")
check "S3 down: cache hit still works without a download" test "$(field downloaded "$o")" = 0
eval "$($S3SH start)"
out=$(tool push "$W/newtree" "$W")
is "S3 back: the same push now succeeds" "$(field uploaded "$out")" 1

# ---- a server that checks signatures: RGW ---------------------------------------
[[ $S3KIND == rgw ]] && source tests/storage/rgw.sh

# ---- AWS credential sources, bucket check, SigV4-verifying S3 ----------------
if [[ $S3KIND == rgw ]]; then
  scripts/s3.sh status || started_s3rver=1
  eval "$(scripts/s3.sh start)" || not_ok "s3rver starts (for the credential sources)"
fi
source tests/storage/aws.sh
source tests/storage/aws_settings.sh

# ---- hostile archives ------------------------------------------------------------
H="$W/hostile"; mkdir -p "$H/sentinel"; echo orig > "$H/sentinel/file"
$PY tests/storage/gen_hostile.py "$W/corpus" "$H/sentinel" > "$W/corpus.list"
# Everything next to the target (the target's parent's own mtime changes
# when the target comes and goes: that is the one allowed change).
snapshot() {
  find "$H" "$W/corpus" -mindepth 1 -path "$H/target" -prune -o -printf '%p %y %m %s %T@ %l\n' | LC_ALL=C sort
  stat -c '%n %a %u %g' "$H"; sha256sum /etc/passwd "$H/sentinel/file"
}
before=$(snapshot)
n_cases=0
while IFS=$'\t' read -r name needle; do
  n_cases=$((n_cases + 1))
  out=$(BOXCAR_TEST_MAX_BYTES=4194304 BOXCAR_TEST_MAX_ENTRIES=1000 BOXCAR_TEST_MAX_RATIO=50 \
        BOXCAR_TEST_RATIO_FLOOR=1048576 tool extract "$W/corpus/$name.tar.gz" "$H/target")
  if [[ $needle == CONTAINED ]]; then
    ok "hostile $name: handled ($out)"
  elif [[ $out == "ERROR BAD_ARCHIVE: "*"$needle"* ]]; then
    ok "hostile $name: BAD_ARCHIVE ($needle)"
  else
    not_ok "hostile $name: want BAD_ARCHIVE containing '$needle'"; diag "got: $out"
  fi
  after=$(snapshot)
  if [[ $after == "$before" ]]; then ok "hostile $name: nothing outside the target changed"
  else not_ok "hostile $name: something outside the target changed"; diff <(echo "$before") <(echo "$after") | sed 's/^/# /'; fi
  if [[ $needle != CONTAINED ]]; then
    check "hostile $name: target not left behind" test ! -e "$H/target"
  fi
  chmod -R u+w "$H/target" 2>/dev/null; rm -rf "$H/target"
done < "$W/corpus.list"
check "hostile corpus has at least 12 archives ($n_cases)" test "$n_cases" -ge 12

# Hard links inside the tree are fine: extracted as hard links again (so 64
# links to 8 MiB stay 8 MiB), to the file this archive extracted earlier.
$PY - "$W/hl.tar.gz" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w:gz") as tf:
    ti = tarfile.TarInfo("orig"); data = b"shared\n"; ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
    ti = tarfile.TarInfo("dir/copy"); ti.type = tarfile.LNKTYPE; ti.linkname = "orig"; tf.addfile(ti)
EOF
tool extract "$W/hl.tar.gz" "$W/hl" >/dev/null
check "in-tree hard link extracted as a link to the same inode" \
  bash -c "cmp -s '$W/hl/orig' '$W/hl/dir/copy' && [[ \$(stat -c %h '$W/hl/orig') == 2 && \$(stat -c %i '$W/hl/orig') == \$(stat -c %i '$W/hl/dir/copy') ]]"

tap_done
