# Sourced (after scripts/env.sh) by the replica bench and its e2e check:
# worker replicas as separate hosts.  Each replica gets a network namespace
# of its own, joined to the host by a veth pair whose host end is on a
# bridge; PostgreSQL listens on the bridge's address (pg.sh listen) and
# the replicas reach it there, over their veths, never over loopback.
# Names and the subnet derive from BOXCAR_PG_PORT, so two checkouts with
# different ports do not collide.  Needs root (ip netns, ip link).
_rn_tag="bc$BOXCAR_PG_PORT"
_rn_a=$(( BOXCAR_PG_PORT / 256 % 256 )) _rn_b=$(( BOXCAR_PG_PORT % 256 ))
RN_HOST="10.$_rn_a.$_rn_b.1"
RN_CIDR="10.$_rn_a.$_rn_b.0/24"
RN_BRIDGE="${_rn_tag}br"
RN_COUNT=0

rn_ns() { echo "${_rn_tag}-r$1"; }

# rn_up COUNT: the bridge, COUNT namespaces (1..COUNT), and PostgreSQL
# listening on the bridge.  The namespaces have loopback and their veth.
rn_up() {
  local n=$1 i ns
  rn_down_links
  ip link add "$RN_BRIDGE" type bridge
  ip addr add "$RN_HOST/24" dev "$RN_BRIDGE"
  ip link set "$RN_BRIDGE" up
  for i in $(seq 1 "$n"); do
    ns=$(rn_ns "$i")
    ip netns add "$ns"
    ip link add "${_rn_tag}h$i" type veth peer name "${_rn_tag}n$i"
    ip link set "${_rn_tag}n$i" netns "$ns"
    ip link set "${_rn_tag}h$i" master "$RN_BRIDGE" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "${_rn_tag}n$i" name eth0
    ip -n "$ns" addr add "10.$_rn_a.$_rn_b.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  RN_COUNT=$n
  "$BOXCAR_ROOT/scripts/pg.sh" listen "$RN_HOST" "$RN_CIDR"
}

# The namespaces, veths and bridge a previous run may have left.
rn_down_links() {
  local ns l
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${_rn_tag}-r"); do
    ip netns del "$ns"
  done
  # A veth goes with its namespace only once nothing holds that namespace.
  for l in $(ip -o link show 2>/dev/null | grep -o "${_rn_tag}h[0-9]*" | sort -u); do
    ip link del "$l" 2>/dev/null || true
  done
  ip link del "$RN_BRIDGE" 2>/dev/null || true
}

# rn_down: PostgreSQL back on loopback alone, the namespaces gone.
rn_down() {
  "$BOXCAR_ROOT/scripts/pg.sh" unlisten
  rn_down_links
}

# rn_url DB: the database URL as a replica sees it.
rn_url() { printf 'postgresql://boxcar:boxcar@%s:%s/%s\n' "$RN_HOST" "$BOXCAR_PG_PORT" "$1"; }

# rn_exec I CMD...: CMD inside replica I's namespace.
rn_exec() { local i=$1; shift; nsenter --net="$(rn_netns "$i")" -- "$@"; }
# The namespace's file, for a background process started as
#   nsenter --net="$(rn_netns I)" -- CMD &
# (nsenter execs CMD, so $! is CMD's pid; `ip netns exec` forks and
# waits, and a shell function in the background is a subshell: killing
# either would leave CMD running.)
rn_netns() { echo "/run/netns/$(rn_ns "$1")"; }
