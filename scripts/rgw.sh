#!/usr/bin/env bash
# Local Ceph RADOS Gateway for the tests that want a real S3: Debian's
# radosgw (Ceph 16.2) on a one-node cluster of its own, started by hand
# (one monitor, one OSD on a file-backed bluestore, no manager; cephx keys
# made by ceph-authtool), data under $BOXCAR_DEV/rgw.  Unlike s3rver it checks every
# SigV4 signature, honours If-None-Match and implements STS AssumeRole.
# Ceph 16.2 has no cluster-less backend (dbstore came with 17), hence the
# small cluster.
#
#   scripts/rgw.sh start    start what is not running (idempotent); prints the
#                           environment for boxcar:  eval "$(scripts/rgw.sh start)"
#   scripts/rgw.sh env      print that environment only
#   scripts/rgw.sh stop     stop the gateway and the cluster (idempotent)
#   scripts/rgw.sh status   exit 0 when the gateway answers
#   scripts/rgw.sh log      path of the gateway's log
#   scripts/rgw.sh admin .. radosgw-admin against this cluster
#
# Ports: the gateway on 127.0.0.1:$BOXCAR_RGW_PORT (default 27580), the
# monitor on the next one, a second gateway with STS on the one after
# (port + 2), and the OSD's four listeners within the twelve after those
# (port + 3 to + 14).  The default is below Linux's ephemeral range
# (32768-60999): the cluster starts in the middle of a test run, when a
# port in that range may be some connection's local port (54580 once was,
# and the gateway could not bind); a port given in that range still works
# most of the time, and the OSD's range wider than four lets it bind
# around a port in use.  Two gateways because
# RGW 16.2 with STS enabled answers every failed S3 authentication with
# AccessDenied, where AWS (and RGW without STS) says SignatureDoesNotMatch
# or InvalidAccessKeyId.  The user $BOXCAR_RGW_USER has the fixed keys
# below; bucket $BOXCAR_S3_BUCKET.  STS: role $BOXCAR_RGW_ROLE (trusting
# that user, allowed every s3 action) is assumable at
# $BOXCAR_RGW_STS_ENDPOINT, whose S3 also takes the temporary credentials.
set -euo pipefail
source "$(dirname "$0")/env.sh"

: "${BOXCAR_RGW_PORT:=27580}"
: "${BOXCAR_S3_BUCKET:=boxcar}"
BOXCAR_RGW_USER=boxcar
BOXCAR_RGW_ROLE=boxcar-test
ACCESS_KEY=BOXCARRGWTESTKEY0001
SECRET_KEY=boxcar-rgw-test-secret-not-for-production
MON_PORT=$((BOXCAR_RGW_PORT + 1))
STS_PORT=$((BOXCAR_RGW_PORT + 2))
OSD_PORT_MIN=$((BOXCAR_RGW_PORT + 3))
OSD_PORT_MAX=$((BOXCAR_RGW_PORT + 14))
RGW_DIR="$BOXCAR_DEV/rgw"
CONF="$RGW_DIR/ceph.conf"
LOG="$RGW_DIR/log/client.rgw.log"
export CEPH_CONF="$CONF"

print_env() {
  cat <<ENV
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$BOXCAR_RGW_PORT
export BOXCAR_S3_BUCKET=$BOXCAR_S3_BUCKET
export BOXCAR_S3_PREFIX=\${BOXCAR_S3_PREFIX:-}
export BOXCAR_RGW_STS_ENDPOINT=http://127.0.0.1:$STS_PORT
export BOXCAR_RGW_ROLE_ARN=arn:aws:iam:::role/$BOXCAR_RGW_ROLE
export BOXCAR_RGW_USER_ARN=arn:aws:iam:::user/$BOXCAR_RGW_USER
ENV
}

answers() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${1:-$BOXCAR_RGW_PORT}/"; }

pid_of() {  # pid_of NAME: the daemon's pid when it runs
  local f="$RGW_DIR/run/$1.pid" pid
  [[ -f $f ]] || return 1
  pid=$(cat "$f")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

port_taken() { ss -Hltn "sport = :$1" | grep -q .; }

write_conf() {
  mkdir -p "$RGW_DIR"/{run,log,mon,osd}
  cat > "$CONF" <<CONF
# Written by scripts/rgw.sh: a throwaway one-node cluster for tests.
[global]
fsid = $1
mon_host = v2:127.0.0.1:$MON_PORT
run_dir = $RGW_DIR/run
pid_file = $RGW_DIR/run/\$name.pid
admin_socket = $RGW_DIR/run/\$name.asok
log_file = $RGW_DIR/log/\$name.log
keyring = $RGW_DIR/keyring
client_mount_timeout = 20
rados_mon_op_timeout = 20
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
mon_data_avail_warn = 1
auth_allow_insecure_global_id_reclaim = false
ms_bind_msgr1 = false
ms_bind_port_min = $OSD_PORT_MIN
ms_bind_port_max = $OSD_PORT_MAX
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_warn_on_pool_no_redundancy = false
osd_crush_chooseleaf_type = 0
[mon]
mon_data = $RGW_DIR/mon/\$id
mon_cluster_log_file = $RGW_DIR/log/cluster.log
[osd]
osd_data = $RGW_DIR/osd/\$id
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = 8589934592
bluestore_cache_autotune = false
bluestore_cache_size = 67108864
osd_memory_target = 939524096
bluestore_fsck_on_mount = false
osd_max_object_name_len = 460
osd_max_object_namespace_len = 64
[client]
rgw_dns_name = 127.0.0.1
rgw_enable_usage_log = false
rgw_thread_pool_size = 32
[client.rgw]
rgw_frontends = beast endpoint=127.0.0.1:$BOXCAR_RGW_PORT
[client.rgw.sts]
rgw_frontends = beast endpoint=127.0.0.1:$STS_PORT
rgw_sts_key = $(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
rgw_s3_auth_use_sts = true
CONF
}

# A one-node cluster: keys for every daemon in one keyring, a monitor map
# of one, the monitor's and the OSD's stores.  Once, at the first start.
create_cluster() {
  rm -rf "$RGW_DIR"/{mon,osd,run,keyring,monmap,user.done}
  local fsid; fsid=$(cat /proc/sys/kernel/random/uuid)
  write_conf "$fsid"
  local k="$RGW_DIR/keyring"
  ceph-authtool "$k" --create-keyring --gen-key -n mon. --cap mon 'allow *'
  ceph-authtool "$k" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *'
  ceph-authtool "$k" --gen-key -n osd.0 --cap mon 'allow profile osd' --cap osd 'allow *' \
    --cap mgr 'allow profile osd'
  local g
  for g in client.rgw client.rgw.sts; do
    ceph-authtool "$k" --gen-key -n "$g" --cap mon 'allow rw' --cap osd 'allow rwx' --cap mgr 'allow rw'
  done
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_PORT]" "$RGW_DIR/monmap"
  timeout 60 ceph-mon --mkfs -i a --monmap "$RGW_DIR/monmap" --keyring "$k"
  touch "$RGW_DIR/mon/a/done"
}

create_osd() {
  local uuid; uuid=$(cat /proc/sys/kernel/random/uuid)
  timeout 60 ceph osd new "$uuid"
  mkdir -p "$RGW_DIR/osd/0"
  timeout 60 ceph-osd -i 0 --mkfs --osd-uuid "$uuid"
  touch "$RGW_DIR/osd/0/done"
}

# The S3 user with the fixed keys (it may assume roles), its bucket, and a
# role it may assume that allows every s3 action.
create_user() {
  timeout 60 radosgw-admin user create --uid "$BOXCAR_RGW_USER" --display-name boxcar \
    --access-key "$ACCESS_KEY" --secret "$SECRET_KEY" --caps 'roles=*'
  timeout 60 radosgw-admin role create --role-name "$BOXCAR_RGW_ROLE" --path / \
    --assume-role-policy-doc '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/'"$BOXCAR_RGW_USER"'"]},"Action":["sts:AssumeRole"]}]}'
  timeout 60 radosgw-admin role-policy put --role-name "$BOXCAR_RGW_ROLE" --policy-name s3 \
    --policy-doc '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":"arn:aws:s3:::*"}]}'
  local code
  code=$(curl -s -o "$RGW_DIR/log/bucket.xml" -w '%{http_code}' --max-time 20 -X PUT \
    --aws-sigv4 aws:amz:us-east-1:s3 -u "$ACCESS_KEY:$SECRET_KEY" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "http://127.0.0.1:$BOXCAR_RGW_PORT/$BOXCAR_S3_BUCKET")
  [[ $code == 200 ]] || { echo "rgw.sh: creating bucket $BOXCAR_S3_BUCKET: HTTP $code" >&2; return 1; }
  touch "$RGW_DIR/user.done"
}

up() {  # up NAME CMD...: start a daemon (it forks) unless it runs
  pid_of "$1" >/dev/null && return 0
  shift
  timeout 60 "$@"
}

start() {
  if pid_of client.rgw >/dev/null && answers; then print_env; return 0; fi
  if ! pid_of client.rgw >/dev/null && answers; then
    echo "rgw.sh: port $BOXCAR_RGW_PORT is taken by something else" >&2; return 1
  fi
  command -v radosgw >/dev/null || "$BOXCAR_ROOT/scripts/deps.sh" all
  local setup="$RGW_DIR/log/setup.log"
  mkdir -p "$RGW_DIR/log"
  {
    # An existing cluster's configuration is written again (same fsid):
    # its ports follow this script's layout.
    # Daemons still running with other ports are stopped first, and the
    # monitor, whose address is in its map, is given the new one.
    if [[ -e $RGW_DIR/mon/a/done ]]; then
      local before fsid; before=$(cat "$CONF"); fsid=$(sed -n 's/^fsid = //p' "$CONF")
      write_conf "$fsid"
      if [[ $(cat "$CONF") != "$before" ]]; then
        stop
        monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_PORT]" "$RGW_DIR/monmap" &&
          timeout 60 ceph-mon -i a --inject-monmap "$RGW_DIR/monmap"
      fi
    else create_cluster; fi
    up mon.a ceph-mon -i a
    [[ -e $RGW_DIR/osd/0/done ]] || create_osd
    up osd.0 ceph-osd -i 0
    up client.rgw radosgw -n client.rgw
    up client.rgw.sts radosgw -n client.rgw.sts
  } >>"$setup" 2>&1 || { echo "rgw.sh: the cluster did not start; see $setup" >&2; return 1; }
  # The gateway answers once its pools exist, which needs the OSD up.  An
  # OSD or a gateway that gave up (its port was some connection's for a
  # moment, say) is started again.  Two minutes: a first start on a
  # loaded host takes one.
  local i
  for i in $(seq 1200); do
    if (( i % 50 == 0 )); then
      {
        up osd.0 ceph-osd -i 0
        up client.rgw radosgw -n client.rgw
        up client.rgw.sts radosgw -n client.rgw.sts
      } >>"$setup" 2>&1 || true
    fi
    if answers && answers "$STS_PORT"; then
      [[ -e $RGW_DIR/user.done ]] || create_user >>"$setup" 2>&1 ||
        { echo "rgw.sh: creating the S3 user, role and bucket failed; see $setup" >&2; return 1; }
      print_env; return 0
    fi
    sleep 0.1
  done
  echo "rgw.sh: radosgw did not answer within 120 s; see $LOG and $setup" >&2
  return 1
}

stop_one() {  # stop_one NAME [TENTHS]: TERM, then KILL after TENTHS (100) tenths of a second
  local pid
  if pid=$(pid_of "$1"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq "${2:-100}"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$RGW_DIR/run/$1.pid"
}

# The OSD's memstore is written to its directory when it stops cleanly, so
# the data outlives a stop.
stop() {
  local n
  # Gateways first: one that loses its OSD first waits for it at exit.  A
  # gateway may take 10 s to finish its background threads; what it stored
  # is in the OSD already, so it gets 3.
  for n in client.rgw client.rgw.sts; do stop_one "$n" 30 & done
  wait
  stop_one osd.0   # it tells the monitor it is going: the monitor goes last
  stop_one mon.a
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  status) pid_of client.rgw >/dev/null && answers ;;
  log) echo "$LOG" ;;
  admin) shift; timeout 60 radosgw-admin "$@" ;;
  *) echo "usage: $0 start|stop|env|status|log|admin ARGS" >&2; exit 2 ;;
esac
