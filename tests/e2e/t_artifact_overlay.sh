# An artifact's base is the worker's cached tree under an overlay (issue
# 12): the next job of a session neither downloads nor extracts it, what it
# deletes, changes and adds is exactly the new version, the cached tree is
# never modified (not by that job, not by a concurrent one on the same
# tree), disk_mb bounds the job's changes, the packed tree gives the same
# sha256 as a plain extraction, and eviction leaves pinned entries alone.
source "$(dirname "$0")/../lib.sh"
if [[ $E2E_SANDBOX != namespace || $(id -u) -ne 0 ]] || ! grep -qw overlay /proc/filesystems; then
  skip "overlay workspaces need the namespace backend as root, with overlayfs"; tap_done; exit 0
fi
# As root each sandbox's job has host ids of its own (docs/tenants.md,
# Host identities), which an overlay cannot be idmapped to: bases are
# extracted, and detect says why.
base=$(artifact_base)
if [[ $base != overlay* ]]; then
  check "artifact base: extracted, since the jobs' host ids are their own, and detect says so ($base)" \
    extracted_for_own_ids "$base"
  tap_done; exit
fi
eval "$("$S3SH" start)"
export BOXCAR_S3_PREFIX="e2e-ovl-$$"
fresh_db e2e_artifact_overlay
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
PORT=$(free_port)
WD=$BOXCAR_DEV/work/ovl-w
rm -rf "$WD"
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
hits() { local v; v=$(metric 'boxcar_artifact_cache_lookups_total{result="hit"}'); echo "${v:-0}"; }
misses() { local v; v=$(metric 'boxcar_artifact_cache_lookups_total{result="miss"}'); echo "${v:-0}"; }
dl() { local v; v=$(metric 'boxcar_transfer_bytes_total{direction="download",kind="artifact"}'); echo "${v:-0}"; }
# spec SCRIPT STORAGE [BASE] [LIMITS]: an artifact job's spec.
spec() {
  local lim=${4:-'{}'}
  jq -cn --arg s "$1" --arg st "$2" --arg b "${3:-}" --argjson l "$lim" \
    '{script: $s, limits: $l, artifact: ({storage: $st} + (if $b == "" then {} else {base: $b} end))}'
}
enq() { spec "$@" | "$BOXCAR" enqueue --spec -; }
run_job() { local id; id=$(enq "$@"); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }
sha_of() { job_field "$1" "result->'artifact'->>'sha256'"; }
# A tree's listing: type, mode, link count within the tree, size, path,
# symlink target; then every regular file's sha256.
listing() { (cd "$1" && find . -mindepth 1 -printf '%y %m %s %p %l\n' | sort && find . -type f -print0 | sort -z | xargs -0r sha256sum); }
pull() { rm -rf "$2"; "$BOXCAR" storage pull "$1" "$2" 2>/dev/null; }
entry_of() { echo "$WD/artifacts/v/$(stack_of "$1")"; }

"$BOXCAR" sandbox detect > "$tmp/detect"
check "boxcar sandbox detect says the artifact base is an overlay here" grep -q '^artifact base: *overlay' "$tmp/detect"

start_worker ovl-w --concurrency 2 --lease 10s --poll-interval 300ms --sandbox namespace \
  --metrics-addr "127.0.0.1:$PORT"
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
check "the worker logs the overlay path" grep -q 'overlay over the artifact cache' "$BOXCAR_DEV/test-logs/ovl-w.log"

# The session's first version: files of several modes, a directory, a
# symlink, two hard links, a 20 MiB file.
MAKE_V1='echo keep > keep.txt; echo old > mod.txt; echo bye > del.txt; mkdir -p dir/sub; echo s > dir/sub/s.txt; printf "#!/bin/sh\necho run\n" > run.sh; chmod 755 run.sh; echo secret > private; chmod 600 private; ln -s keep.txt link; echo h > h1; ln h1 h2; head -c 20971520 /dev/zero | tr "\\0" z > big'
j1=$(run_job "$MAKE_V1" s)
is "job 1 makes the first version" "$(job_field $j1 status)" "succeeded"
v1=$(sha_of $j1)
is "an empty base is not a cache lookup" "$(hits)/$(misses)" "0/0"

# Job 2 deletes, modifies, adds; it owns what it finds (modes as packed).
CHANGE='rm del.txt; echo new > mod.txt; echo add > add.txt; rm dir/sub/s.txt; [ -O keep.txt ] && [ -O dir ] && [ -w mod.txt ] && stat -c "%a %n" run.sh private; ./run.sh'
j2=$(run_job "$CHANGE" s latest)
is "job 2 owns the base's files, modes kept, and runs one" "$(job_field $j2 "status || ' ' || (result->>'stdout')")" "succeeded 755 run.sh
600 private
run"
v2=$(sha_of $j2)
is "job 2's base came from the cache: one miss (extracted once), no hit" "$(hits)/$(misses)" "0/1"
entry=$(entry_of "$v1")
check "the cache holds the base version" test -d "$entry"
is "the artifact cache is the worker's alone (0700)" "$(stat -c %a "$WD/artifacts")" "700"

# The new version is exactly the base with the three changes.
pull "s@$v1" "$tmp/v1"
cp -a "$tmp/v1" "$tmp/expect"; rm "$tmp/expect/del.txt" "$tmp/expect/dir/sub/s.txt"
echo new > "$tmp/expect/mod.txt"; echo add > "$tmp/expect/add.txt"
pull "s@$v2" "$tmp/v2"
listing "$tmp/expect" > "$tmp/expect.ls"; listing "$tmp/v2" > "$tmp/v2.ls"
if diff "$tmp/expect.ls" "$tmp/v2.ls" > "$tmp/d"; then ok "version 2 is exactly: del.txt and s.txt gone, mod.txt changed, add.txt added"
else not_ok "version 2 content"; diag "$(cat "$tmp/d")"; fi
check "no whiteout leaked into the tarball (no character device)" bash -c "! grep -q '^c ' '$tmp/v2.ls'"
listing "$entry" > "$tmp/entry.ls"; listing "$tmp/v1" > "$tmp/v1.ls"
if diff "$tmp/v1.ls" "$tmp/entry.ls" > "$tmp/d"; then ok "the cached base is unchanged: exactly version 1, modes included"
else not_ok "cached base unchanged"; diag "$(cat "$tmp/d")"; fi
is "the cached tree belongs to the job's identity (65534)" "$(find "$entry" ! -uid 65534 | wc -l)" "0"

# Job 3 starts from version 1 again: a hit, nothing downloaded or
# extracted, and the same changes give the same sha256 as job 2.
d0=$(dl)
j3=$(run_job "$CHANGE" s "$v1")
is "job 3 succeeds" "$(job_field $j3 status)" "succeeded"
is "job 3's base was a cache hit" "$(hits)/$(misses)" "1/1"
is "and nothing was downloaded for it" "$(dl)" "$d0"
is "same tree from the overlay, same sha256" "$(sha_of $j3)" "$v2"
is "nothing extracted per job: the cache holds version 1 and version 2 only" "$(ls "$WD/artifacts/v" | grep '^[0-9a-f]*$' | sort | tr '\n' ' ')" "$(printf '%s\n' "$(stack_of "$v1")" "$(stack_of "$v2")" | sort | tr '\n' ' ')"

# The session's next job starts from the cache too: job 2's new version
# was put there from its changes (links to version 1's files, copies of
# what changed), exactly version 2.
listing "$(entry_of "$v2")" > "$tmp/entry-v2.ls"
if diff "$tmp/v2.ls" "$tmp/entry-v2.ls" > "$tmp/d"; then ok "job 2's version was cached from its changes: exactly version 2"
else not_ok "promoted version 2"; diag "$(cat "$tmp/d")"; fi
jsame=$(run_job "true" s "$v2")
is "a job changing nothing over the cached version 2 packs version 2 again (links, holes, modes as packed)" "$(job_field $jsame status) $(sha_of $jsame)" "succeeded $v2"
CHANGE2='echo more >> add.txt; ln -s add.txt l2; rm h1'
jp=$(run_job "$CHANGE2" s "$v2")
is "the next jobs of the session (base version 2) are cache hits" "$(job_field $jp status) $(hits)/$(misses)" "succeeded 3/1"
vp=$(sha_of $jp)

# A sparse file is charged to the cache's budget as stored (its data),
# not its size: a 1 GiB hole charged 1 GiB would evict every other
# session's entries.
# Its holes are packed at 4 KiB granularity whatever the filesystem's
# block (a small job filesystem has 1 KiB blocks, the worker's disk 4 KiB):
# the cached version, on the worker's disk, repacks to its own sha256.
jsp=$(run_job 'truncate -s 1G sparse; echo end >> sparse; printf x | dd of=sparse bs=1 seek=500000000 conv=notrunc 2>/dev/null' s "$v2" '{"disk_mb": 16}')
vsp=$(sha_of $jsp)
is "a job adds a 1 GiB sparse file over version 2" "$(job_field $jsp status)" "succeeded"
charged=$(cut -d' ' -f1 "$(entry_of "$vsp").size")
check "its cached version is charged its data, not 1 GiB ($charged bytes)" test "$charged" -lt $((64 << 20))
is "the cached version (holes on another filesystem) repacks to the same sha256" "$("$BOXCAR" storage push sparse-check "$(entry_of "$vsp")" 2>/dev/null | tail -1)" "$vsp"
jsp2=$(run_job 'echo x > small' s "$vsp" '{"disk_mb": 16}')
is "and the next job over it, disk_mb 16, still packs it (its data bytes, the base's, are within the limit)" "$(job_field $jsp2 "status || ' ' || coalesce(error->>'code', '')")" "succeeded "

# disk_mb bounds the job's changes (the upper), whatever the base's size:
# 20 MiB of base under disk_mb 16 is fine, writing 32 MiB is not, nor is
# changing the 20 MiB file (a copy-up of all of it).
BOUND='cat big | wc -c; if head -c 33554432 /dev/zero > new 2>/dev/null; then echo WROTE; else echo ENOSPC; fi; rm -f new; if echo x >> big 2>/dev/null; then echo APPENDED; else echo COPYUP-ENOSPC; fi'
j4=$(run_job "$BOUND" s "$v1" '{"disk_mb": 16}')
is "disk_mb 16 over a 20 MiB base: the base reads, 32 MiB of writes and a 20 MiB copy-up are refused, and the base + changes pack" \
   "$(job_field $j4 "status || ' ' || (result->>'stdout')")" "succeeded 20971520
ENOSPC
COPYUP-ENOSPC"

# What the worker itself writes into an overlay workspace (the workdir,
# .boxcar/state.json after a startup script) is the job's, as elsewhere.
jw=$(jq -cn --arg b "$v1" '{script: "touch made && [ -O . ] && [ -O /workspace/w ] && [ -O /workspace/.boxcar ] && [ -O /workspace/.boxcar/state.json ] && echo OWN", workdir: "/workspace/w/x", startup_script: "true", artifact: {storage: "s", base: $b}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$jw" >/dev/null
is "the workdir and .boxcar the worker made are the job's own" "$(job_field $jw "status || ' ' || (result->>'stdout')")" "succeeded OWN"

# The workdir is made once the base is there, never through a symlink of
# the base: `w -> <a host directory>` fails the job (final), the host
# directory stays empty.
mkdir -p "$tmp/target"; chmod 777 "$tmp/target"
jl=$(run_job "ln -s $tmp/target w" sym)
jl2=$(jq -cn '{script: "true", workdir: "/workspace/w/x", artifact: {storage: "sym", base: "latest"}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$jl2" >/dev/null
is "a workdir through the base's symlink: BAD_SPEC, not retried" "$(job_field $jl "status") $(job_field $jl2 "status || ' ' || (error->>'code') || ' ' || attempts")" "succeeded failed BAD_SPEC 1"
is "and nothing was made in the directory it points to" "$(ls -A "$tmp/target" | wc -l)" "0"

# A plain extraction (the --sandbox none worker extracts into a directory)
# of version 1 with the same changes gives the same sha256.
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
start_worker ovl-none --concurrency 1 --lease 10s --poll-interval 300ms --sandbox none
j5=$(run_job "$CHANGE" s "$v1")
is "plain-extract restore + same changes = the overlay's sha256" "$(job_field $j5 status) $(sha_of $j5)" "succeeded $v2"
j5b=$(run_job "$CHANGE2" s "$v2")
is "and over version 2 as cached from job 2's changes, the same as a plain extraction of it" "$(job_field $j5b status) $(sha_of $j5b)" "succeeded $vp"
check "that worker logs the extraction path" grep -q 'extracted into each job' "$BOXCAR_DEV/test-logs/ovl-none.log"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# The cold path (no warm sandbox: boxcar-sandbox started for the job)
# binds the same overlay.
start_worker ovl-cold --concurrency 1 --lease 10s --poll-interval 300ms --sandbox namespace \
  --warm-sandboxes 0
j6=$(run_job "$CHANGE" s "$v1")
is "cold sandbox: the same changes over the overlay, the same sha256" "$(job_field $j6 status) $(sha_of $j6)" "succeeded $v2"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# Two sessions on the same tree (same sha256) run at once on one cached
# lower: what one changes, the other never sees, and the tree stays.
start_worker ovl-w --concurrency 2 --lease 10s --poll-interval 300ms --sandbox namespace \
  --metrics-addr "127.0.0.1:$PORT" --volume-cache-mb 1
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"
jt=$(run_job "$MAKE_V1" t)
is "storage t's first version is the same tree as s's" "$(sha_of $jt)" "$v1"
WRITER='for f in $(find . -type f); do echo evil > $f; chmod 777 $f; done; rm -rf dir; touch marker; sleep 8'
READER='sleep 2; cat keep.txt mod.txt dir/sub/s.txt; test -e marker; echo $?; stat -c %a private'
ja=$(enq "$WRITER" s "$v1")
jb=$(enq "$READER" t "$v1")
"$BOXCAR" status --wait "$jb" >/dev/null
listing "$entry" > "$tmp/entry2.ls"   # the writer still holds it
"$BOXCAR" status --wait "$ja" >/dev/null
is "the reader, running while the writer rewrote every file, sees version 1" \
   "$(job_field $jb "status || ' ' || (result->>'stdout')")" "succeeded keep
old
s
1
600"
is "the writer succeeded" "$(job_field $ja status)" "succeeded"
check "and the cached tree is still exactly version 1" diff -q "$tmp/v1.ls" "$tmp/entry2.ls"

# Eviction (budget 1 MiB, here already exceeded by the 20 MiB base) never
# takes a tree a job is using: a job holds version 1 while another brings
# a new base in; once no job holds it, it goes.
jnew=$(run_job "echo other > o.txt" u)
vu=$(sha_of $jnew)
jhold=$(enq "sleep 5; cat keep.txt" s "$v1")
wait_for "holder started" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$jhold' and kind = 'started'\") == 1 ]]"
ju=$(run_job "cat o.txt" u "$vu")
is "a job on another base ran meanwhile (a miss, then eviction)" "$(job_field $ju "status || ' ' || (result->>'stdout')")" "succeeded other"
check "the pinned version 1 survived that eviction" test -d "$entry"
"$BOXCAR" status --wait "$jhold" >/dev/null
is "the holder read its base to the end" "$(job_field $jhold "status || ' ' || (result->>'stdout')")" "succeeded keep"
wait_for "unpinned version 1 evicted" 10 bash -c "[[ ! -e '$entry' ]]"
check "once released, version 1 was evicted (over the 1 MiB budget)" test ! -e "$entry"

# The budget charges a tree's entries too, not only its data bytes: a
# version of 3,000 empty files (no bytes) is charged about a block each,
# 12 MiB, over the 1 MiB budget, so it is not kept once no job holds it
# (charged nothing, a session adding empty files every job would fill
# the worker's inodes with versions that never go).
jmany=$(run_job 'mkdir m; cd m; i=0; while [ $i -lt 3000 ]; do : > f$i; i=$((i+1)); done' u "$vu")
vmany=$(sha_of $jmany)
is "a job adds 3,000 empty files" "$(job_field $jmany "status || ' ' || ((result->'artifact'->>'file_count')::int >= 3000)")" "succeeded true"
check "a version of empty files is charged for its entries: not kept over the budget" test ! -e "$(entry_of "$vmany")"
jm2=$(run_job 'ls m | wc -l' u "$vmany")
is "and the next job on it still gets it (downloaded)" "$(job_field $jm2 "status || ' ' || (result->>'stdout')")" "succeeded 3000"

# Nothing of it outlives the jobs: no overlay left mounted.
is "no overlay is left mounted in the worker" "$(grep " $WD/" /proc/$WORKER_PID/mountinfo | grep -c ' - overlay ')" "0"
tap_done
