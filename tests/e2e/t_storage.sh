# Storage end to end against a real S3 server: the CLI, volumes by storage
# and by presigned URL, artifacts persisting across jobs, and S3 failures.
# Ceph's RADOS Gateway unless BOXCAR_TEST_S3 says s3rver: the one e2e
# scenario where a server that checks signatures and If-None-Match runs in
# every `make test` (the others take BOXCAR_TEST_S3=rgw too).
: "${BOXCAR_TEST_S3:=rgw}"
source "$(dirname "$0")/../lib.sh"
eval "$("$S3SH" start)"
export BOXCAR_S3_PREFIX="e2e-$$"
fresh_db e2e_storage
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
finished() { [[ $(sql "select status from boxcar.jobs where id = '$1'") =~ ^(succeeded|failed|cancelled)$ ]]; }

# CLI round trip and dedup.
mkdir -p "$tmp/src/sub"; echo "hello" > "$tmp/src/a.txt"; printf 'x,y\n1,2\n' > "$tmp/src/sub/data.csv"
ln -s a.txt "$tmp/src/link"
sha=$("$BOXCAR" storage push repo "$tmp/src" 2>"$tmp/push1.err")
check "storage push prints a sha256" grep -qE '^[0-9a-f]{64}$' <<<"$sha"
sha2=$("$BOXCAR" storage push repo "$tmp/src" 2>"$tmp/push2.err")
is "pushing the same tree again gives the same sha256" "$sha2" "${sha:-(the first push printed none)}"
check "and uploads nothing" grep -q "already stored" "$tmp/push2.err"
is "storage ls NAME lists one version, the head" "$("$BOXCAR" storage ls repo | grep -c '"is_head": true')" "1"
"$BOXCAR" storage pull repo@latest "$tmp/pulled" 2>/dev/null
check "storage pull restores the tree" diff -r "$tmp/src" "$tmp/pulled"
url=$("$BOXCAR" storage url repo)
curl -sf "$url" -o "$tmp/obj.tar.gz"
# A pushed version is one layer: the whole tree's tarball, named by its
# bytes (the version is named by its tree).
lsha=$(sql "select layers[1] from boxcar.storage_versions where storage = 'repo' and sha256 = '$sha'")
is "storage url downloads the version's one layer, the whole tree" "$(sha256sum < "$tmp/obj.tar.gz" | cut -d' ' -f1)" "${lsha:-(no layer recorded)}"
check "the printed URL is presigned" grep -q 'X-Amz-Signature=' <<<"$url"

start_worker storage-w --concurrency 2 --lease 10s --poll-interval 500ms --sandbox "$E2E_SANDBOX"

# Artifact persistence across two jobs, with lineage.
j1=$(echo '{"script": "echo first > notes.txt; mkdir -p out; echo 1 > out/n", "artifact": {"storage": "notes-1"}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$j1" >/dev/null
is "the first job succeeds" "$(job_field $j1 status)" "succeeded"
a1=$(job_field $j1 "result->'artifact'->>'sha256'")
j2=$(echo '{"script": "cat notes.txt; cat out/n; echo second >> notes.txt", "artifact": {"storage": "notes-1", "base": "latest"}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$j2" >/dev/null
is "the second job sees the first job's files" "$(job_field $j2 "result->>'stdout'")" "first
1"
is "its artifact's parent is the first version" "$(job_field $j2 "result->'artifact'->>'parent_sha256'")" "${a1:-(the first job saved none)}"
a2=$(job_field $j2 "result->'artifact'->>'sha256'")
is "the head moved to the second version" "$(sql "select head_version from boxcar.storages where name = 'notes-1'")" "${a2:-(the second job saved none)}"
curl -sf "$(job_field $j2 "result->'artifact'->>'url'")" -o "$tmp/a2.tar.gz"
mkdir "$tmp/a2"; tar xzf "$tmp/a2.tar.gz" -C "$tmp/a2"
is "result.artifact.url serves the new version" "$(cat "$tmp/a2/notes.txt")" "first
second"
is "the upload is in the audit trail" "$(sql "select count(*) from boxcar.job_events where job_id = '$j2' and kind = 'artifact_uploaded'")" "1"
is "its trail keeps the order things happened in (started and exited are written before the upload)" \
   "$(sql "select string_agg(e ->> 'kind', ',' order by n) from boxcar.job_events_json('$j2') with ordinality x(e, n)")" \
   "claimed,started,exited,artifact_uploaded,finished"
j3=$(echo '{"command": ["sh", "-c", "echo failed-state > f.txt; exit 7"], "artifact": {"storage": "notes-1", "base": "empty"}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$j3" >/dev/null
is "a failed run still saves its workspace, from an empty base" "$(job_field $j3 "status || ' ' || (result->'artifact'->>'file_count') || ' ' || coalesce(result->'artifact'->>'parent_sha256', 'none')")" "failed 1 none"

# A cancelled job still saves its workspace and sends its webhook.
cj=$(echo '{"script": "echo partial > progress.txt; sleep 60", "artifact": {"storage": "cancel-art"}, "webhook": {"url": "http://127.0.0.1:9/h"}}' | "$BOXCAR" enqueue --spec -)
wait_for "started" 20 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$cj' and kind = 'started'\") == 1 ]]"
sleep 0.5
"$BOXCAR" cancel "$cj" >/dev/null
"$BOXCAR" status --wait "$cj" >/dev/null
is "a cancelled job ends cancelled with its artifact saved" "$(job_field $cj "status || ' ' || (error->>'code') || ' ' || (result->'artifact'->>'file_count')")" "cancelled CANCELLED 1"
is "and its webhook is in the outbox" "$(sql "select event_type from boxcar.webhook_deliveries where job_id = '$cj'")" "job.cancelled"

# Volumes: by storage (resolved and presigned by the worker) and by URL.
mkdir -p "$tmp/vol"; printf 'city,temp\nOslo,4\n' > "$tmp/vol/data.csv"
vsha=$("$BOXCAR" storage push --kind volume datasets "$tmp/vol" 2>/dev/null)
v1=$(echo '{"script": "cat /mnt/data/data.csv; cat /mnt/repo/a.txt; echo x > /mnt/data/new 2>/dev/null && echo WROTE || echo read-only", "volumes": [{"name": "data", "mount": "/mnt/data", "storage": "datasets"}, {"name": "repo", "mount": "/mnt/repo", "url": "'"$url"'", "sha256": "'"$lsha"'"}]}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$v1" >/dev/null
is "volumes by storage and by presigned URL are mounted" "$(job_field $v1 "status || ' ' || (result->>'stdout')")" "succeeded city,temp
Oslo,4
hello
read-only"
wrong=$(echo '{"command": ["true"], "volumes": [{"name": "repo", "mount": "/mnt/repo", "url": "'"$url"'", "sha256": "'"$(printf '0%.0s' {1..64})"'"}]}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$wrong" >/dev/null
is "a wrong sha256 fails with CHECKSUM_MISMATCH, not retried" "$(job_field $wrong "status || ' ' || (error->>'code') || ' ' || attempts")" "failed CHECKSUM_MISMATCH 1"
check "a storage that does not exist is refused at enqueue (BAD_SPEC, not found in the scope)" \
  bash -c "echo '{\"command\": [\"true\"], \"volumes\": [{\"name\": \"d\", \"mount\": \"/mnt/d\", \"storage\": \"no-such-storage\"}]}' | '$BOXCAR' enqueue --spec - 2>&1 | grep -q 'volumes\[0\].storage: storage \"no-such-storage\" not found in scope \"default\"'"
sql "select boxcar.create_storage('empty-vol', 'volume')" >/dev/null
missing=$(echo '{"command": ["true"], "volumes": [{"name": "d", "mount": "/mnt/d", "storage": "empty-vol"}]}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$missing" >/dev/null
is "a storage without versions fails with BAD_SPEC naming the volume" "$(job_field $missing "status || ' ' || (error->>'code') || ' ' || (error->>'message' like 'volumes[0] (d): storage empty-vol has no version latest%')")" "failed BAD_SPEC true"
short=$("$BOXCAR" storage url --expires 1s repo)
sleep 2
expired=$(echo '{"command": ["true"], "volumes": [{"name": "repo", "mount": "/mnt/r", "url": "'"$short"'"}]}' | "$BOXCAR" enqueue --max-attempts 1 --spec -)
"$BOXCAR" status --wait "$expired" >/dev/null
is "an expired presigned URL fails with FETCH_FAILED" "$(job_field $expired "status || ' ' || (error->>'code')")" "failed FETCH_FAILED"
check "the error names the URL without its signature" bash -c "m=\$(psql -XqtA '$DATABASE_URL' -c \"select error->>'message' from boxcar.jobs where id = '$expired'\"); [[ \$m == *127.0.0.1* && \$m != *X-Amz-Signature* && \$m != *$AWS_ACCESS_KEY_ID* ]]"

# S3 down: the job is retried with backoff and succeeds when S3 is back.
# Its base is a version this worker never restored (pushed from outside):
# one it has in its artifact cache would need no download at all (the
# nonce: the work dir, and its cache, outlive a run of this test).
mkdir -p "$tmp/s2"; printf 'first\nsecond\n' > "$tmp/s2/notes.txt"; echo "$$-$RANDOM-$(date +%s%N)" > "$tmp/s2/nonce"
a2=$("$BOXCAR" storage push notes-2 "$tmp/s2" 2>/dev/null)
"$S3SH" stop
down=$(echo '{"script": "cat notes.txt", "artifact": {"storage": "notes-2", "base": "'"$a2"'"}}' | "$BOXCAR" enqueue --max-attempts 6 --spec -)
check "with S3 down the job is retried" wait_for "retried" 30 bash -c "[[ \$(psql -XqtA '$DATABASE_URL' -c \"select count(*) from boxcar.job_events where job_id = '$down' and kind = 'retried' and details->'error'->>'code' = 'FETCH_FAILED'\") -ge 1 ]]"
eval "$("$S3SH" start)"
check "and succeeds once S3 is back" wait_for "finished" 60 finished "$down"
is "with the artifact's contents" "$(job_field $down "status || ' ' || (result->>'stdout')")" "succeeded first
second"
tap_done
