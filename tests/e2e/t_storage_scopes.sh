# Storages belong to a scope (docs/tenants.md "Storages and sessions
# belong to a scope"), end to end: two scopes, a real worker, real S3.
# Scope zeta cannot read acme's volume or artifact, even knowing a
# version's sha256, nor write acme's; a share lets it read, never write,
# and an unshare stops a job queued meanwhile.  url volumes: the cache
# serves a known sha256 only to a URL proven fetchable now.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-scopes-$$"
fresh_db e2e_storage_scopes
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT

enq() { echo "$2" | "$BOXCAR" enqueue --queue "$1" --max-attempts 1 --spec - 2>&1; }
run() { local id; id=$(enq "$1" "$2") || { echo "$id"; return; }; "$BOXCAR" status --wait --timeout 60s "$id" >/dev/null; echo "$id"; }
res() { job_field "$1" "status || ' ' || coalesce(error->>'code', '') || ' ' || coalesce(result->>'stdout', '')"; }
vol() { jq -cn --arg s "$1" --arg v "${2:-latest}" '{name: "d", mount: "/mnt/d", storage: $s, version: $v}'; }

mkdir -p "$tmp/secret"; echo "acme-only" > "$tmp/secret/s.txt"
vsha=$("$BOXCAR" storage push --kind volume --scope acme acme-vol "$tmp/secret" 2>/dev/null)
check "storage push --scope acme gives acme the storage" \
  test "$(sql "select owner_scope from boxcar.storages where name = 'acme-vol'")" = acme
check "a name another scope owns is refused to push" \
  bash -c "! '$BOXCAR' storage push --scope zeta acme-vol '$tmp/secret' 2>/dev/null"

rm -rf "$BOXCAR_DEV/work/scopes-w"
start_worker scopes-w --concurrency 2 --lease 10s --poll-interval 300ms --sandbox "$E2E_SANDBOX" \
  --queues acme/q,zeta/q

# ---- An artifact of acme's, and what zeta may not do with it ----
a1=$(run acme/q '{"script": "echo acme-art > a.txt", "artifact": {"storage": "acme-art"}}')
asha=$(job_field "$a1" "result->'artifact'->>'sha256'")
is "acme's job writes its artifact" "$(res $a1)" "succeeded  "
out=$(enq zeta/q "{\"script\": \"cat /mnt/d/a.txt\", \"volumes\": [$(vol acme-art "$asha")]}")
check "zeta cannot mount acme's artifact as a volume, knowing its sha256: $out" \
  grep -qF 'BAD_SPEC: volumes[0].storage: storage "acme-art" not found in scope "zeta"' <<<"$out"
out2=$(enq zeta/q "{\"script\": \"true\", \"volumes\": [$(vol no-such-storage)]}")
is "the answer is the same as for a storage that does not exist (no existence leak)" \
  "${out2//no-such-storage/acme-art}" "$out"
out=$(enq zeta/q "{\"script\": \"cat a.txt\", \"artifact\": {\"storage\": \"acme-art\", \"base\": \"$asha\"}}")
check "zeta cannot start from or write acme's artifact: $out" \
  grep -qF 'BAD_SPEC: artifact.storage: storage "acme-art" is not writable in scope "zeta"' <<<"$out"
out=$(enq zeta/q "{\"script\": \"true\", \"volumes\": [$(vol acme-vol "$vsha")]}")
check "nor mount acme's volume: $out" grep -qF 'not found in scope "zeta"' <<<"$out"
is "no job of zeta was stored" "$(sql "select count(*) from boxcar.jobs where queue = 'zeta/q'")" "0"
# A version of acme's named under zeta's own storage.
mkdir -p "$tmp/z"; echo z > "$tmp/z/z.txt"
"$BOXCAR" storage push --kind volume --scope zeta zeta-vol "$tmp/z" >/dev/null 2>&1
out=$(enq zeta/q "{\"script\": \"true\", \"volumes\": [$(vol zeta-vol "$vsha")]}")
check "nor name acme's version under its own storage: $out" \
  grep -qF "BAD_SPEC: volumes[0].version: storage \"zeta-vol\" has no version $vsha" <<<"$out"
check "storage ls --scope zeta lists zeta's storages only" \
  test "$("$BOXCAR" storage ls --scope zeta | jq -r .name | tr '\n' ' ')" = "zeta-vol "

# ---- A share: read, never write ----
check "storage share acme-vol zeta" "$BOXCAR" storage share acme-vol zeta
is "storage ls shows the owner and the shares" \
  "$("$BOXCAR" storage ls | jq -c 'select(.name == "acme-vol") | [.owner, .public, .shared_with]')" '["acme",false,["zeta"]]'
z1=$(run zeta/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(vol acme-vol "$vsha")]}")
is "a shared volume mounts for zeta" "$(res $z1)" "succeeded  acme-only"
out=$(enq zeta/q '{"script": "echo stolen > s.txt", "artifact": {"storage": "acme-vol"}}')
check "but zeta never writes a version to it: $out" grep -qF 'is not writable in scope "zeta"' <<<"$out"
# Unshared while a job of zeta waits: the worker's resolution refuses it.
zq=$(sql "select boxcar.enqueue('zeta/q', '{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(vol acme-vol)]}'::jsonb, run_at => now() + interval '2 seconds')")
check "storage unshare acme-vol zeta" "$BOXCAR" storage unshare acme-vol zeta
"$BOXCAR" status --wait --timeout 60s "$zq" >/dev/null
is "a job queued before the unshare cannot read it" "$(job_field $zq "status || ' ' || (error->>'code')")" "failed BAD_SPEC"
check "and its output shows nothing of it" test -z "$(job_field $zq "result->>'stdout'")"
check "storage public acme-vol on" "$BOXCAR" storage public acme-vol on
z2=$(run zeta/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(vol acme-vol)]}")
is "a public volume mounts for every scope" "$(res $z2)" "succeeded  acme-only"
"$BOXCAR" storage public acme-vol off 2>/dev/null

# ---- url volumes: the cache serves a sha only to a URL proven fetchable ----
url=$("$BOXCAR" storage url acme-vol)
lsha=$(sql "select layers[1] from boxcar.storage_versions where storage = 'acme-vol' and sha256 = '$vsha'")
uvol() { jq -cn --arg u "$1" --arg s "$lsha" '{name: "d", mount: "/mnt/d", url: $u, sha256: $s}'; }
u1=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$url")]}")
is "acme fetches its volume by presigned URL (now cached by sha256)" "$(res $u1)" "succeeded  acme-only"
# The same sha256 behind a URL that is not the object (any key, unsigned).
bogus="${url%%\?*}-nope"
u2=$(run zeta/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$bogus")]}")
is "zeta naming the known sha256 with another URL gets no cache hit: it fails fetching" \
  "$(job_field $u2 "status || ' ' || (error->>'code')")" "failed FETCH_FAILED"
check "and sees nothing" test -z "$(job_field $u2 "result->>'stdout'")"
# A URL zeta may fetch (its own volume's), named with acme's sha256.
zurl=$("$BOXCAR" storage url zeta-vol)
u3=$(run zeta/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$zurl")]}")
is "nor with a URL it may fetch that serves other content: fetched for real, it does not match" \
  "$(job_field $u3 "status || ' ' || (error->>'code')")" "failed CHECKSUM_MISMATCH"
check "and sees nothing" test -z "$(job_field $u3 "result->>'stdout'")"
short=$("$BOXCAR" storage url --expires 1s acme-vol)
sleep 2
u4=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$short")]}")
is "a URL the origin now refuses (expired) fails even though the content is cached" \
  "$(job_field $u4 "status || ' ' || (error->>'code')")" "failed FETCH_FAILED"
fresh=$("$BOXCAR" storage url acme-vol)
u5=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$fresh")]}")
is "a fresh presigned URL of the same object is served" "$(res $u5)" "succeeded  acme-only"
# An origin with ETags (a local server that logs each GET as a probe, with
# Range, or a full fetch): a proven URL is served from the cache; the
# same path with another ETag is fetched again.
curl -sf "$fresh" -o "$tmp/v.tar.gz"
echo '"v1"' > "$tmp/etag"
cat > "$tmp/origin.py" <<'PY'
import http.server, sys, os
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        rng = self.headers.get("Range")
        with open(os.path.join(d, "access"), "a") as f:
            f.write(("probe" if rng else "full") + "\n")
        body = open(os.path.join(d, "v.tar.gz"), "rb").read()
        etag = open(os.path.join(d, "etag")).read().strip()
        if rng == "bytes=0-0":
            self.send_response(206); self.send_header("Content-Range", "bytes 0-0/%d" % len(body)); body = body[:1]
        else:
            self.send_response(200)
        self.send_header("ETag", etag); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(os.path.join(d, "port"), "w").write(str(s.server_port))
s.serve_forever()
PY
bg python3 "$tmp/origin.py" "$tmp"
wait_for "origin up" 10 test -s "$tmp/port"
ourl="http://127.0.0.1:$(cat "$tmp/port")/v.tar.gz?token=abc"
fulls() { grep -c full "$tmp/access" 2>/dev/null || echo 0; }
o1=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$ourl")]}")
is "a url volume from an origin with ETags is fetched" "$(res $o1) $(fulls)" "succeeded  acme-only 1"
o2=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "${ourl/abc/def}")]}")
is "the same path, another query: proven by a ranged GET, served from the cache" "$(res $o2) $(fulls)" "succeeded  acme-only 1"
echo '"v2"' > "$tmp/etag"
o3=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$ourl")]}")
is "another ETag at that path: fetched again (and verified)" "$(res $o3) $(fulls)" "succeeded  acme-only 2"
o4=$(run acme/q "{\"script\": \"cat /mnt/d/s.txt\", \"volumes\": [$(uvol "$ourl")]}")
is "then proven again by the new ETag" "$(res $o4) $(fulls)" "succeeded  acme-only 2"

check "the cache recorded the origins it proved (path and sha256, hashed)" \
  bash -c "ls '$BOXCAR_DEV/work/scopes-w/volumes/origins' | grep -qE '^[0-9a-f]{64}$'"

tap_done
