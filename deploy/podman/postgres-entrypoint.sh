#!/bin/sh
# postgres-entrypoint: makes the cluster in $PGDATA on first start (a
# superuser $POSTGRES_USER with $POSTGRES_PASSWORD, a database $POSTGRES_DB),
# then runs postgres as the postgres user, listening on every address with
# password (scram-sha-256) authentication over TCP.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
	echo "postgres-entrypoint: POSTGRES_PASSWORD is empty; set one" >&2
	exit 1
fi
BIN=/usr/lib/postgresql/15/bin
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
	chown postgres "$pw"
	as_pg "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" \
		--auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
	rm -f "$pw"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	# The local socket maps the OS user postgres to the superuser, for the
	# database's creation below only.
	echo "local all all trust" >"$PGDATA/pg_hba.conf.init"
	cat "$PGDATA/pg_hba.conf" >>"$PGDATA/pg_hba.conf.init"
	as_pg "$BIN/pg_ctl" -D "$PGDATA" -w -s \
		-o "-c listen_addresses='' -c hba_file=$PGDATA/pg_hba.conf.init" start
	if [ "$POSTGRES_DB" != postgres ]; then
		as_pg createdb -U "$POSTGRES_USER" -O "$POSTGRES_USER" -- "$POSTGRES_DB"
	fi
	as_pg "$BIN/pg_ctl" -D "$PGDATA" -w -s -m fast stop
	rm -f "$PGDATA/pg_hba.conf.init"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
	"$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
