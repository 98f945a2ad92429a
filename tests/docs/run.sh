#!/usr/bin/env bash
# Docs suite: what users read agrees with what the code does.
#   - docs/job-spec.schema.json rejects the malformed-spec corpus (but for
#     the rules it cannot express, which docs/job-spec.md lists) and accepts
#     the example specs of the README, docs/job-spec.md and scripts/demo.sh,
#     which the SQL validator must accept too (check_schema.py);
#   - README.md, `boxcar help ...` and the binary agree on every flag
#     (check_flags.py), and on each flag's variable and default
#     (check_env.py);
#   - the SQL functions README.md and docs/*.md show exist with those
#     arguments on a migrated database, and the app role's are documented
#     (check_sql_api.py);
#   - the README lists every metric family the worker registers, with its
#     labels;
#   - the README's table of test suites names each suite and real tests;
#   - the README points to no file outside the repository.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$BOXCAR_ROOT"

W=$(mktemp -d "${TMPDIR:-/tmp}/boxcar-docs.XXXXXX")
trap 'rm -rf "$W"; cleanup_bg' EXIT

# relay FILE: a python checker's "ok - "/"not ok - " lines as numbered TAP.
relay() {
  local line n=0
  while IFS= read -r line; do
    case $line in
      "ok - "*) ok "${line#ok - }"; n=$((n + 1)) ;;
      "not ok - "*) not_ok "${line#not ok - }"; n=$((n + 1)) ;;
      *) diag "${line#\# }" ;;
    esac
  done < "$1"
  [[ $n -gt 0 ]] || not_ok "$2 reported results"
}

# ---- the job spec's JSON Schema ------------------------------------------------------

if python3 -c 'import jsonschema' 2>/dev/null; then
  python3 tests/docs/check_schema.py "$BOXCAR_ROOT" "$W/examples.tsv" > "$W/schema.tap" 2>&1
  relay "$W/schema.tap" check_schema.py
else
  not_ok "python3-jsonschema is installed (scripts/deps.sh all)"
fi

# The examples must be valid for the validator that counts, not only for
# the schema: boxcar.spec_error on a migrated database.
if [[ -s $W/examples.tsv ]] && fresh_db boxcar_docs >/dev/null 2>&1; then
  while IFS=$'\t' read -r where spec; do
    got=$(sql "select coalesce(boxcar.spec_error(\$spec\$$spec\$spec\$::jsonb), 'valid')" 2>&1)
    is "$where is valid for boxcar.spec_error" "$got" valid
  done < "$W/examples.tsv"
  # And the hint of a BAD_SPEC error points into the repository.
  hint=$(psql -X -qtA -v VERBOSITY=verbose "$DATABASE_URL" \
           -c "select boxcar.enqueue('default', '{}'::jsonb)" 2>&1 | sed -n 's/^HINT: *//p')
  is "BAD_SPEC's hint names docs/job-spec.md" "$hint" "the job spec is documented in docs/job-spec.md"
  check "the file the hint names exists" test -s docs/job-spec.md
  out=$(echo '{"command": "x"}' | "$BOXCAR" enqueue --spec - 2>&1)
  check "boxcar enqueue's BAD_SPEC error points to docs/job-spec.md" \
    bash -c 'grep -q "BAD_SPEC: command: must be a non-empty array" <<<"$1" && grep -q docs/job-spec.md <<<"$1"' _ "$out"
else
  not_ok "a migrated database to check the examples with boxcar.spec_error"
fi

# ---- SQL functions: docs and database ------------------------------------------------
# Every boxcar.fn(...) the README and docs/ show exists with those argument
# names (types, defaults, optional [...] parts) on the migrated database, a
# parameter table's defaults are the function's, and every function the app
# role may call is documented (check_sql_api.py).
if { [[ -n ${DATABASE_URL:-} ]] || fresh_db boxcar_docs >/dev/null 2>&1; } && sql "select 1" >/dev/null 2>&1; then
  sql "select json_agg(json_build_object('name', p.proname, 'args', pg_get_function_arguments(p.oid)))
         from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'boxcar'" \
    > "$W/functions.json"
  sql "select name from boxcar.access_list()
        where kind in ('definer', 'function') and grants ~ '\mapp\M' order by name" > "$W/app.txt"
  python3 tests/docs/check_sql_api.py "$W/functions.json" "$W/app.txt" README.md docs/*.md \
    > "$W/sql_api.tap" 2>&1
  relay "$W/sql_api.tap" check_sql_api.py
else
  not_ok "a migrated database to check the docs' SQL functions against"
fi

# ---- flags: README, help and binary ----------------------------------------------------

if [[ -x $BOXCAR && -x $BOXCAR_SANDBOX ]]; then
  python3 tests/docs/check_flags.py README.md "$BOXCAR" "$BOXCAR_SANDBOX" . > "$W/flags.tap" 2>&1
  relay "$W/flags.tap" check_flags.py
  check "boxcar help enqueue points to docs/job-spec.md" \
    bash -c "'$BOXCAR' help enqueue | grep -q 'docs/job-spec.md'"
else
  not_ok "$BOXCAR and $BOXCAR_SANDBOX are built"
fi

# ---- environment variables: code, help and README ---------------------------------------
# The README's tables of the worker's and the dashboard's variables are
# the code's (check_env.py).
if [[ -x $BOXCAR ]]; then
  python3 tests/docs/check_env.py README.md "$BOXCAR" > "$W/env.tap" 2>&1
  relay "$W/env.tap" check_env.py
fi
# Every AWS_*/BOXCAR_* variable the worker and storage code read by name
# (or derive from a flag's: the help's tables), and every one `boxcar
# worker --help` names, is in the README; the help names none the code
# does not read.
if [[ -x $BOXCAR ]]; then
  code_env=$( { grep -ohE '"(AWS|BOXCAR)_[A-Z0-9_]+"' storage/*.c worker/*.c worker/*/*.c | tr -d '"'
                for c in worker ui; do
                  "$BOXCAR" $c --help | sed -n '/^  FLAG  *VARIABLE  *DEFAULT$/,$p' | awk 'NR > 1 {print $2}'
                done; } | grep -E '^(AWS|BOXCAR)_' | sort -u)
  help_env=$("$BOXCAR" worker --help | grep -oE '\b(AWS|BOXCAR)_[A-Z0-9_]+' | sort -u)
  readme_env=$(grep -oE '\b(AWS|BOXCAR)_[A-Z0-9_]+' README.md | sort -u)
  missing=$(comm -23 <(printf '%s\n%s\n' "$code_env" "$help_env" | sort -u) <(echo "$readme_env") | tr '\n' ' ')
  check "the README names every variable the code reads and the help names ($(wc -w <<<"$code_env") read)${missing:+; missing: $missing}" \
    test -z "$missing"
  extra=$(comm -13 <(echo "$code_env") <(echo "$help_env") | tr '\n' ' ')
  check "boxcar worker --help names only variables the code reads${extra:+; not read: $extra}" test -z "$extra"
  check "the code reads AWS_WEB_IDENTITY_TOKEN_FILE (the check above sees the sources)" \
    grep -qx AWS_WEB_IDENTITY_TOKEN_FILE <<<"$code_env"
fi

# The worker command lines of the deployment files parse (--help after them
# exits 0 only when every flag before it was accepted).
exec_line=$(sed -n 's|^ExecStart=||p' deploy/boxcar-worker.service)
exec_start=${exec_line#/usr/bin/boxcar worker}
check "deploy/boxcar-worker.service runs /usr/bin/boxcar worker, flags accepted: '$exec_start'" \
  bash -c "[[ '$exec_line' == '/usr/bin/boxcar worker'* ]] && '$BOXCAR' worker $exec_start --help >/dev/null"

# Every setting the package's worker.conf suggests (commented out), and the
# README's example file, is accepted by the worker: with them uncommented it
# gets past the configuration and waits for its (closed) database, where a
# bad key or value would exit 2 at once.  The flags keep it off the network
# and the real work directory.
conf_accepted() {  # conf_accepted FILE
  local rc
  timeout 3 env -i PATH="$PATH" DATABASE_URL="postgresql://boxcar@127.0.0.1:1/none?connect_timeout=1" \
    AWS_ACCESS_KEY_ID=conf-check AWS_SECRET_ACCESS_KEY=conf-check \
    "$BOXCAR" worker --config "$1" --sandbox none --work-dir "$W/conf-work" \
    --metrics-addr 127.0.0.1:0 --worker-id conf-check >"$W/conf.out" 2>&1
  rc=$?
  [[ $rc == 124 ]] || { sed 's/^/# /' "$W/conf.out" | head -5; return 1; }
}
sed -n 's/^# \([a-z0-9-]* = .*\)$/\1/p' deploy/worker.conf > "$W/pkg.conf"
check "deploy/worker.conf suggests settings ($(wc -l < "$W/pkg.conf"))" test "$(wc -l < "$W/pkg.conf")" -ge 15
check "deploy/worker.conf's settings, uncommented, are accepted" conf_accepted "$W/pkg.conf"
awk '/^#### The configuration file/{f=1} f && /^```$/{n++; next} f && n==1' README.md > "$W/readme.conf"
check "the README's example configuration file is accepted" conf_accepted "$W/readme.conf"
# And the variables deploy/worker.env suggests (commented out), with no
# file: the worker takes them and waits for its database the same way.
env_accepted() {
  local rc
  mapfile -t vars < <(sed -n 's/^# \(BOXCAR_[A-Z_]*=.*\)$/\1/p' deploy/worker.env | grep -v '^BOXCAR_LISTEN_DATABASE_URL=')
  timeout 3 env -i PATH="$PATH" DATABASE_URL="postgresql://boxcar@127.0.0.1:1/none?connect_timeout=1" \
    "${vars[@]}" BOXCAR_CONFIG=/dev/null BOXCAR_SANDBOX=none BOXCAR_WORK_DIR="$W/env-work" \
    BOXCAR_METRICS_ADDR=127.0.0.1:0 "$BOXCAR" worker >"$W/env.out" 2>&1
  rc=$?
  [[ $rc == 124 && ${#vars[@]} -ge 8 ]] || { sed 's/^/# /' "$W/env.out" | head -5; return 1; }
}
check "deploy/worker.env's variables, uncommented, are accepted" env_accepted
printf 'concurrency = 0\n' > "$W/bad.conf"
conf_rejected() { ! conf_accepted "$1" >/dev/null && grep -q "bad.conf:1: concurrency: invalid value" "$W/conf.out"; }
check "and a bad value is not (the check can fail)" conf_rejected "$W/bad.conf"

# ---- metric families ----------------------------------------------------------------------

# The families the worker registers (worker/metrics/wmetrics.c) and the registry's
# own counter (worker/metrics/metrics.c).
families=$( { grep -oE '\{ "boxcar_[a-z_]+"' worker/metrics/wmetrics.c | tr -d '{ "'
              sed -n 's/^#define DROPPED_NAME "\(boxcar_[a-z_]*\)"$/\1/p' worker/metrics/metrics.c; } | sort -u)
missing=()
# `name` or `name{labels}`: a family is not documented by a longer name's prefix.
for f in $families; do grep -qE "\`$f(\`|\{)" README.md || missing+=("$f"); done
check "found the worker's metric families ($(echo $families | wc -w))" test "$(echo $families | wc -w)" -ge 15
is "README lists every metric family" "${missing[*]}" ""

# The labels the README gives a family (`name{a,b}`) are the ones the code
# registers it with (a `{ "name", "help", TYPE, l_labels, ...` table entry
# and its `l_labels[] = { "a", "b", NULL }`); a family shown without
# labels has none.
bad_labels=$(python3 - README.md worker/metrics/wmetrics.c worker/exec/sandbox_pool.c <<'PY'
import re, sys
readme = open(sys.argv[1], encoding="utf-8").read()
code, n = {}, 0
for path in sys.argv[2:]:
    src = open(path).read()
    arrays = {m.group(1): re.findall(r'"([a-z_]+)"', m.group(2))
              for m in re.finditer(r"\b(l_\w+)\[\] = \{([^}]*)\}", src)}
    for m in re.finditer(r'\{\s*"(boxcar_[a-z_]+)",\s*(?:"(?:[^"\\]|\\.)*"\s*)+,\s*METRICS_\w+,\s*(l_\w+|NULL)', src):
        code[m.group(1)] = arrays.get(m.group(2), []) if m.group(2) != "NULL" else []
for fam, labels in sorted(code.items()):
    for m in re.finditer(rf"`{fam}(\{{([^}}]*)\}})?`", readme):
        n += 1
        # `{result="hit"|"miss"}` names the values too: the names count.
        shown = [l.split("=")[0].strip() for l in m.group(2).split(",")] if m.group(2) else []
        if shown != labels:
            print(f"{fam}{{{','.join(shown)}}} (the code: {{{','.join(labels)}}})")
print(f"checked {n} mentions of {len(code)} families", file=sys.stderr)
PY
)
is "the README gives each metric family the code's labels" "$bad_labels" ""

# ---- the test suites the README's Development table lists ----------------------------------
python3 tests/docs/check_suites.py README.md . > "$W/suites.tap" 2>&1
relay "$W/suites.tap" check_suites.py

# ---- the repository stands alone -----------------------------------------------------------

outside=$(grep -noE '\.\./[A-Za-z0-9_./-]+|/work/[A-Za-z0-9_./-]+|DESIGN\.md' README.md docs/*.md)
is "README and docs/ name no file outside the repository" "$outside" ""
for link in $(grep -ohE '\]\([^)#]+\)' README.md | sed 's/^](//; s/)$//' | grep -v '://'); do
  check "README link $link exists" test -e "$link"
done

# In-page links (#anchor) name a heading, by GitHub's slug rule.
bad_anchors=$(python3 - README.md docs/job-spec.md <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8").read()
    slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.*)$", text, re.M)}
    for a in re.findall(r"\]\(#([^)]+)\)", text):
        if a not in slugs:
            print(f"{path}#{a}")
PY
)
is "every #anchor link names a heading" "$bad_anchors" ""

tap_done
