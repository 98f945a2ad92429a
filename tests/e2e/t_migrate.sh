# boxcar migrate: concurrent runs are safe, an edited applied migration and
# a database newer than the binary are refused, and nothing changes then.
source "$(dirname "$0")/../lib.sh"
"$BOXCAR_ROOT/scripts/pg.sh" dropdb e2e_migrate
"$BOXCAR_ROOT/scripts/pg.sh" createdb e2e_migrate
export DATABASE_URL; DATABASE_URL=$(db_url e2e_migrate)
tmp=$(mktemp -d)
for i in 1 2 3; do "$BOXCAR" migrate > "$tmp/m$i.out" 2>&1 & pids[$i]=$!; done
rcs=""; for i in 1 2 3; do wait "${pids[$i]}"; rcs+="$? "; done
is "three concurrent migrate runs all succeed" "$rcs" "0 0 0 "
n=$(ls "$BOXCAR_ROOT"/migrations/*.sql | wc -l)
is "each migration is recorded once" "$(sql "select count(*) || ' ' || count(distinct version) from boxcar.schema_migrations")" "$n $n"
is "exactly one run applied them" "$(grep -h -o '^migrations: [0-9]* applied' "$tmp"/m*.out | sort | tr '\n' '|')" "migrations: 0 applied|migrations: 0 applied|migrations: $n applied|"
is "a later run applies nothing and re-applies the SQL API" "$("$BOXCAR" migrate | cut -d';' -f1)" "migrations: 0 applied, $n already applied"
sql "update boxcar.schema_migrations set checksum = repeat('0', 64) where version = '0001_jobs'"
out=$("$BOXCAR" migrate 2>&1); rc=$?
is "an edited applied migration is refused" "$rc" "1"
check "with a message naming it" grep -q "migrations/0001_jobs.sql was changed after it was applied" <<<"$out"
sql "update boxcar.schema_migrations set checksum = encode(sha256(convert_to('x', 'UTF8')), 'hex') where false"
sql "delete from boxcar.schema_migrations where version = '0001_jobs'"
sql "insert into boxcar.schema_migrations (version, checksum) values ('0001_jobs', 'ok'), ('9999_future', 'x')" >/dev/null
out=$("$BOXCAR" migrate 2>&1); rc=$?
is "a database migrated by a newer boxcar is refused" "$rc" "1"
check "saying so" grep -q "9999_future, which this boxcar does not know" <<<"$out"
is "a refused run changes nothing" "$(sql "select count(*) from boxcar.schema_migrations")" "$((n + 1))"
out=$("$BOXCAR" migrate --database-url postgresql://boxcar:wrong@127.0.0.1:$BOXCAR_PG_PORT/e2e_migrate 2>&1); rc=$?
is "a bad password fails cleanly" "$rc" "1"
check "without echoing the password" bash -c "! grep -q wrong <<<'$out' && grep -q 'password authentication failed' <<<'$out'"

# A database migrated before 0007_queue_names became 0008 (a renumbering
# when two migrations landed together) recorded the old name: migrate
# takes it as the same file and records the new name.
fresh_db e2e_migrate_renamed
"$BOXCAR" migrate >/dev/null
sql "update boxcar.schema_migrations set version = '0007_queue_names' where version = '0008_queue_names'"
out=$("$BOXCAR" migrate 2>&1); rc=$?
is "a database that recorded 0007_queue_names migrates" "$rc $(sql "select count(*) from boxcar.schema_migrations where version = '0008_queue_names'")/$(sql "select count(*) from boxcar.schema_migrations where version = '0007_queue_names'")" "0 1/0"
rm -rf "$tmp"
tap_done
