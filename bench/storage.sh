#!/usr/bin/env bash
# Storage benchmark: boxcar's pack+hash and extract against GNU tar/gzip on a
# ~1 GiB mixed tree, one run each, and volume-cache hit time for a 10 MiB
# and a 1 GiB volume.  Both sides use gzip level 6 (gzip's default); the
# page cache is warmed first so both read from memory.
#
#   bench/storage.sh            (BENCH_SIZE_MB=1024 by default)
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$BOXCAR_ROOT"

SIZE_MB=${BENCH_SIZE_MB:-1024}
B="$BOXCAR_DEV/bench/storage"
TREE="$B/tree-$SIZE_MB"
OUT="$B/out"
TOOL="$BOXCAR_ROOT/build/storage-tests/storage-tool"

make --no-print-directory -s build/libstorage.a build/libcommon.a >/dev/null
mkdir -p "$(dirname "$TOOL")"
cc -std=c17 -O2 -I. -D_GNU_SOURCE -o "$TOOL" tests/storage/storage-tool.c \
  build/libstorage.a build/libcommon.a -lcjson -lcurl -larchive -lz -lcrypto -lpthread

# ---- the tree: many small text files + large incompressible and
# compressible files, generated once ------------------------------------------
if [[ ! -f $TREE.done ]]; then
  echo "generating ~$SIZE_MB MiB tree in $TREE" >&2
  rm -rf "$TREE"; mkdir -p "$TREE"
  /usr/bin/python3 - "$TREE" "$SIZE_MB" <<'EOF'
import os, random, sys
root, size_mb = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
words = [("%x" % rnd.getrandbits(24)) for _ in range(5000)]
def text(n):
    out, total = [], 0
    while total < n:
        line = " ".join(rnd.choice(words) for _ in range(12)) + "\n"
        out.append(line); total += len(line)
    return "".join(out)[:n].encode()
# 15% small text files (~30k files in a source-tree-like layout)
small_total, i = size_mb * (1 << 20) * 15 // 100, 0
chunk = text(1 << 20)
while small_total > 0:
    d = os.path.join(root, "src", "pkg%03d" % (i // 100), "mod%02d" % (i % 100 // 10))
    os.makedirs(d, exist_ok=True)
    n = rnd.randint(200, 10000)
    off = rnd.randint(0, len(chunk) - n)
    with open(os.path.join(d, "file%05d.py" % i), "wb") as f:
        f.write(chunk[off:off + n])
    small_total -= n; i += 1
os.makedirs(os.path.join(root, "data"), exist_ok=True)
# 55% incompressible (random), 30% compressible (log-like text)
for name, frac, gen in (("blob", 55, lambda n: os.urandom(n)), ("log", 30, None)):
    left, k = size_mb * (1 << 20) * frac // 100, 0
    while left > 0:
        n = min(left, 128 << 20)
        with open(os.path.join(root, "data", "%s%d.bin" % (name, k)), "wb") as f:
            for _ in range(n // (1 << 20)):
                f.write(gen(1 << 20) if gen else chunk)
        left -= n; k += 1
print("files:", i, file=sys.stderr)
EOF
  touch "$TREE.done"
fi
tree_bytes=$(du -sb "$TREE" | cut -f1)
tree_files=$(find "$TREE" -type f | wc -l)

rm -rf "$OUT"; mkdir -p "$OUT"
cat_tree() { find "$TREE" -type f -print0 | xargs -0 cat > /dev/null; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

cat_tree

# ---- pack + hash ---------------------------------------------------------------
t0=$(now); bx=$("$TOOL" pack "$TREE" "$OUT/boxcar.tgz"); t1=$(now)
bx_pack=$(secs "$t0" "$t1")
t0=$(now)
gnu_sha=$(tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$TREE" -cf - . \
          | gzip -n -6 | tee "$OUT/gnu.tgz" | sha256sum | cut -d' ' -f1)
t1=$(now); gnu_pack=$(secs "$t0" "$t1")

# ---- extract ---------------------------------------------------------------------
t0=$(now); "$TOOL" extract "$OUT/boxcar.tgz" "$OUT/x-boxcar" >/dev/null; t1=$(now)
bx_x=$(secs "$t0" "$t1")
mkdir -p "$OUT/x-gnu"
t0=$(now); tar xzf "$OUT/boxcar.tgz" -C "$OUT/x-gnu" 2>/dev/null; t1=$(now)
gnu_x=$(secs "$t0" "$t1")
diff -r -q "$OUT/x-boxcar" "$OUT/x-gnu" >/dev/null && same=yes || same=NO
rm -rf "$OUT/x-boxcar" "$OUT/x-gnu"

# ---- volume cache hit --------------------------------------------------------
mkdir -p "$OUT/small"; head -c $((10 << 20)) /dev/urandom > "$OUT/small/data"
small_sha=$("$TOOL" pack "$OUT/small" "$OUT/small.tgz" | sed -n 's/.*sha256=\([0-9a-f]*\).*/\1/p')
big_sha=$(sed -n 's/.*sha256=\([0-9a-f]*\).*/\1/p' <<<"$bx")
port=$(free_port)
/usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 --directory "$OUT" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
C="$OUT/cache"
miss_small=$("$TOOL" cache "$C" $((4 << 30)) get "http://127.0.0.1:$port/small.tgz" "$small_sha" | sed -n 's/.*us=\([0-9]*\).*/\1/p')
miss_big=$("$TOOL" cache "$C" $((4 << 30)) get "http://127.0.0.1:$port/boxcar.tgz" "$big_sha" | sed -n 's/.*us=\([0-9]*\).*/\1/p')
hit_small=$("$TOOL" cache "$C" $((4 << 30)) time-hit "$small_sha" 1000 | sed -n 's/hit_us=//p')
hit_big=$("$TOOL" cache "$C" $((4 << 30)) time-hit "$big_sha" 1000 | sed -n 's/hit_us=//p')
kill $srv 2>/dev/null || true

bx_size=$(sed -n 's/.*size=\([0-9]*\).*/\1/p' <<<"$bx")
gnu_size=$(stat -c %s "$OUT/gnu.tgz")
printf '\nstorage benchmark: %s MiB tree, %s files (gzip level 6 both sides, warm page cache, one run)\n\n' \
  "$((tree_bytes >> 20))" "$tree_files"
printf '%-28s %12s %12s %10s\n' "" "boxcar" "GNU tar" "ratio"
printf '%-28s %11ss %11ss %9sx\n' "pack + sha256" "$bx_pack" "$gnu_pack" "$(ratio "$bx_pack" "$gnu_pack")"
printf '%-28s %11ss %11ss %9sx\n' "extract (tar xzf)" "$bx_x" "$gnu_x" "$(ratio "$bx_x" "$gnu_x")"
printf '%-28s %12s %12s\n' "archive bytes" "$bx_size" "$gnu_size"
printf '%-28s %12s\n' "extracted trees identical" "$same"
printf '\n%-28s %12s %12s\n' "volume cache" "10 MiB" "$((tree_bytes >> 20)) MiB"
printf '%-28s %10sus %10sus\n' "hit (acquire+release, avg)" "$hit_small" "$hit_big"
printf '%-28s %10sms %10sms\n' "miss (download+extract)" "$((miss_small / 1000))" "$((miss_big / 1000))"
printf '\n(ratio < 1 means boxcar is faster; GNU pipeline: tar --sort=name ... | gzip -n -6 | sha256sum)\n'
