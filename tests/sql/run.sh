#!/usr/bin/env bash
# pgTAP tests of the SQL API, run with pg_prove against a freshly migrated
# database.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"
fresh_db boxcar_sqltest || { echo "not ok 1 - migrate boxcar_sqltest"; exit 1; }
gen="$BOXCAR_ROOT/build/tests/sql"
mkdir -p "$gen"
python3 tests/sql/spec_corpus.py tests/data/bad_specs.tsv > "$gen/90_spec_corpus.sql"
pg_prove --verbose --ext .sql -h "$BOXCAR_PG_SOCKDIR" -p "$BOXCAR_PG_PORT" -U postgres \
         -d boxcar_sqltest tests/sql/*.sql "$gen"/*.sql
