# What a store that is not atomic (s3rver, a gateway over a plain
# filesystem) keeps of a kill between an object and its metadata: the
# metadata file cut short, on which every HEAD and GET of the key fails
# (HTTP 500).  The chaos run met it: one artifact job failed its upload at
# every attempt after S3 was back, and the jobs after it on its storage
# waited.  A push of the same bytes writes them through and heals the key.
source "$(dirname "$0")/../lib.sh"
eval "$("$S3SH" start)"
export BOXCAR_S3_PREFIX="e2e-torn-$$"
fresh_db e2e_s3_torn
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/src"; head -c 50000 /dev/urandom > "$tmp/src/blob"; echo hello > "$tmp/src/a.txt"
sha=$("$BOXCAR" storage push torn "$tmp/src" 2>"$tmp/push1.err")
check "a tree is pushed" grep -qE '^[0-9a-f]{64}$' <<<"$sha"
url=$("$BOXCAR" storage url torn)
data="$BOXCAR_DEV/s3/data/$BOXCAR_S3_BUCKET/$BOXCAR_S3_PREFIX"
metas=$(find "$data" -name '*._S3rver_metadata.json' 2>/dev/null)
for m in $metas; do printf '{"content-ty' > "$m"; done
is "control: with the objects' metadata cut short, the store answers 500 for them" \
   "$([[ -n $metas ]] && echo found) $(curl -s -o /dev/null -w '%{http_code}' "$url")" "found 500"
sha2=$("$BOXCAR" storage push torn-again "$tmp/src" 2>"$tmp/push2.err")
is "a push of the same tree to another storage writes the objects through (the HEAD failed, the PUT stored them)" \
   "$sha2" "$sha"
diag "$(tail -2 "$tmp/push2.err")"
is "and the store serves the version's layer again" "$(curl -s -o /dev/null -w '%{http_code}' "$url")" "200"
"$BOXCAR" storage pull torn@latest "$tmp/pulled" 2>"$tmp/pull.err"
check "the first storage's version pulls, the tree it named" diff -r "$tmp/src" "$tmp/pulled"
tap_done
