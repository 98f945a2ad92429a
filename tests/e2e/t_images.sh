# Images end to end: two Debian images made by mmdebstrap (scripts/images.sh,
# built once and cached under $BOXCAR_DEV/images) pushed as storages of kind
# image; the same job on each sees its own /etc/os-release and python3, and
# none of the host's /usr; a setuid-root shell in an image gives no
# privilege, whether pushed or planted in S3 directly; a tarball import is
# the same version as the directory; an image with a large /etc runs; bad
# image specs fail with BAD_SPEC naming the field.  Needs root (mmdebstrap, the sandbox's setuid checks)
# and the Debian mirror the first time.
source "$(dirname "$0")/../lib.sh"
eval "$("$S3SH" start)"
export BOXCAR_S3_PREFIX="e2e-img-$$"
fresh_db e2e_images
tmp=$(mktemp -d)
chmod 755 "$tmp"
host_only=/usr/local/bin/boxcar-host-only-$$
trap 'cleanup_bg; rm -rf "$tmp"; rm -f "$host_only"' EXIT
port=$(free_port)
metric() { curl -fsS "http://127.0.0.1:$port/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
run_job() { local id; id=$(echo "$1" | "$BOXCAR" enqueue --spec -); "$BOXCAR" status --wait --timeout 120s "$id" >/dev/null; echo "$id"; }

t0=$(date +%s)
"$BOXCAR_ROOT/scripts/images.sh" bookworm-py trixie-py || { not_ok "scripts/images.sh builds the test images"; tap_done; exit 1; }
diag "images ready in $(( $(date +%s) - t0 )) s (built in $(cat "$BOXCAR_DEV/images/bookworm-py.built") + $(cat "$BOXCAR_DEV/images/trixie-py.built") s when first made)"
deb12=$("$BOXCAR_ROOT/scripts/images.sh" path bookworm-py)
deb13=$("$BOXCAR_ROOT/scripts/images.sh" path trixie-py)

# Push: a directory, and the same tree as a tarball (what `docker export`
# gives) is the same version.
t0=$(date +%s%N)
sha12=$("$BOXCAR" storage push --kind image deb12 "$deb12" 2>"$tmp/push12.err")
diag "push of $(du -sh "$deb12" | cut -f1) image: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
check "storage push --kind image DIR prints a sha256" grep -qE '^[0-9a-f]{64}$' <<<"$sha12"
e12=$(stack_of "$sha12")   # the image cache's name for deb12's tree
sha13=$("$BOXCAR" storage push --kind image deb13 "$deb13" 2>/dev/null)
tar -C "$deb13" -cf "$tmp/deb13.tar" .
sha13t=$("$BOXCAR" storage push --kind image deb13-tar "$tmp/deb13.tar" 2>"$tmp/pusht.err")
is "a tarball of the same tree (docker export style) is the same version" "$sha13t" "$sha13"
check "and uploads nothing new" grep -q "already stored" "$tmp/pusht.err"
is "storage ls --kind image lists the images" "$("$BOXCAR" storage ls --kind image | grep -o '"name": "[^"]*"' | tr '\n' ' ')" '"name": "deb12" "name": "deb13" "name": "deb13-tar" '
is "storage ls --kind volume does not" "$("$BOXCAR" storage ls --kind volume | wc -l)" "0"

rm -rf "$BOXCAR_DEV/work/img-w"   # an empty image cache: the first jobs miss
start_worker img-w --concurrency 2 --poll-interval 300ms --sandbox "$E2E_SANDBOX" --metrics-addr "127.0.0.1:$port"

# The same job on two images.
job='{"script": "cat /etc/os-release | grep ^VERSION_ID; python3 --version", "image": {"storage": "IMG"}}'
t0=$(date +%s%N)
a=$(run_job "${job/IMG/deb12}")
diag "first job on deb12 (cache miss: download + unpack): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
b=$(run_job "${job/IMG/deb13}")
is "a job on deb12 succeeds" "$(job_field $a status)" "succeeded"
is "it sees Debian 12 and its python" "$(job_field $a "result->>'stdout'")" 'VERSION_ID="12"
Python 3.11.2'
is "the same job on deb13 sees Debian 13" "$(job_field $b "result->>'stdout'" | head -1)" 'VERSION_ID="13"'
py13=$(job_field $b "result->>'stdout'" | grep . | tail -1)
check "and its own python ($py13)" grep -q '^Python 3\.1[3-9]' <<<"$py13"
l=$(run_job '{"command": ["lua5.4", "-e", "print(_VERSION)"], "image": {"storage": "deb13"}}')
is "a job on deb13 runs lua5.4, a tool the host does not have" "$(job_field $l "status || ' ' || (result->>'stdout')")" "succeeded Lua 5.4"
command -v lua5.4 >/dev/null && not_ok "the host has no lua5.4 (it has: the check above proves nothing)" || ok "the host has no lua5.4"
is "the worker's image cache counts the misses" "$(metric 'boxcar_image_cache_lookups_total{result="miss"}')" "2"
t0=$(date +%s%N)
c=$(run_job '{"script": "python3 -c \"print(6*7)\"", "image": {"storage": "deb12", "version": "'"$sha12"'"}}')
diag "a job on deb12 on a cache hit: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
is "a job on an image by sha256 runs from the cache" "$(job_field $c "status || ' ' || (result->>'stdout')")" "succeeded 42"
is "hits: the lua job on deb13 and this one" "$(metric 'boxcar_image_cache_lookups_total{result="hit"}')" "2"
is "two images cached" "$(metric boxcar_images_cached)" "2"
check "extraction time is measured" test "$(metric boxcar_image_extract_seconds_count)" = 2

# Warm sandboxes per image: after a job on deb12 the pool keeps sandboxes
# on it, and the next job on deb12 takes one (as fast as on the host root;
# the handoff histogram has the figure).
deb12_warm() { pgrep -P "$WORKER_PID" -f "boxcar-sandbox --warm .*--image .*/$e12\$" | wc -l; }
if [[ $E2E_SANDBOX == namespace && $(id -u) == 0 ]]; then
  wait_for "warm sandboxes on deb12" 30 bash -c "(( \$(pgrep -P $WORKER_PID -f 'boxcar-sandbox --warm .*--image .*/$e12\$' | wc -l) >= 1 ))"
  check "the pool keeps warm sandboxes on an image in use ($(deb12_warm))" test "$(deb12_warm)" -ge 1
  wb=$(metric 'boxcar_sandbox_starts_total{path="warm"}')
  d=$(run_job '{"script": "python3 -c \"print(7)\"", "image": {"storage": "deb12"}}')
  is "the next job on deb12 starts warm" "$(job_field $d "status || ' ' || (result->>'stdout')") $(( $(metric 'boxcar_sandbox_starts_total{path="warm"}') - ${wb:-0} ))" "succeeded 7 1"
else
  skip "warm sandboxes per image need the namespace backend as root"
  skip "the next job on deb12 starts warm"
fi

# None of the host's system is visible.
echo '#!/bin/sh' >"$host_only"; chmod 755 "$host_only"
h=$(run_job '{"script": "ls '"$host_only"' && echo visible || echo absent"}')
is "without an image a job sees the host's /usr (the check below can fail)" "$(job_field $h "result->>'stdout'" | grep . | tail -1)" "visible"
i=$(run_job '{"script": "ls '"$host_only"' 2>/dev/null && echo visible || echo absent; ls /usr/lib/x86_64-linux-gnu | grep -c libpq || true", "image": {"storage": "deb12"}}')
is "on an image it does not (nor the host's libpq)" "$(job_field $i "result->>'stdout'")" "absent
0"
w=$(run_job '{"script": "echo data > /workspace/f; cat /workspace/f; touch /usr/x 2>/dev/null && echo rw || echo ro; id -u", "image": {"storage": "deb12"}}')
is "the image is read-only, /workspace writable, the job nobody" "$(job_field $w "result->>'stdout'")" "data
ro
65534"

# A setuid-root shell in an image.  `sh -p` keeps a setuid euid, so on the
# host (as nobody) it really is root: the check can fail.
mkdir -p "$tmp/suid/bin" "$tmp/suid/usr/bin"
for f in /bin/dash /usr/bin/id $(ldd /bin/dash /usr/bin/id | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }'); do
  mkdir -p "$tmp/suid$(dirname "$f")"; cp -L "$f" "$tmp/suid$f"
done
ln -s dash "$tmp/suid/bin/sh"
cp /bin/dash "$tmp/suid/suid-sh"; chown root:root "$tmp/suid/suid-sh"; chmod 4755 "$tmp/suid/suid-sh"
is "on the host, as nobody, the setuid shell gives root" "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/suid/suid-sh" -p -c '/usr/bin/id -u')" "0"
"$BOXCAR" storage push --kind image suid "$tmp/suid" >/dev/null 2>&1
s=$(run_job '{"command": ["/suid-sh", "-p", "-c", "/usr/bin/id -u"], "image": {"storage": "suid"}}')
is "a pushed image's setuid shell gives the job no privilege" "$(job_field $s "status || ' ' || (result->>'stdout')")" "succeeded 65534"

# The same planted in S3 directly (a hostile object: setuid bit, root owner,
# a device node), bypassing push: the worker's unpacking neutralises it.
python3 - "$tmp/suid" "$tmp/evil.tar.gz" <<'PY'
import gzip, io, os, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    for root, dirs, files in os.walk(src):
        for n in sorted(dirs + files):
            p = os.path.join(root, n)
            ti = t.gettarinfo(p, os.path.relpath(p, src))
            ti.uid = ti.gid = 0
            if n == "suid-sh":
                ti.mode = 0o4755
            t.addfile(ti, open(p, "rb") if ti.isreg() else None)
    dev = tarfile.TarInfo("evil-dev"); dev.type = tarfile.CHRTYPE; dev.devmajor, dev.devminor = 1, 3
    dev.mode = 0o666
    t.addfile(dev)
open(out, "wb").write(gzip.compress(buf.getvalue(), mtime=0))
PY
esha=$(sha256sum <"$tmp/evil.tar.gz" | cut -d' ' -f1)
ekey="$BOXCAR_S3_PREFIX/sha256/${esha:0:2}/$esha.tar.gz"
python3 - "$tmp/evil.tar.gz" "$ekey" <<'PY'
import os, sys, botocore.session
from botocore.config import Config
c = botocore.session.get_session().create_client(
    "s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"], region_name=os.environ["AWS_REGION"],
    aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"], aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    config=Config(s3={"addressing_style": "path"}))
c.put_object(Bucket=os.environ["BOXCAR_S3_BUCKET"], Key=sys.argv[2], Body=open(sys.argv[1], "rb").read())
PY
check "the hostile object holds a setuid-root shell and a device node" bash -c "tar tvzf '$tmp/evil.tar.gz' | grep -q '^-rwsr-xr-x root/root.* suid-sh' && tar tvzf '$tmp/evil.tar.gz' | grep -q '^c.* evil-dev'"
sql "select boxcar.create_storage('evil', 'image'); select boxcar.add_storage_version('evil', '$esha', '$ekey', $(stat -c %s "$tmp/evil.tar.gz"), 10)" >/dev/null
e=$(run_job '{"command": ["/suid-sh", "-p", "-c", "/usr/bin/id -u; test -u /suid-sh && echo setuid || echo plain; test -e /evil-dev && echo dev || echo nodev"], "image": {"storage": "evil"}}')
is "a planted setuid shell gives no privilege: the bit is cleared, the device not made" "$(job_field $e "status || ' ' || (result->>'stdout')")" "succeeded 65534
plain
nodev"

# An image's /etc is shown whole: more small files than the sandbox's 1 MiB
# root holds as copies are bound instead (they used to fill it: every start
# failed with ENOSPC).
cp -a "$tmp/suid" "$tmp/bigetc" && mkdir "$tmp/bigetc/etc"
for n in $(seq 1 10); do head -c 120000 /dev/urandom >"$tmp/bigetc/etc/big$n"; done
"$BOXCAR" storage push --kind image bigetc "$tmp/bigetc" >/dev/null 2>&1
g=$(run_job '{"command": ["/bin/sh", "-c", "for n in 1 5 10; do test -s /etc/big$n && echo big$n; done"], "image": {"storage": "bigetc"}}')
is "an image whose /etc holds 1.2 MB of small files runs, all of them shown" "$(job_field $g "status || ' ' || (result->>'stdout')")" "succeeded big1
big5
big10"

# Bad image specs.
"$BOXCAR" storage push --kind volume vol "$tmp/suid" >/dev/null 2>&1
bad() { local id; id=$(run_job "$1"); is "$2" "$(job_field $id "status || ' ' || (error->>'code') || ' ' || (error->>'message')")" "failed BAD_SPEC $3"; }
refused() { local out; out=$(echo "$1" | "$BOXCAR" enqueue --spec - 2>&1); check "$2: $out" grep -qF "BAD_SPEC: $3" <<<"$out"; }
refused '{"script": "true", "image": {"storage": "nope"}}' "a missing image storage is refused at enqueue" \
    'image.storage: storage "nope" not found in scope "default"'
bad '{"script": "true", "image": {"storage": "vol"}}' "a storage of another kind is BAD_SPEC" \
    "image.storage: vol is a storage of kind volume, not an image (push one with boxcar storage push --kind image)"
refused '{"script": "true", "image": {"storage": "deb12", "version": "'"$(printf '0%.0s' {1..64})"'"}}' "an unknown version is refused at enqueue" \
    "image.version: storage \"deb12\" has no version $(printf '0%.0s' {1..64})"
out=$(echo '{"script": "true", "image": {"storage": "deb12", "version": "v2"}}' | "$BOXCAR" enqueue --spec - 2>&1)
check "a malformed version is refused at enqueue" grep -q 'image.version: must be "latest" or a sha256' <<<"$out"

# The pool lets an image's sandboxes go once no job asked for it for a
# minute (the last job on deb12 ran before the setuid checks).
if [[ $E2E_SANDBOX == namespace && $(id -u) == 0 ]]; then
  t0=$(date +%s)
  if wait_for "deb12's warm sandboxes gone" 120 bash -c "(( \$(pgrep -P $WORKER_PID -f 'boxcar-sandbox --warm .*--image .*/$e12\$' | wc -l) == 0 ))"; then
    ok "an image nobody uses loses its warm sandboxes (after $(( $(date +%s) - t0 )) s more)"
  else
    not_ok "an image nobody uses loses its warm sandboxes ($(deb12_warm) left)"
  fi
  check "the host root's stay" test "$(pgrep -P "$WORKER_PID" -f 'boxcar-sandbox --warm' | wc -l)" -ge 1
else
  skip "an image nobody uses loses its warm sandboxes"
  skip "the host root's stay"
fi

tap_done
