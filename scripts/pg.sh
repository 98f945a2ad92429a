#!/usr/bin/env bash
# Local PostgreSQL 15 cluster for development and tests, run as the
# `postgres` user (PostgreSQL refuses root), data under .dev/pg.
#   pg.sh start | stop | restart | status | createdb NAME | dropdb NAME | psql [ARGS]
#   pg.sh listen ADDR CIDR   also listen on ADDR and let the boxcar role in
#                            from CIDR (scram), then restart: replicas in
#                            their own network namespaces reach it there
#   pg.sh unlisten           back to 127.0.0.1 alone, then restart
#   pg.sh pids               the cluster's processes: the postmaster and its
#                            children (nothing when it is not running)
set -euo pipefail
source "$(dirname "$0")/env.sh"

as_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    su postgres -s /bin/bash -c "$(printf '%q ' "$@")"
  else
    "$@"
  fi
}

init() {
  [[ -f "$BOXCAR_PG_DATA/PG_VERSION" ]] && return 0
  mkdir -p "$BOXCAR_PG_DATA" "$BOXCAR_PG_SOCKDIR"
  [[ $(id -u) -eq 0 ]] && chown -R postgres:postgres "$BOXCAR_DEV/pg"
  chmod 700 "$BOXCAR_PG_DATA"
  local pw; pw=$(mktemp); echo postgres > "$pw"; chmod 644 "$pw"
  # Local socket: trust for the postgres superuser (scripts); TCP: scram
  # for the boxcar role, as an application would connect.
  as_pg initdb -D "$BOXCAR_PG_DATA" -U postgres --auth-local=trust \
        --auth-host=scram-sha-256 --pwfile="$pw" -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pw"
  cat >> "$BOXCAR_PG_DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $BOXCAR_PG_PORT
unix_socket_directories = '$BOXCAR_PG_SOCKDIR'
max_connections = 300
shared_buffers = 256MB
fsync = on
synchronous_commit = on
log_min_messages = warning
# Loaded, counting nothing unless a session or database asks
# (bench/pg_statements.sh: a job's cost in the database per statement).
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = none
CONF
}

start() {
  init
  mkdir -p "$BOXCAR_PG_SOCKDIR"; [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$BOXCAR_PG_SOCKDIR"
  if ! as_pg pg_ctl -D "$BOXCAR_PG_DATA" status >/dev/null 2>&1; then
    if ! as_pg pg_ctl -D "$BOXCAR_PG_DATA" -l "$BOXCAR_DEV/pg/server.log" -w -t 60 start >/dev/null; then
      echo "pg.sh: PostgreSQL did not start on port $BOXCAR_PG_PORT; its log says:" >&2
      tail -n 5 "$BOXCAR_DEV/pg/server.log" >&2
      exit 1
    fi
  fi
  psql_admin -qc "do \$\$ begin
      if not exists (select from pg_roles where rolname = 'boxcar') then
        create role boxcar login password 'boxcar' createdb;
      end if; end \$\$;" >/dev/null
  # The group roles of sql/99_roles.sql, created as a DBA would: the boxcar
  # role migrates, and may not create roles.
  psql_admin -qc "do \$\$ declare r text; begin
      foreach r in array array['boxcar_app', 'boxcar_worker', 'boxcar_monitor', 'boxcar_dashboard'] loop
        if not exists (select from pg_roles where rolname = r) then
          execute format('create role %I nologin', r);
        end if;
      end loop; end \$\$;" >/dev/null
  createdb boxcar
}

stop() {
  [[ -f "$BOXCAR_PG_DATA/PG_VERSION" ]] || return 0
  as_pg pg_ctl -D "$BOXCAR_PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
}

psql_admin() { psql -X -v ON_ERROR_STOP=1 "$BOXCAR_ADMIN_URL" "$@"; }

createdb() {
  local name=$1
  if [[ -z $(psql_admin -tAc "select 1 from pg_database where datname = '$name'") ]]; then
    psql_admin -qc "create database \"$name\" owner boxcar" >/dev/null
  fi
  # pgTAP and gen_random_uuid come from extensions the app role may not create.
  psql -X -q -v ON_ERROR_STOP=1 "postgresql:///$name?host=$BOXCAR_PG_SOCKDIR&port=$BOXCAR_PG_PORT&user=postgres" \
       -c "create extension if not exists pgtap" >/dev/null 2>&1 || true
}

# The pg_hba.conf lines `listen` adds end with this marker.
HBA_MARK="# boxcar: pg.sh listen"
listen() {
  local addr=$1 cidr=$2 hba="$BOXCAR_PG_DATA/pg_hba.conf"
  psql_admin -qc "alter system set listen_addresses = '127.0.0.1,$addr'" >/dev/null
  if ! grep -qF "$cidr scram-sha-256 $HBA_MARK" "$hba"; then
    as_pg sh -c "echo 'host all boxcar $cidr scram-sha-256 $HBA_MARK' >> '$hba'"
  fi
  stop; start
}

unlisten() {
  local hba="$BOXCAR_PG_DATA/pg_hba.conf"
  psql_admin -qc "alter system reset listen_addresses" >/dev/null
  as_pg sed -i "/$HBA_MARK\$/d" "$hba"
  stop; start
}

pids() {
  local pm
  pm=$(head -1 "$BOXCAR_PG_DATA/postmaster.pid" 2>/dev/null) || return 0
  echo "$pm" $(pgrep -P "$pm" || true)
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) as_pg pg_ctl -D "$BOXCAR_PG_DATA" status ;;
  createdb) createdb "$2" ;;
  dropdb) psql_admin -qc "drop database if exists \"$2\" with (force)" >/dev/null ;;
  psql) shift; psql_admin "$@" ;;
  url) db_url "${2:-boxcar}" ;;
  listen) listen "$2" "$3" ;;
  unlisten) unlisten ;;
  pids) pids ;;
  *) echo "usage: $0 start|stop|restart|status|createdb NAME|dropdb NAME|psql|url [DB]|listen ADDR CIDR|unlisten|pids" >&2; exit 2 ;;
esac
