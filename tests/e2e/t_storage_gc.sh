# Retention and garbage collection (issue 46) against a real S3 and real
# workers: rm and retain, the grace period, dry runs, objects of removed
# versions and of removed storages deleted from S3, nothing a running job
# or a kept version needs ever deleted (collectors running while jobs run
# on the same storages, several at once), and the worker's own periodic
# collection with its metrics.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-gc-$$"
fresh_db e2e_storage_gc
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
PORT=$(free_port)
spec() { jq -cn --arg s "$1" --arg st "$2" '{script: $s, artifact: {storage: $st}}'; }
enq() { spec "$@" | "$BOXCAR" enqueue --spec -; }
run_job() { local id; id=$(enq "$@"); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }
art() { job_field "$1" "result->'artifact'->>'$2'"; }
gc() { "$BOXCAR" storage gc --json "$@" 2>>"$tmp/gc.err"; }
stored() { sql "select boxcar.storage_bytes_stored()"; }
# Whether S3 still has an object: a presigned GET made while it was kept.
http_code() { curl -s -o /dev/null -w '%{http_code}' "$1"; }
# Every version still listed pulls, and is the tree it names (pushing the
# pulled tree gives its id back).
all_pull() {
  local st v bad=0
  while read -r st v; do
    rm -rf "$tmp/p"
    if ! "$BOXCAR" storage pull "$st@$v" "$tmp/p" 2>"$tmp/p.err"; then bad=$((bad + 1)); diag "$st@$v: $(cat "$tmp/p.err")"; continue; fi
  done < <(sql "select storage || ' ' || sha256 from boxcar.storage_versions where removed_at is null")
  [[ $bad -eq 0 ]]
}

start_worker gc-w --concurrency 2 --lease 10s --poll-interval 200ms --sandbox "$E2E_SANDBOX" \
  --metrics-addr "127.0.0.1:$PORT" --storage-gc-interval 0
wait_for "metrics up" 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"

# ---- rm and the grace period ----
mkdir -p "$tmp/t1"; head -c 300000 /dev/urandom > "$tmp/t1/blob"
v1=$("$BOXCAR" storage push gone "$tmp/t1" 2>/dev/null)
u1=$("$BOXCAR" storage url --expires 1h "gone@$v1")
is "the pushed object is in S3" "$(http_code "$u1")" "200"
before=$(stored)
check "the head cannot be removed alone" bash -c "! '$BOXCAR' storage rm gone@$v1 2>'$tmp/rm.err'"
check "and the refusal says why" grep -q "head" "$tmp/rm.err"
"$BOXCAR" storage rm gone 2>/dev/null
is "a removed storage is gone from resolution" "$(sql "select count(*) from boxcar.resolve_storage_version('gone', 'latest')")" "0"
out=$(gc)
is "within the grace period nothing is deleted" "$(jq -r .objects_deleted <<<"$out") $(http_code "$u1")" "0 200"
out=$(gc --grace 0s --dry-run)
is "a dry run says what would go and deletes nothing" "$(jq -r '.objects_deleted > 0' <<<"$out") $(http_code "$u1")" "true 200"
out=$(gc --grace 0s)
is "past the grace period, the removed storage's objects are deleted from S3" \
   "$(jq -r '.objects_deleted >= 2' <<<"$out") $(http_code "$u1")" "true 404"
check "bytes stored went down by what was reclaimed" test "$(stored)" -eq $((before - $(jq -r .bytes_reclaimed <<<"$out")))
is "the removed rows are purged" "$(sql "select count(*) from boxcar.storage_versions where storage = 'gone'")" "0"

# ---- Uploads no version records: an attempt that is retried ----
is "nothing is left to collect so far" "$(sql "select count(*) from boxcar.storage_gc_candidates('0 seconds')")" "0"
# Both attempts start from the same (empty) base and fail: the first's
# upload is never recorded, the last one's is.
jr=$(jq -cn '{script: "head -c 100000 /dev/urandom > r; exit 3", retry: {on: ["NONZERO_EXIT"]}, artifact: {storage: "retried"}}' \
  | "$BOXCAR" enqueue --spec - --max-attempts 2)
"$BOXCAR" status --wait "$jr" >/dev/null
orphans=$(sql "select count(*) from boxcar.storage_gc_candidates('0 seconds')")
is "a retried attempt's upload (layer and manifest) is referenced by nothing" "$(job_field $jr "status || ' ' || attempts") $orphans" "failed 2 2"
out=$(gc --grace 0s)
is "the collector deletes exactly those" "$(jq -r .objects_deleted <<<"$out") $(sql "select count(*) from boxcar.storage_gc_candidates('0 seconds')")" "2 0"
check "the version the last attempt recorded still pulls" "$BOXCAR" storage pull "retried@latest" "$tmp/retried"

# ---- Retention keeps the head, branch tips, the last N ----
for i in 1 2 3 4 5 6; do j=$(run_job "head -c 200000 /dev/urandom > f$i" ret); done
tip=$(art $j sha256)
# A job based on the second version moves the head there (nobody moved it
# meanwhile): version 6 stays a branch tip; two more jobs follow.
jbr=$(jq -cn --arg b "$(sql "select sha256 from boxcar.storage_versions where storage = 'ret' order by id limit 1 offset 1")" \
  '{script: "echo branch > br", artifact: {storage: "ret", base: $b}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$jbr" >/dev/null
for i in 7 8; do j=$(run_job "echo $i > g$i" ret); done
vhead=$(art $j sha256)
"$BOXCAR" storage retain ret --keep-last 2
is "the policy is listed" "$(sql "select s->>'keep_last' from boxcar.storages_json() s where s->>'name' = 'ret'")" "2"
out=$(gc --grace 0s)
is "retention removed all but the last two (the head among them) and the old branch's tip" \
   "$(jq -r .versions_removed <<<"$out") $(sql "select count(*) from boxcar.storage_versions where storage = 'ret' and removed_at is null")" "6 3"
is "the head stays" "$(sql "select head_version from boxcar.storages where name = 'ret'")" "$vhead"
is "the branch tip stays" "$(sql "select count(*) from boxcar.storage_versions where storage = 'ret' and sha256 = '$tip' and removed_at is null")" "1"
check "every kept version still pulls (their layers were kept)" all_pull

# ---- Nothing a running job needs: rm while it runs ----
run_job "head -c 200000 /dev/urandom > base" busy >/dev/null
jrun=$(enq "sleep 4; echo more > more" busy)
wait_for "the job started" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select status from boxcar.jobs where id = '$jrun'\") == running ]]"
"$BOXCAR" storage rm busy 2>/dev/null
out=$(gc --grace 0s)
is "the removed storage of a running job keeps its rows through a collection" \
   "$(sql "select count(*) from boxcar.storage_versions where storage = 'busy'")" "1"
"$BOXCAR" status --wait "$jrun" >/dev/null
is "the job finishes and records its version on the revived storage (no head to replace: a conflict)" \
   "$(job_field $jrun "status || ' ' || (result->'artifact'->>'conflict')")" "succeeded true"
check "its version, built on the removed one's layers, pulls" "$BOXCAR" storage pull "busy@$(art $jrun sha256)" "$tmp/busy"
is "with both jobs' files" "$(ls "$tmp/busy" | tr '\n' ' ')" "base more "

# ---- Collectors racing jobs on the same storages ----
check "retain on a storage that does not exist is an error" bash -c "! '$BOXCAR' storage retain race --keep-last 1 2>/dev/null"
sql "select boxcar.create_storage('race', 'artifact')" >/dev/null
check "retain race --keep-last 1" "$BOXCAR" storage retain race --keep-last 1
ids=()
for i in $(seq 12); do ids+=("$(enq "head -c 100000 /dev/urandom > f$((i % 3)); rm -f f$(((i + 1) % 3))" race)"); done
# The grace period must cover a job's upload-to-record window (under a
# second here; 1h by default): an upload is not referenced until then.
# Every collection's report is kept: on a slow host the jobs may all have
# ended (and their layers aged past the grace) before the last rounds
# here, which then collect what the idle one below would have.
for r in 1 2 3 4 5 6; do gc --grace 3s >"$tmp/race-$r-a.json" & p=$!; gc --grace 3s >"$tmp/race-$r-b.json"; wait "$p"; sleep 0.3; done
for id in "${ids[@]}"; do "$BOXCAR" status --wait "$id" >/dev/null; done
is "every job of the session succeeded while collections ran" \
   "$(sql "select count(*) from boxcar.jobs where spec->'artifact'->>'storage' = 'race' and status = 'succeeded'")" "12"
sleep 3
gc --grace 3s >"$tmp/race-idle.json"
collected=$(jq -s 'map(.objects_deleted) | add' "$tmp"/race-*.json)
is "once the session is idle, what retention removed is collected ($collected objects in all), nothing is left" \
  "$([[ $collected -gt 0 ]] && echo some) $(sql "select count(*) from boxcar.storage_gc_candidates('0 seconds')")" "some 0"
check "and every version still kept, on every storage, pulls" all_pull
jl=$(run_job "ls | sort | tr '\n' ' '" race)
is "the session goes on from its head" "$(job_field $jl status)" "succeeded"
check "no collector reported an error" bash -c "! grep -qi error '$tmp/gc.err'"

# ---- The worker's own collection, and its metrics ----
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
mkdir -p "$tmp/t2"; head -c 150000 /dev/urandom > "$tmp/t2/x"
"$BOXCAR" storage push old "$tmp/t2" >/dev/null 2>&1
"$BOXCAR" storage rm old 2>/dev/null
start_worker gc-w2 --concurrency 1 --poll-interval 200ms --sandbox "$E2E_SANDBOX" \
  --metrics-addr "127.0.0.1:$PORT" --storage-gc-interval 1s --storage-gc-grace 0s
wait_for "the leader collected" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.storage_versions where storage = 'old'\") == 0 ]]"
wait_for "metrics" 10 bash -c "curl -s http://127.0.0.1:$PORT/metrics | grep -q '^boxcar_storage_bytes_reclaimed_total [1-9]'"
m=$(curl -s "http://127.0.0.1:$PORT/metrics")
check "boxcar_storage_bytes_reclaimed_total counts what it deleted" grep -q '^boxcar_storage_bytes_reclaimed_total [1-9]' <<<"$m"
is "boxcar_storage_bytes_stored is the database's count" "$(awk '$1 == "boxcar_storage_bytes_stored" { printf "%d", $2 }' <<<"$m")" "$(stored)"
tap_done
