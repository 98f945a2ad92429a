#!/usr/bin/env bash
# Egress allow-lists (issue 14): what "network": {"allow": [...]} costs.
#   - pickup: the worker (warm pool, concurrency 1) runs `true` jobs one
#     after another with network "none" and with an allow-list; per mode,
#     the median from enqueue to the command's start (result.started_at -
#     created_at) and the mean warm handoff (boxcar_sandbox_handoff_seconds:
#     an allow-list job's routes and sockets are set up there);
#   - cold: boxcar-sandbox -- true, --network none vs allow, hyperfine;
#   - throughput: curl downloads 100 MiB from a "remote host" (a network
#     namespace behind a veth pair) inside boxcar-sandbox, with --network
#     host and through the egress proxy (--network allow), median of 5.
# Needs root, ip netns, hyperfine, jq, python3.
#   bench/egress.sh [JOBS]   (default 40; or make bench BENCHES=egress)
set -euo pipefail
source "$(dirname "$0")/../tests/lib.sh"
cd "$BOXCAR_ROOT"
jobs=${1:-40}
for t in hyperfine jq python3 curl; do
  command -v "$t" >/dev/null || { echo "bench-egress: $t is missing" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "bench-egress: needs root (network namespaces)" >&2; exit 1; }
make --no-print-directory -s build/boxcar build/boxcar-sandbox >/dev/null

tmp=$(mktemp -d /tmp/boxcar-bench-egress.XXXXXX)
cleanup() { cleanup_bg; remote_host_down; rm -rf "$tmp"; }
trap cleanup EXIT
remote_host bcbe
mkdir -p "$tmp/www"
head -c $((100 << 20)) /dev/urandom > "$tmp/www/big"
bg ip netns exec "$ns" python3 -m http.server 8080 --bind "$remote" --directory "$tmp/www" >/dev/null 2>&1
for _ in $(seq 50); do curl -sf -o /dev/null "http://$remote:8080/" && break; sleep 0.2; done

SB=build/boxcar-sandbox
rule="$net.0/24:8080"

# ---- throughput ---------------------------------------------------------
speed() { # MODE ARGS...: MiB/s of one 100 MiB download
  "$SB" "$@" -- /usr/bin/curl -sS -o /dev/null -w '%{speed_download}\n' "http://$remote:8080/big" |
    awk '{ printf "%.1f\n", $1 / 1048576 }'
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
host_speed=$(for _ in 1 2 3 4 5; do speed --network host; done | median)
allow_speed=$(for _ in 1 2 3 4 5; do speed --network allow --network-allow "$rule"; done | median)

# ---- cold setup ---------------------------------------------------------
hyperfine -N --warmup 10 --runs 100 --export-json "$tmp/cold.json" \
  -n none "$SB --network none -- true" \
  -n allow "$SB --network allow --network-allow $rule -- true" >&2
cold() { jq ".results[] | select(.command==\"$1\") | .median * 1000" "$tmp/cold.json"; }

# ---- pickup through the worker -----------------------------------------
scripts/pg.sh start >/dev/null
fresh_db bench_egress
mport=$(free_port)
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
start_worker bench-egress --concurrency 1 --poll-interval 1s --sandbox namespace \
  --queues bench --network-allow "bench=$rule,pypi.org:443" --metrics-addr "127.0.0.1:$mport"
for _ in $(seq 100); do metric 'boxcar_warm_sandboxes{state="ready"}' | grep -q '^[1-9]' && break; sleep 0.2; done
run_mode() { # NETWORK_JSON: prints "median_ms mean_handoff_us"
  local s0 c0 ids=()
  s0=$(metric boxcar_sandbox_handoff_seconds_sum) c0=$(metric boxcar_sandbox_handoff_seconds_count)
  for _ in $(seq "$jobs"); do
    id=$(echo "{\"command\": [\"true\"], \"network\": $1}" | "$BOXCAR" enqueue --queue bench --spec -)
    "$BOXCAR" status --wait "$id" >/dev/null
    ids+=("'$id'")
  done
  local med
  med=$(sql "select percentile_cont(0.5) within group (order by extract(epoch from
               ((result->>'started_at')::timestamptz - created_at)) * 1000)
             from boxcar.jobs where id in ($(IFS=,; echo "${ids[*]}"))")
  echo "$med $(jq -n "($(metric boxcar_sandbox_handoff_seconds_sum) - $s0) / ($(metric boxcar_sandbox_handoff_seconds_count) - $c0) * 1e6")"
}
read -r none_ms none_us <<<"$(run_mode '"none"')"
read -r allow_ms allow_us <<<"$(run_mode "{\"allow\": [\"$rule\", \"pypi.org:443\"]}")"

printf 'pickup (enqueue -> command start, median of %d, warm pool):\n' "$jobs"
printf '  none:       %.2f ms   warm handoff mean %.0f us\n' "$none_ms" "$none_us"
printf '  allow-list: %.2f ms   warm handoff mean %.0f us\n' "$allow_ms" "$allow_us"
printf 'cold boxcar-sandbox -- true (median): none %.2f ms, allow %.2f ms\n' "$(cold none)" "$(cold allow)"
printf '100 MiB download (median of 5): host %s MiB/s, through the proxy %s MiB/s\n' \
  "$host_speed" "$allow_speed"
