# The Node client (clients/node) against a real PostgreSQL and a real
# worker: its generated spec types match docs/job-spec.schema.json and
# type-check (a wrong spec does not), its README example runs as written,
# it packs and installs into an empty project, and every API call
# behaves, errors included (clients/node/test/client.test.mjs, run by
# node --test with TAP output).
source "$(dirname "$0")/../lib.sh"
CLIENT="$BOXCAR_ROOT/clients/node"
tmp=$(mktemp -d)
trap 'cleanup_bg; [[ -n ${KEEP_TMP:-} ]] && echo "# kept $tmp" || rm -rf "$tmp"' EXIT
if [[ ! -d $CLIENT/node_modules ]]; then
  not_ok "clients/node/node_modules is missing: run scripts/deps.sh all"; tap_done; exit 1
fi

is "the package's version is the repository's (VERSION)" \
  "$(node -p "require('$CLIENT/package.json').version")" "$(cat "$BOXCAR_ROOT/VERSION")"

# ---- Types ----
node "$CLIENT/scripts/gen-types.mjs" "$BOXCAR_ROOT/docs/job-spec.schema.json" "$tmp/spec.d.ts"
check "types/spec.d.ts is what gen-types.mjs makes of docs/job-spec.schema.json (npm run gen-types)" \
  diff -u "$CLIENT/types/spec.d.ts" "$tmp/spec.d.ts"
# A keyword the generator cannot express stops it, naming where: a schema
# change is never typed as "anything" in silence.
jq '.properties.env.patternProperties = {"^X": {"type": "string"}}' "$BOXCAR_ROOT/docs/job-spec.schema.json" > "$tmp/new.json"
out=$(node "$CLIENT/scripts/gen-types.mjs" "$tmp/new.json" - 2>&1 >/dev/null)
check "gen-types refuses a keyword it does not know, naming it ($out)" \
  grep -q '#/env: keyword "patternProperties" is not understood' <<<"$out"
tsc() { (cd "$CLIENT" && node node_modules/typescript/bin/tsc "$@"); }
out=$(tsc -p test/types/tsconfig.json 2>&1)
check "tsc --noEmit: the example using the API and the spec types type-checks" test -z "$out"
[[ -n $out ]] && diag "$out"
bad=$(tsc -p test/types/tsconfig.bad.json 2>&1)
got=$(grep -oE '^test/types/bad\.ts\([0-9]+' <<<"$bad" | cut -d'(' -f2 | sort -un | paste -sd' ')
want=$(grep -n '// error' "$CLIENT/test/types/bad.ts" | cut -d: -f1 | paste -sd' ')
is "tsc refuses each deliberately wrong spec, on its own line" "$got" "$want"

# ---- A worker (sessions need the namespace sandbox as root, and S3) ----
fresh_db clients_node
sessions=0
if [[ $E2E_SANDBOX == namespace && $(id -u) -eq 0 ]] && grep -qw overlay /proc/filesystems; then
  eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
  export BOXCAR_S3_PREFIX="clients-node-$$"
  sessions=1
fi
export BOXCAR_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
BOXCAR_TEST_WEBHOOK_SECRET=$(webhook_secrets_of default)
export BOXCAR_TEST_WEBHOOK_SECRET BOXCAR_TEST_SESSIONS=$sessions
rm -rf "$BOXCAR_DEV/work/node"
start_worker node --concurrency 4 --lease 5s --poll-interval 1s --sandbox "$E2E_SANDBOX" --queues default,listed
wait_for "worker registered" 15 sql_true "select exists (select from boxcar.workers)"

# ---- The README's example, as written ----
awk '/<!-- example: tests\/clients\/t_node.sh runs it -->/ { on = 1; next }
     on && /^```js/ { inside = 1; next }
     inside && /^```/ { exit }
     inside { print }' "$CLIENT/README.md" > "$tmp/example.mjs"
check "the README has its example ($(wc -l < "$tmp/example.mjs") lines)" test "$(wc -l < "$tmp/example.mjs")" -ge 8
# Run from inside the package, where @boxcar/client names itself.
cp "$tmp/example.mjs" "$CLIENT/test/.readme-example.mjs"
out=$(cd "$CLIENT/test" && timeout 60 node .readme-example.mjs 2>&1)
rm -f "$CLIENT/test/.readme-example.mjs"
is "the README example runs and prints what it says" "$out" "succeeded hello"

# ---- npm pack, installed offline into an empty project ----
pack=$( (cd "$CLIENT" && npm pack --silent --pack-destination "$tmp") 2>&1)
check "npm pack makes $pack" test -f "$tmp/$pack"
files=$(tar -tzf "$tmp/$pack" | sort | paste -sd' ')
check "the package holds the code, the types and the README, not the tests" \
  bash -c "[[ '$files' == *package/index.js* && '$files' == *package/types/spec.d.ts* && '$files' == *package/types/index.d.ts* && '$files' == *package/README.md* && '$files' != *test/* ]]"
mkdir "$tmp/app"
# From npm's cache where it can (the client's dependencies are there,
# installed with its lockfile), the registry for the rest: --offline needs
# each dependency's full registry document in the cache, which the
# lockfile's install never fetches (npm 11: ENOTCACHED for @types/pg on a
# clean machine).
(cd "$tmp/app" && npm install --prefer-offline --no-audit --no-fund --loglevel=error "$tmp/$pack") >"$tmp/install.log" 2>&1
check "npm install of the .tgz into an empty directory" test -d "$tmp/app/node_modules/@boxcar/client"
[[ -d $tmp/app/node_modules/@boxcar/client ]] || diag "$(cat "$tmp/install.log")"
cat > "$tmp/app/main.mjs" <<'EOF'
import { Boxcar, enqueue } from '@boxcar/client';
const boxcar = new Boxcar(process.env.DATABASE_URL);
const id = await enqueue(boxcar.pool, { queue: 'default', spec: { command: ['echo', 'from the packed client'] } });
const job = await boxcar.waitFor(id, { timeoutMs: 30000 });
console.log(job.status, job.result.stdout);
await boxcar.end();
EOF
is "the installed package enqueues a job and waits for it" "$(cd "$tmp/app" && timeout 60 node main.mjs 2>&1)" "succeeded from the packed client"
cp "$tmp/example.mjs" "$tmp/app/example.mjs"
is "so does the README example there" "$(cd "$tmp/app" && timeout 60 node example.mjs 2>&1)" "succeeded hello"

# ---- Every API call (TAP from node --test) ----
(cd "$CLIENT" && BOXCAR_ADMIN_URL="$BOXCAR_ADMIN_URL" timeout 600 node --test --test-reporter=tap test/client.test.mjs)
rc=$?
[[ $rc -eq 0 ]] || not_ok "node --test exited with $rc"
tap_done && [[ $rc -eq 0 ]]
