#!/usr/bin/env bash
# pgTAP tests of the SQL API, run with pg_prove against a freshly migrated
# database: tests/sql/NN_*.sql (one number each, run in that order), then
# the malformed-spec corpus (90_spec_corpus, generated).  BOXCAR_T (`make
# test SUITES=sql T=01_enqueue`) picks files by name (tests/select.sh);
# --list prints the names.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../select.sh"
cd "$BOXCAR_ROOT"
names=()
for f in tests/sql/[0-9]*.sql; do n=${f##*/}; names+=("${n%.sql}"); done
names+=(90_spec_corpus)
[[ ${1:-} == --list ]] && { printf '%s\n' "${names[@]}"; exit 0; }
picked=$(t_pick "${names[@]}") || exit 1
fresh_db boxcar_sqltest || { echo "not ok 1 - migrate boxcar_sqltest"; exit 1; }
gen="$BOXCAR_ROOT/build/tests/sql"
mkdir -p "$gen"
python3 tests/sql/spec_corpus.py tests/data/bad_specs.tsv > "$gen/90_spec_corpus.sql"
files=()
for n in $picked; do
  if [[ -f tests/sql/$n.sql ]]; then files+=("tests/sql/$n.sql"); else files+=("$gen/$n.sql"); fi
done
pg_prove --verbose --ext .sql -h "$BOXCAR_PG_SOCKDIR" -p "$BOXCAR_PG_PORT" -U postgres \
         -d boxcar_sqltest "${files[@]}"
