#!/usr/bin/env bash
# Workspace benchmark (issues 12 and 46), through a real worker on the namespace
# backend: start and finish overhead of a job whose artifact is 10 MiB and
# one whose artifact is ~1 GiB (later jobs of the session, each changing one
# file: its base from the worker's artifact cache, under an overlay), packing speed against `tar | gzip -n | sha256sum` on the same tree,
# and the peak memory charged to the job's cgroup for a 1 GiB workspace
# (bounded filesystem vs the old tmpfs); and the start of a job whose
# workspace comes ready from the pool (--warm-workspaces) against one that
# makes its filesystem as it starts.  Needs root (loop devices).
#
#   bench/workspace.sh          (BENCH_WS_MB=1024 by default)
#   BENCH_WS_ONLY=pool bench/workspace.sh   (the pool part alone)
#   BENCH_WS_ONLY=peak bench/workspace.sh   (the memory part alone)
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$BOXCAR_ROOT"
[[ $(id -u) -eq 0 ]] || { echo "bench-workspace: needs root (loop devices); skipped"; exit 0; }
SIZE_MB=${BENCH_WS_MB:-1024}
B="$BOXCAR_DEV/bench/workspace"
rm -rf "$B"; mkdir -p "$B"
make --no-print-directory -s build/boxcar build/boxcar-sandbox >/dev/null
BOXCAR=$BOXCAR_ROOT/build/boxcar
SB=$BOXCAR_ROOT/build/boxcar-sandbox
eval "$(scripts/s3.sh start)"
export BOXCAR_S3_PREFIX="bench-ws-$$"
scripts/pg.sh start >/dev/null
db=bench_workspace
scripts/pg.sh dropdb "$db" >/dev/null 2>&1 || true
scripts/pg.sh createdb "$db" >/dev/null
DATABASE_URL=$(db_url "$db"); export DATABASE_URL
"$BOXCAR" migrate >/dev/null
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
sql() { psql -X -qtA -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "$@"; }

# Trees: 10 MiB and SIZE_MB MiB of mixed files (a quarter random, the rest
# text), 100 files per MiB/10.
mktree() {
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import os, random, sys
root, mb = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
text = b"".join(b"%08x the quick brown fox jumps over the lazy dog\n" % rnd.getrandbits(32) for _ in range(20000))
os.makedirs(root)
for i in range(mb):
    d = os.path.join(root, "d%03d" % (i // 64))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d" % i), "wb") as f:
        f.write(os.urandom(1 << 20) if i % 4 == 0 else (text * 2)[: 1 << 20])
EOF
}
# ms between two events of a job
span() {
  sql "select round(extract(epoch from (select min(at) from boxcar.job_events where job_id = '$1' and kind = '$3')
        - (select min(at) from boxcar.job_events where job_id = '$1' and kind = '$2')) * 1000)"
}

# Pooled vs cold start: BENCH_WS_JOBS jobs with the default limits, one at
# a time, on a worker with the pool and on one without (--warm-workspaces
# 0): claim -> first output, p50 and p90, and the worker's own timings from
# /metrics (making a filesystem, cold; wiping one after its job, pooled).
pool_bench() {  # WARM -> "p50 p90 make_ms wipe_ms taken cold"
  local port ids=() id m
  port=$(free_port)
  "$BOXCAR" worker --worker-id "bench-wsp-$1" --work-dir "$B/wp$1" --concurrency 1 \
    --poll-interval 200ms --sandbox namespace --warm-workspaces "$1" \
    --metrics-addr "127.0.0.1:$port" >"$B/worker-pool$1.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.1; done
  sleep 1   # the pool fills
  for _ in $(seq "${BENCH_WS_JOBS:-30}"); do
    id=$(echo '{"script": "echo go"}' | "$BOXCAR" enqueue --spec -)
    "$BOXCAR" status --wait "$id" >/dev/null
    ids+=("'$id'")
  done
  m=$(curl -s "http://127.0.0.1:$port/metrics")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local list; list=$(IFS=,; echo "${ids[*]}")
  sql "with s as (select (extract(epoch from max(at) filter (where kind = 'started'))
                          - extract(epoch from min(at) filter (where kind = 'claimed'))) * 1000 as ms
                  from boxcar.job_events where job_id in ($list) group by job_id)
       select round(percentile_cont(0.5) within group (order by ms)::numeric, 1) || ' ' ||
              round(percentile_cont(0.9) within group (order by ms)::numeric, 1) from s" | tr -d '\n'
  awk '
    /^boxcar_workspace_make_seconds_sum\{where="cold"\}/ { ms = $2 } /^boxcar_workspace_make_seconds_count\{where="cold"\}/ { mc = $2 }
    /^boxcar_workspace_wipe_seconds_sum/ { ws = $2 } /^boxcar_workspace_wipe_seconds_count/ { wc = $2 }
    /^boxcar_workspace_events_total\{event="taken"\}/ { t = $2 } /^boxcar_workspace_events_total\{event="cold"\}/ { c = $2 }
    END { printf " %s %s %d %d\n", mc ? sprintf("%.1f", ms / mc * 1000) : "-", wc ? sprintf("%.2f", ws / wc * 1000) : "-", t, c }' <<<"$m"
}
if [[ ${BENCH_WS_ONLY:-pool} == pool ]]; then
  read -r c50 c90 cmake _ ctaken ccold <<<"$(pool_bench 0)"
  read -r w50 w90 _ wwipe wtaken wcold <<<"$(pool_bench 3)"
  printf '\nworkspace pool: %s jobs with the default limits, one at a time (claimed -> started)\n\n' "${BENCH_WS_JOBS:-30}"
  printf '%-34s %10s %10s\n' "" "cold" "pooled"
  printf '%-34s %8sms %8sms\n' "start p50" "$c50" "$w50" "start p90" "$c90" "$w90"
  printf '%-34s %10s %10s\n' "workspaces taken ready / cold" "$ctaken / $ccold" "$wtaken / $wcold"
  printf '%-34s %8sms %10s\n' "make a filesystem (cold, mean)" "$cmake" "-"
  printf '%-34s %10s %8sms\n' "wipe for reuse (pool thread, mean)" "-" "$wwipe"
fi
[[ ${BENCH_WS_ONLY:-} == pool ]] && exit 0

if [[ ${BENCH_WS_ONLY:-} != peak ]]; then
mktree "$B/t10" 10
mktree "$B/tbig" "$SIZE_MB"
"$BOXCAR" storage push ws10 "$B/t10" >/dev/null 2>&1
"$BOXCAR" storage push wsbig "$B/tbig" >/dev/null 2>&1

mport=$(free_port)
"$BOXCAR" worker --worker-id bench-ws --work-dir "$B/work" --concurrency 1 --poll-interval 200ms \
  --sandbox namespace --metrics-addr "127.0.0.1:$mport" >"$B/worker.log" 2>&1 &
wpid=$!
trap 'kill $wpid 2>/dev/null || true; wait $wpid 2>/dev/null || true' EXIT
session_job() {  # storage -> job id (a later job of the session: base latest, one 1 MiB file rewritten)
  local id
  id=$(echo "{\"script\": \"echo go; i=\$(( \$(od -An -N1 -tu1 /dev/urandom) % 10 )); head -c 1048576 /dev/urandom > d000/f000\$i\", \"limits\": {\"disk_mb\": $((SIZE_MB * 2 + 64)), \"timeout_s\": 600}, \"artifact\": {\"storage\": \"$1\"}}" \
       | "$BOXCAR" enqueue --spec -)
  "$BOXCAR" status --wait "$id" >/dev/null
  echo "$id"
}
for s in ws10 wsbig; do session_job "$s" >/dev/null; done   # warm: first job, cache filled
# BENCH_WS_SESSION_JOBS (3) more jobs per session, alternating: the median
# of each span (one job is at the mercy of whatever else the host does).
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A start finish pack
for s in ws10 wsbig; do start[$s]=""; pack[$s]=""; finish[$s]=""; done
for _ in $(seq "${BENCH_WS_SESSION_JOBS:-3}"); do
  for s in ws10 wsbig; do
    id=$(session_job "$s")
    [[ $(sql "select status from boxcar.jobs where id = '$id'") == succeeded ]] || { echo "job $id failed"; sql "select error from boxcar.jobs where id = '$id'"; }
    start[$s]+="$(span "$id" claimed started) "
    pack[$s]+="$(span "$id" exited artifact_uploaded) "
    finish[$s]+="$(span "$id" artifact_uploaded finished) "
  done
done
declare -A sent
for s in ws10 wsbig; do sent[$s]=$(sql "select round(avg((result->'artifact'->>'size')::bigint) / 1024.0) from boxcar.jobs where spec->'artifact'->>'storage' = '$s' and (result->'artifact'->>'uploaded')::boolean and created_at > now() - interval '1 hour' and (result->'artifact'->>'layers')::int > 1"); done
for s in ws10 wsbig; do
  start[$s]=$(tr ' ' '\n' <<<"${start[$s]}" | grep . | median)
  pack[$s]=$(tr ' ' '\n' <<<"${pack[$s]}" | grep . | median)
  finish[$s]=$(tr ' ' '\n' <<<"${finish[$s]}" | grep . | median)
done

# How the measured jobs got their base: from the artifact cache (hit: an
# overlay, no download, no extraction) or not.
lookups=$(curl -s "http://127.0.0.1:$mport/metrics" | awk '
  /^boxcar_artifact_cache_lookups_total\{result="hit"\}/ { h = $2 }
  /^boxcar_artifact_cache_lookups_total\{result="miss"\}/ { m = $2 }
  END { printf "%d hits, %d misses", h, m }')
base_path=$(grep 'event=artifact.base' "$B/worker.log" | grep -o 'path="[^"]*"' | head -1 || true)

# A chain of BENCH_WS_CHAIN (50) such jobs on the big tree: what S3 holds
# for it (its versions' layers, manifests and tarballs) after them, and
# after the collector with a keep-the-last-5 policy; then a cold start (a
# worker with an empty cache: the stack's layers downloaded and applied)
# and the whole tree of the last version as one tarball (built on request).
chain_bytes() {
  sql "with v as (select * from boxcar.storage_versions where storage = 'wsbig' and removed_at is null),
        r as (select unnest(layers) as sha, 'layer' as kind from v
              union select sha256, 'tree' from v where format = 'tree'
              union select bottom_tree, 'tree' from v where bottom_tree is not null)
       select coalesce(sum(o.size), 0) from boxcar.storage_objects o
        where exists (select 1 from r where r.sha = o.sha256 and r.kind = o.kind)
           or o.key in (select s3_key from v where s3_key is not null)"
}
first_bytes=$(chain_bytes)
CHAIN=${BENCH_WS_CHAIN:-50}
for _ in $(seq "$CHAIN"); do session_job wsbig >/dev/null; done
chain_sent=$(sql "select sum((result->'artifact'->>'size')::bigint) from (select result from boxcar.jobs where spec->'artifact'->>'storage' = 'wsbig' and (result->'artifact'->>'uploaded')::boolean order by created_at desc limit $CHAIN) j")
chain_before=$(chain_bytes)
chain_layers=$(sql "select cardinality(layers) from boxcar.storage_versions v join boxcar.storages s on s.head_version = v.sha256 and s.name = v.storage where s.name = 'wsbig'")
"$BOXCAR" storage retain wsbig --keep-last 5
"$BOXCAR" storage gc --grace 0s >/dev/null 2>&1
chain_after=$(chain_bytes)
t0=$(now); "$BOXCAR" storage url wsbig >/dev/null 2>&1; t1=$(now); tarball_s=$(secs "$t0" "$t1")
kill "$wpid"; wait "$wpid" 2>/dev/null || true
"$BOXCAR" worker --worker-id bench-ws-cold --work-dir "$B/work-cold" --concurrency 1 --poll-interval 200ms \
  --sandbox namespace >"$B/worker-cold.log" 2>&1 &
wpid=$!
miss_id=$(session_job wsbig)
miss_start=$(span "$miss_id" claimed started)
kill "$wpid"; wait "$wpid" 2>/dev/null || true

# Packing vs tar | gzip -n | sha256sum on the big tree.
TOOL="$BOXCAR_ROOT/build/storage-tests/storage-tool"
mkdir -p "$(dirname "$TOOL")"
cc -std=c17 -O2 -I. -D_GNU_SOURCE -o "$TOOL" tests/storage/storage-tool.c \
  build/libstorage.a build/libcommon.a -lcjson -lcurl -larchive -lz -lcrypto -lpthread
find "$B/tbig" -type f -print0 | xargs -0 cat >/dev/null
t0=$(now); "$TOOL" pack "$B/tbig" "$B/bx.tgz" >/dev/null; t1=$(now); bx=$(secs "$t0" "$t1")
t0=$(now); "$BOXCAR" storage push wsfresh "$B/tbig" >/dev/null 2>&1; t1=$(now); push_s=$(secs "$t0" "$t1")
t0=$(now); tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$B/tbig" -cf - . | gzip -n -6 | sha256sum >/dev/null; t1=$(now)
gnu=$(secs "$t0" "$t1")

fi

# Peak memory charged to the job's cgroup for a 1 GiB workspace (cgroup v1
# memory.max_usage_in_bytes or v2 memory.peak, read from the host while
# the job waits): the bounded filesystem vs a tmpfs /workspace, both under
# --memory-mb 512.  The peak includes page cache (the written file's pages,
# reclaimable on a disk filesystem, not on tmpfs): hence the limit.
peak() {  # helper args... -> "peak MiB, oom_killed"
  "$SB" --status-fd 3 "$@" --memory-mb 512 --timeout 120 -- sh -c \
    "${PEAK_PRE:-}dd if=/dev/zero of=/workspace/g bs=1M count=1024 2>/dev/null; sync; echo written; sleep 3" \
    >"$B/peak.out" 2>&1 3>"$B/peak.status" &
  local p=$! init="" rel="" f=""
  for _ in $(seq 600); do grep -q written "$B/peak.out" && break; kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  # the sandbox's init is the helper's child; its cgroup as the host sees it
  init=$(pgrep -P "$p" | head -1)
  rel=$(grep -E '^[0-9]+:(memory|):' "/proc/$init/cgroup" 2>/dev/null | head -1 | cut -d: -f3)
  for c in "/sys/fs/cgroup/memory$rel/memory.max_usage_in_bytes" "/sys/fs/cgroup$rel/memory.peak"; do
    [[ -r $c ]] && { f=$c; break; }
  done
  local v=0; [[ -n $f ]] && v=$(cat "$f")
  wait $p || true
  echo "$((v >> 20)) MiB, oom_killed $(jq -r .oom_killed "$B/peak.status")"
}
truncate -s $((SIZE_MB + 100))M "$B/peak.img"
mke2fs -t ext4 -q -F -m 0 -N 4096 -O ^has_journal "$B/peak.img"
mkdir -p "$B/peak"; mount -o loop,nosuid,nodev "$B/peak.img" "$B/peak"; mkdir -p "$B/peak/ws"
peak_fs=$(peak --workspace "$B/peak/ws" --disk-mb $((SIZE_MB + 100)))
umount "$B/peak"
peak_tmpfs=$(peak --disk-mb $((SIZE_MB + 100)))
# The same on an overlay workspace over the big tree (as a job over a
# cached 1 GiB artifact sees it), the job reading all of the base first.
peak_ovl="-"
if [[ -d $B/tbig ]] && grep -qw overlay /proc/filesystems; then
  mkdir -p "$B/peak"; mount -o loop,nosuid,nodev "$B/peak.img" "$B/peak"
  rm -rf "$B/peak/up" "$B/peak/wk" "$B/peak/ws"; mkdir -p "$B/peak/up" "$B/peak/wk" "$B/ovl"
  chown 65534:65534 "$B/peak/up"
  mount -t overlay -o "lowerdir=$B/tbig,upperdir=$B/peak/up,workdir=$B/peak/wk,nosuid,nodev" overlay "$B/ovl"
  peak_ovl=$(PEAK_PRE='find /workspace -type f -exec cat {} + >/dev/null; ' peak --workspace "$B/ovl" --disk-mb $((SIZE_MB + 100)))
  umount "$B/ovl"; umount "$B/peak"
fi

if [[ ${BENCH_WS_ONLY:-} != peak ]]; then
printf '\nworkspace benchmark (namespace backend, later jobs of a session, one file changed each; median of %s)\n\n' "${BENCH_WS_SESSION_JOBS:-3}"
printf '%-34s %10s %10s\n' "" "10 MiB" "$SIZE_MB MiB"
printf '%-34s %8sms %8sms\n' "start (claimed -> started)" "${start[ws10]}" "${start[wsbig]}"
printf '%-34s %8sms %8sms\n' "pack + upload (exited -> uploaded)" "${pack[ws10]}" "${pack[wsbig]}"
printf '%-34s %8sms %8sms\n' "finish (uploaded -> finished)" "${finish[ws10]}" "${finish[wsbig]}"
printf '%-34s %8sKiB %8sKiB\n' "layer sent to S3 per job (mean)" "${sent[ws10]}" "${sent[wsbig]}"
printf '%-34s %s (%s)\n' "artifact base from the cache" "$lookups" "$base_path"
printf '%-34s %10s %8sms\n' "start on a miss (empty cache)" "-" "$miss_start"
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
printf '\nlayered versions: a chain of %s jobs on the %s MiB tree, one 1 MiB file rewritten each\n' "$CHAIN" "$SIZE_MB"
printf '%-34s %s\n' "S3 bytes: the first version" "$(mib "$first_bytes")"
printf '%-34s %s (sent: %s; goal <= 1.2 x first + changed = %s)\n' "  after the chain" "$(mib "$chain_before")" "$(mib "$chain_sent")" \
  "$(mib "$(awk -v f="$first_bytes" -v c="$CHAIN" 'BEGIN { printf "%d", 1.2 * f + c * 1048576 }')")"
printf '%-34s %s\n' "  after gc (keep the last 5)" "$(mib "$chain_after")"
printf '%-34s %s\n' "layers of the last version" "$chain_layers"
printf '%-34s %9ss\n' "whole-tree tarball of the last" "$tarball_s"
printf '\n%-34s %9ss\n%-34s %9ss\n%-34s %9ss\n' "pack + sha256 ($SIZE_MB MiB, boxcar)" "$bx" "push (manifest + whole layer + up)" "$push_s" "tar | gzip -n -6 | sha256sum" "$gnu"
fi
printf '\n%-34s %s\n%-34s %s\n' "cgroup peak, 1 GiB ws, 512 MiB limit" "$peak_fs" "  same on a tmpfs /workspace" "$peak_tmpfs"
printf '%-34s %s\n' "  same on an overlay over $SIZE_MB MiB" "$peak_ovl"
