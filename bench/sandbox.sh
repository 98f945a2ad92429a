#!/usr/bin/env bash
# Sandbox spawn overhead: boxcar-sandbox vs bubblewrap with comparable
# isolation, in one hyperfine run.  boxcar-sandbox does more (seccomp,
# per-sandbox cgroup with memory/pids/cpu limits, pivot_root onto a fresh
# tmpfs root, an idmapped workspace); the target is at most 0.8x bwrap's
# time.  This is the cold path (boxcar-sandbox alone, or the worker with an
# empty pool); the worker's warm path is measured by bench-queue-sandbox.
# Usage: bench/sandbox.sh [RUNS]   (default 200)
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$BOXCAR_ROOT"

runs=${1:-200}
SB=${SANDBOX_BIN:-build/boxcar-sandbox}
for t in hyperfine bwrap jq; do
  command -v "$t" >/dev/null || { echo "bench-sandbox: $t is missing" >&2; exit 1; }
done
[[ -x $SB ]] || { echo "bench-sandbox: $SB missing (make build/boxcar-sandbox)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/boxcar-bench.XXXXXX)
# The workspace as the worker gives it: a bounded, nosuid filesystem (here
# a 64 MiB tmpfs; the worker's is an ext4 image), else --disk-mb fails
# closed.  Without root: a plain directory and no --disk-mb.
disk=""
if [[ $(id -u) -eq 0 ]] && mkdir "$tmp/fs" && mount -t tmpfs -o size=64m,nosuid,nodev bench "$tmp/fs"; then
  disk="--disk-mb 64"
  trap 'umount "$tmp/fs"; rm -rf "$tmp"' EXIT
else
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/fs"
fi
mkdir -p "$tmp/fs/ws" "$tmp/fs/sc"

# bwrap: what issue 3 asks for, plus the system dirs `true` needs.
bwrap_cmd="bwrap --unshare-all --proc /proc --dev /dev --tmpfs /tmp --ro-bind /usr /usr"
for d in bin lib lib64 sbin; do
  if [[ -L /$d ]]; then bwrap_cmd+=" --symlink $(readlink /$d) /$d"
  elif [[ -d /$d ]]; then bwrap_cmd+=" --ro-bind /$d /$d"; fi
done
bwrap_cmd+=" --new-session --die-with-parent true"
sb_cmd="$SB --workspace $tmp/fs/ws --scratch $tmp/fs/sc --timeout 30 --memory-mb 256 --pids 64 --cpus 1 $disk -- true"

hyperfine -N --warmup 20 --runs "$runs" --export-json "$tmp/r.json" \
  -n boxcar-sandbox "$sb_cmd" -n bwrap "$bwrap_cmd" >&2

# The median too: on a busy machine the mean follows the outliers.
stat() { jq ".results[] | select(.command==\"$1\") | .$2 * 1000" "$tmp/r.json"; }
sb_ms=$(stat boxcar-sandbox mean) bw_ms=$(stat bwrap mean)
sb_med=$(stat boxcar-sandbox median) bw_med=$(stat bwrap median)
printf 'boxcar-sandbox mean: %.2f ms  median: %.2f ms\n' "$sb_ms" "$sb_med"
printf 'bwrap mean:          %.2f ms  median: %.2f ms\n' "$bw_ms" "$bw_med"
printf 'ratio (boxcar-sandbox / bwrap): mean %.2f, median %.2f\n' \
  "$(jq -n "$sb_ms / $bw_ms")" "$(jq -n "$sb_med / $bw_med")"
