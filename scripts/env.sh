# Sourced by the scripts: where the local development services live.
# Everything goes under $BOXCAR_DEV when the caller sets it, else under .dev/
# in the project unless the postgres user cannot reach it (a checkout under
# /root), then under /var/tmp, keyed by the path.
BOXCAR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BOXCAR_ROOT
: "${BOXCAR_PG_PORT:=55432}"
export BOXCAR_PG_PORT

dev_dir() {
  local d="$BOXCAR_ROOT/.dev"
  mkdir -p "$d"
  if [[ $(id -u) -eq 0 ]] && ! su postgres -s /bin/sh -c "test -x '$d'" 2>/dev/null; then
    d="/var/tmp/boxcar-dev-$(printf '%s' "$BOXCAR_ROOT" | sha256sum | cut -c1-12)"
    mkdir -p "$d"
  fi
  printf '%s\n' "$d"
}

# A caller's BOXCAR_DEV wins (a test running the demo from an empty
# directory); it must be reachable by the postgres user when run as root.
if [[ -n ${BOXCAR_DEV:-} ]]; then
  [[ $BOXCAR_DEV == /* ]] || BOXCAR_DEV=$PWD/$BOXCAR_DEV
else
  BOXCAR_DEV=$(dev_dir)
fi
export BOXCAR_DEV
export BOXCAR_PG_DATA="$BOXCAR_DEV/pg/data"
export BOXCAR_PG_SOCKDIR="$BOXCAR_DEV/pg/run"
# The application role; the password is for this local cluster only.
export BOXCAR_ADMIN_URL="postgresql:///postgres?host=$BOXCAR_PG_SOCKDIR&port=$BOXCAR_PG_PORT&user=postgres"
db_url() { printf 'postgresql://boxcar:boxcar@127.0.0.1:%s/%s\n' "$BOXCAR_PG_PORT" "$1"; }
export PATH="/usr/lib/postgresql/15/bin:$PATH"
# free_port [ADDR]: a TCP port that was free on ADDR (127.0.0.1) a moment ago.
free_port() {
  python3 -c 'import socket, sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' \
    "${1:-127.0.0.1}"
}
