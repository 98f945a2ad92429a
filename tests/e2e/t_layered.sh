# Layered versions (issue 46) through real workers and a real S3: a
# version is named by its tree (push, tarball push and jobs agree), a job
# that changes one file uploads about that file, deletions, renames,
# replaced directories, hard links, sparse files and mode changes travel
# through layers exactly, stacks are compacted at 16, a worker lacking
# part of a stack downloads only the layers it lacks, versions made before
# layering stay readable and move on to layers, whole-tree tarballs are
# built on request, and hostile stacks are BAD_ARCHIVE.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]] || ! grep -qw overlay /proc/filesystems; then
  skip "layered versions from overlays need the namespace backend as root"; tap_done; exit 0
fi
eval "$("$S3SH" start)"
export BOXCAR_S3_PREFIX="e2e-layers-$$"
fresh_db e2e_layered
tmp=$(mktemp -d)
trap 'cleanup_bg; [[ -n ${KEEP_TMP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
PORT=$(free_port)
rm -rf "$BOXCAR_DEV/work/lay-a" "$BOXCAR_DEV/work/lay-b"
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
dl() { local v; v=$(metric 'boxcar_transfer_bytes_total{direction="download",kind="artifact"}'); echo "${v:-0}"; }
spec() {
  jq -cn --arg s "$1" --arg st "$2" --arg b "${3:-latest}" \
    '{script: $s, limits: {disk_mb: 256}, artifact: {storage: $st, base: $b}}'
}
run_job() { local id; id=$(spec "$@" | "$BOXCAR" enqueue --spec -); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }
art() { job_field "$1" "result->'artifact'->>'$2'"; }
# A tree as it matters to a version: type, mode, path, symlink
# target; each file's sha256; the groups of hard-linked names; the
# allocated KiB of each sparse file.
LISTING='find . -mindepth 1 -printf "%y %m %p %l\n" | LC_ALL=C sort; find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum; find . -type f -links +1 -printf "%i %p\n" | LC_ALL=C sort | awk "{ g[\$1] = g[\$1] \" \" \$2; n[\$1]++ } END { for (i in g) if (n[i] > 1) print g[i] }" | LC_ALL=C sort; find . -type f -name "sparse*" -printf "%k %p\n" | awk "{ print (\$1 < 1024 ? \"small\" : \"big\"), \$2 }" | LC_ALL=C sort'
listing() { (cd "$1" && bash -c "$LISTING"); }
pull() { rm -rf "$2"; "$BOXCAR" storage pull "$1" "$2" 2>"$tmp/pull.err"; }

# ---- Identity: the tree names the version ----
mkdir -p "$tmp/src/d/e"; echo one > "$tmp/src/a"; echo two > "$tmp/src/d/e/b"; ln -s a "$tmp/src/l"
head -c 1048576 /dev/urandom > "$tmp/src/d/big"; chmod 640 "$tmp/src/d/big"
p1=$("$BOXCAR" storage push idt "$tmp/src" 2>/dev/null)
p2=$("$BOXCAR" storage push idt2 "$tmp/src" 2>/dev/null)
tar -C "$tmp/src" -czf "$tmp/src.tgz" .
p3=$("$BOXCAR" storage push idt3 "$tmp/src.tgz" 2>/dev/null)
is "a directory, pushed twice and as a tarball, is one version" "$p2 $p3" "$p1 $p1"
is "a pushed version is one layer, named by its tree" \
   "$(sql "select format || ' ' || cardinality(layers) || ' ' || (layers[1] <> sha256) || ' ' || (bottom_tree = sha256) from boxcar.storage_versions where storage = 'idt'")" \
   "tree 1 true true"

start_worker lay-a --concurrency 1 --lease 10s --poll-interval 200ms --sandbox namespace \
  --metrics-addr "127.0.0.1:$PORT"
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
jsame=$(run_job "true" idt)
is "a job that changes nothing keeps the version" "$(job_field $jsame status) $(art $jsame sha256) $(art $jsame layers)" "succeeded $p1 1"
jmk=$(run_job "echo one > a.new && mv a.new a && chmod 640 d/big" idt)
is "the same tree reached another way (files rewritten as they were) has the same id" \
   "$(job_field $jmk status) $(art $jmk sha256)" "succeeded $p1"
jwh=$(run_job "echo mine > .wh.mine" idt)
pull "idt@$(art $jwh sha256)" "$tmp/wh"
is "a file of the job's own named .wh.* cannot be told from a whiteout: stored whole, and it stays a file" \
   "$(job_field $jwh status) $(art $jwh layers) $(cat "$tmp/wh/.wh.mine")" "succeeded 1 mine"

# ---- A session on a 64 MiB tree: each job changes one 1 MiB file ----
MAKE='mkdir -p src; i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/urandom > src/f$i; i=$((i+1)); done; echo hi > hello'
j0=$(run_job "$MAKE" s empty)
v0=$(art $j0 sha256)
is "the first version is one whole layer" "$(job_field $j0 status) $(art $j0 layers)" "succeeded 1"
j1=$(run_job 'head -c 1048576 /dev/urandom > src/f7' s)
is "a job changing one 1 MiB file makes a second layer" "$(job_field $j1 status) $(art $j1 layers)" "succeeded 2"
size1=$(art $j1 size)
check "and uploads about that file: $size1 bytes (< 1.1 MiB), not the 64 MiB tree" test "$size1" -lt 1153434 -a "$size1" -gt 1000000
is "its changed bytes are the file's" "$(art $j1 changed_bytes)" "1048576"
is "result.artifact.url is null for a version of several layers" "$(job_field $j1 "result->'artifact'->'url'")" "null"
check "the version's parent is the first" test "$(art $j1 parent_sha256)" = "$v0"
is "the event says so too" "$(sql "select details->>'layers' from boxcar.job_events where job_id = '$j1' and kind = 'artifact_uploaded'")" "2"

# ---- Every kind of change travels exactly ----
PREP='mkdir -p keep/deep gone/sub opq ren; echo k > keep/deep/k; echo g > gone/sub/g; echo o1 > opq/o1; echo o2 > opq/o2; echo r > ren/r; echo m > mode; chmod 644 mode; echo h > h1; ln h1 h2; ln h1 h3; echo t > typ; mkdir dtyp; echo x > dtyp/x; truncate -s 64M sparse1; echo end >> sparse1; ln -s keep sym'
jp=$(run_job "$PREP" s)
CHANGE='rm -rf gone; rm -rf opq; mkdir opq; echo new > opq/o3; mv ren renamed; chmod 700 mode; echo h2new > h2.tmp; mv h2.tmp h2; ln h1 h4; rm typ; mkdir typ; echo in > typ/in; rm -rf dtyp; echo now-a-file > dtyp; truncate -s 32M sparse2; printf x | dd of=sparse2 bs=1 seek=20000000 conv=notrunc 2>/dev/null; rm sym; ln -s renamed sym; touch .wh-not-a-whiteout'
jc=$(spec "$CHANGE; $LISTING" s | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$jc" >/dev/null
is "a job deletes, replaces, renames, relinks and rechmods" "$(job_field $jc status) $(art $jc layers)" "succeeded 4"
job_field $jc "result->>'stdout'" | sed '/^$/d' > "$tmp/in-job.ls"
pull "s@$(art $jc sha256)" "$tmp/vc"
listing "$tmp/vc" > "$tmp/pulled.ls"
if diff "$tmp/in-job.ls" "$tmp/pulled.ls" > "$tmp/d"; then ok "the pulled version (4 layers applied) is exactly the tree the job left"
else not_ok "layered round trip"; diag "$(head -40 "$tmp/d")"; fi
check "no whiteout file leaked into the tree" bash -c "! grep -q '\.wh\.' '$tmp/pulled.ls'"
check "the sparse file stayed sparse" grep -q "^small ./sparse2" "$tmp/pulled.ls"
is "and the manifest is the tree's: pushing the pulled tree gives the same id" \
   "$("$BOXCAR" storage push sc "$tmp/vc" 2>/dev/null)" "$(art $jc sha256)"

# ---- Another worker lacking part of the stack downloads only that ----
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
start_worker lay-b --concurrency 1 --lease 10s --poll-interval 200ms --sandbox namespace \
  --metrics-addr "127.0.0.1:$PORT"
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
jb1=$(run_job 'echo b1 > b1' s)
jb2=$(run_job 'echo b2 > b2' s)
is "worker b extends the session (its own cold start, then a hit)" "$(job_field $jb1 status) $(job_field $jb2 status)" "succeeded succeeded"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
start_worker lay-a --concurrency 1 --lease 10s --poll-interval 200ms --sandbox namespace \
  --metrics-addr "127.0.0.1:$PORT"
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
d0=$(dl)
ja=$(run_job 'cat b1 b2' s)
want=$(sql "select sum(size) from boxcar.storage_versions where sha256 in ('$(art $jb1 sha256)', '$(art $jb2 sha256)') and storage = 's'")
is "worker a runs on the stack b extended" "$(job_field $ja "status || ' ' || (result->>'stdout')")" "succeeded b1
b2"
# Only a worker that keeps an artifact cache (the overlay path) holds the
# stack; one that extracts each base (detect says why: as root, per-job
# host ids, docs/tenants.md) downloads the whole version every time.
if [[ $(artifact_base) == overlay* ]]; then
  is "worker a, which holds the stack up to its own last version, downloads the two layers b added ($want bytes)" \
     "$(( $(dl) - d0 ))" "$want"
else
  got=$(( $(dl) - d0 ))
  check "worker a, extracting each base, downloads the version again: at least the two layers b added ($got of $want bytes)" \
    test "$got" -ge "$want"
fi

# ---- Compaction: a stack never exceeds 16 layers ----
layers=""
for i in $(seq 14); do j=$(run_job "echo $i > n$i" s); layers+="$(art $j layers) "; done
is "layers grow to 16, then the stack is compacted to 2" "$layers" "7 8 9 10 11 12 13 14 15 16 2 3 4 5 "
is "the compacted version's bottom is the session's first layer" \
   "$(sql "select layers[1] = (select layers[1] from boxcar.storage_versions where sha256 = '$v0') from boxcar.storage_versions where storage = 's' and sha256 = '$(art $j sha256)'")" "t"
pull "s@$(art $j sha256)" "$tmp/vk"
is "the compacted version holds everything" "$(cat "$tmp/vk/n1" "$tmp/vk/n14" "$tmp/vk/b2" "$tmp/vk/opq/o3")" "1
14
b2
new"

# ---- Whole-tree tarballs on request ----
vlast=$(art $j sha256)
url=$("$BOXCAR" storage url "s@$vlast" 2>"$tmp/url.err")
check "storage url builds and presigns the whole tree" grep -q 'X-Amz-Signature=' <<<"$url"
mkdir "$tmp/tb"; curl -sf "$url" | tar -xzf - -C "$tmp/tb"
listing "$tmp/tb" > "$tmp/tb.ls"; listing "$tmp/vk" > "$tmp/vk.ls"
check "the tarball is the version's tree" diff -q "$tmp/tb.ls" "$tmp/vk.ls"
is "and is recorded for the next time" "$(sql "select s3_key is not null from boxcar.storage_versions where storage = 's' and sha256 = '$vlast'")" "t"

# ---- Versions made before layering ----
L=$(sql "select layers[1] || ' ' || s3_key || ' ' || size from boxcar.storage_versions where storage = 'idt' and sha256 = '$p1'")
read -r lsha lkey lsize <<<"$L"
sql "select boxcar.add_storage_version('legacy', '$lsha', '$lkey', $lsize, 5)" >/dev/null
is "a tarball-format version (named by its tarball) is listed as one layer" \
   "$(sql "select format || ' ' || layers[1] from boxcar.storage_versions where storage = 'legacy'")" "tarball $lsha"
pull "legacy@$lsha" "$tmp/leg"
check "it pulls" diff -r "$tmp/src" "$tmp/leg"
jl=$(run_job 'echo more >> a' legacy)
jl2=$(run_job 'echo again >> a' legacy)
is "the first job on it stores a whole tree, the next a layer on it" \
   "$(job_field $jl status) $(art $jl layers) $(art $jl parent_sha256) $(art $jl2 layers)" "succeeded 1 $lsha 2"

# ---- Hostile stacks ----
mkdir -p "$tmp/evil1" "$tmp/evil2" "$tmp/evil3"; : > "$tmp/evil1/.wh.."; : > "$tmp/evil2/.wh..wh..opq"; : > "$tmp/evil3/.wh.nothing"
hostile() {  # NAME DIR -> job id of a job on a two-layer version whose top is DIR's layer
  "$BOXCAR" storage push "h-$1" "$2" >/dev/null 2>&1
  local top; top=$(sql "select layers[1] from boxcar.storage_versions where storage = 'h-$1'")
  sql "select boxcar.add_storage_version('$1', repeat('e', 63) || '$(( RANDOM % 10 ))', null, 1, 1, null, null, true, array['$lsha', '$top'], '$p1')" >/dev/null
  run_job "true" "$1"
}
for n in 1 2 3; do
  j=$(hostile "evil$n" "$tmp/evil$n")
  is "a layer whose whiteout is $(ls -A "$tmp/evil$n") is refused: BAD_ARCHIVE" "$(job_field $j "status || ' ' || (error->>'code')")" "failed BAD_ARCHIVE"
done
sql "select boxcar.add_storage_version('gone', repeat('f', 64), null, 1, 1, null, null, true, array['$lsha', repeat('0', 64)], '$p1')" >/dev/null
j=$(run_job "true" gone)
is "a layer S3 does not hold: BAD_ARCHIVE, not retried" "$(job_field $j "status || ' ' || (error->>'code') || ' ' || attempts")" "failed BAD_ARCHIVE 1"
check "its message names the missing layer" bash -c "psql -XqtA '$DATABASE_URL' -c \"select error->>'message' from boxcar.jobs where id = '$j'\" | grep -q missing"
is "no overlay is left mounted in the worker" "$(grep -c ' - overlay ' /proc/$WORKER_PID/mountinfo)" "0"
tap_done
