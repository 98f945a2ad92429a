# Sourced by tests/storage/run.sh (s3rver up, $TOOL built, $W the scratch
# dir): the AWS credential sources against local endpoints that speak the
# real protocols (tests/storage/aws_mock.py: STS XML, IMDSv2, ECS JSON),
# and S3 behind a proxy that verifies every SigV4 signature and honours
# If-None-Match (tests/storage/sigv4_proxy.py), since s3rver does neither.

A="$W/aws"; mkdir -p "$A"; : > "$A/keys"; : > "$A/out.log"
ROLE=arn:aws:iam::123456789012:role/boxcar
printf 'eyJhbGciOiJSUzI1NiJ9.oidc-web-identity-%s.sig\n' "$RANDOM$RANDOM" > "$A/web-token"
ECS_TOKEN="ecs-auth-$RANDOM$RANDOM"; printf '%s\n' "$ECS_TOKEN" > "$A/ecs-token"
MOCK_PORT=$(free_port); MOCK=http://127.0.0.1:$MOCK_PORT
bg $PY tests/storage/aws_mock.py --port "$MOCK_PORT" --web-token-file "$A/web-token" \
  --role-arn "$ROLE" --ecs-token "$ECS_TOKEN" --keys "$A/keys"
PROXY_PORT=$(free_port); PROXY=http://127.0.0.1:$PROXY_PORT
bg $PY tests/storage/sigv4_proxy.py --port "$PROXY_PORT" --upstream "$AWS_ENDPOINT_URL_S3" \
  --key S3RVER:S3RVER --key DENIEDKEY:denied-secret --deny DENIEDKEY --keys "$A/keys"
wait_for "aws_mock.py" 10 curl -sf -o /dev/null "$MOCK/_stats" && wait_for "sigv4_proxy.py" 10 curl -s -o /dev/null "$PROXY/" ||
  { not_ok "aws_mock.py and sigv4_proxy.py start"; return; }
ok "local STS/IMDS/ECS endpoints at $MOCK, signature-checking S3 proxy at $PROXY"

# Nothing from the outer environment: each case says where credentials are.
aws() {
  env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
      -u AWS_WEB_IDENTITY_TOKEN_FILE -u AWS_ROLE_ARN -u AWS_CONTAINER_CREDENTIALS_FULL_URI \
      -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI -u AWS_CONTAINER_AUTHORIZATION_TOKEN \
      -u AWS_ENDPOINT_URL -u AWS_DEFAULT_REGION -u AWS_CA_BUNDLE -u AWS_ENDPOINT_URL_STS \
      AWS_CONFIG_FILE="$A/no-config" AWS_SHARED_CREDENTIALS_FILE="$A/no-credentials" \
      AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL_S3="$PROXY" "$@" 2>&1 | tee -a "$A/out.log"
}
stats() { curl -s "$MOCK/_stats" | $PY -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
mock_set() { curl -s -X POST "$MOCK/_set?$1" >/dev/null; }
WEB=(AWS_WEB_IDENTITY_TOKEN_FILE="$A/web-token" AWS_ROLE_ARN="$ROLE" AWS_ENDPOINT_URL_STS="$MOCK")
ECS=(AWS_CONTAINER_CREDENTIALS_FULL_URI="$MOCK/ecs/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN="$ECS_TOKEN")
IMDS=(AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="$MOCK")
mkdir -p "$A/tree"; head -c 50000 /dev/urandom > "$A/tree/blob"; echo aws > "$A/tree/name"
tree_n=0
new_tree() { tree_n=$((tree_n + 1)); echo "$tree_n $RANDOM" > "$A/tree/n"; }

# ---- web identity (EKS IRSA) ----------------------------------------------------
n0=$(stats sts)
out=$(aws "${WEB[@]}" "$TOOL" creds 3)
check "web identity: credentials from STS AssumeRoleWithWebIdentity (XML)" \
  eval '[[ $(grep -c "^source=web identity key_id=ASIASTS" <<<"$out") == 3 ]]'
is "web identity: fetched once for three uses (cached until near expiry)" "$(( $(stats sts) - n0 ))" 1
new_tree; out=$(aws "${WEB[@]}" "$TOOL" push "$A/tree" "$W")
is "web identity: a push signed with the STS key, secret and session token passes SigV4 checks" \
  "$(field uploaded "$out")" 1
out=$(aws "${WEB[@]}" AWS_ROLE_ARN=arn:aws:iam::123456789012:role/other "$TOOL" creds 1)
check "web identity: STS refusal names the source, the code and STS's message" \
  has "$out" "AWS credentials: web identity: STS AssumeRoleWithWebIdentity returned HTTP 403 (AccessDenied): Not authorized to perform sts:AssumeRoleWithWebIdentity"
out=$(aws "${WEB[@]}" AWS_WEB_IDENTITY_TOKEN_FILE="$A/missing-token" "$TOOL" creds 1)
check "web identity: a missing token file is named" has "$out" "web identity: token file: "

# ---- refresh before expiry ----------------------------------------------------------
mock_set lifetime=200   # inside the 5-minute refresh window: every use refreshes
n0=$(stats sts)
out=$(aws "${WEB[@]}" "$TOOL" creds 3)
is "refresh: credentials 200 s from expiry are refreshed before use (3 uses, 3 fetches)" \
  "$(( $(stats sts) - n0 ))/$(grep -o 'key_id=[A-Z0-9]*' <<<"$out" | sort -u | wc -l)" "3/3"
# A refresh that fails: still-valid credentials go on being used; ones
# about to expire (under 30 s left) are not, and the error names STS.
sts_above() { (( $(stats sts) > $1 )); }
refresh_fails() {  # refresh_fails LIFETIME: 3 uses 1.5 s apart, STS failing after the first
  mock_set "lifetime=$1"; local n0; n0=$(stats sts)
  aws "${WEB[@]}" "$TOOL" creds 3 1500 > "$A/refresh.out" &
  local pid=$!
  wait_for "first fetch" 10 sts_above "$n0"
  mock_set fail=sts; wait $pid; mock_set fail=; cat "$A/refresh.out"
}
out=$(refresh_fails 200)
check "refresh failing, credentials still valid for minutes: used on (3 uses, one key)" \
  eval '[[ $(grep -c "^source=web identity key_id=" <<<"$out") == 3 && $(grep -o "key_id=[A-Z0-9]*" <<<"$out" | sort -u | wc -l) == 1 ]]'
out=$(refresh_fails 20)
check "refresh failing, credentials 20 s from expiry: the use fails, naming STS's refusal" \
  eval '[[ $(grep -c "^source=web identity" <<<"$out") == 1 ]] && has "$out" "AWS credentials: web identity: STS AssumeRoleWithWebIdentity returned HTTP 403 (AccessDenied)"'
mock_set lifetime=3600
n0=$(stats sts)
out=$(aws "${WEB[@]}" "$TOOL" creds-threads 8 200)
check "refresh: 8 threads x 200 uses share one fetch ($out, $(( $(stats sts) - n0 )) fetch)" \
  eval '[[ $out == "gets=1600 failures=0" && $(( $(stats sts) - n0 )) == 1 ]]'

# ---- container (ECS / EKS Pod Identity) ------------------------------------------------
out=$(aws "${ECS[@]}" "$TOOL" creds 2)
check "container: JSON credentials with the Authorization token" \
  eval '[[ $(grep -c "^source=container key_id=ASIAECS" <<<"$out") == 2 ]]'
out=$(aws AWS_CONTAINER_CREDENTIALS_FULL_URI="$MOCK/ecs/creds" \
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$A/ecs-token" "$TOOL" creds 1)
check "container: the token read from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE" has "$out" "key_id=ASIAECS"
new_tree; out=$(aws "${ECS[@]}" "$TOOL" push "$A/tree" "$W")
is "container: a push with its credentials passes SigV4 checks" "$(field uploaded "$out")" 1
out=$(aws "${ECS[@]}" AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong "$TOOL" creds 1)
check "container: a refusal names the source and the status" \
  has "$out" "AWS credentials: container: GET $MOCK/ecs/creds returned HTTP 403"

# ---- IMDSv2 -------------------------------------------------------------------------------
is "IMDS stand-in refuses a GET without a token (IMDSv2 only)" \
  "$(curl -s -o /dev/null -w '%{http_code}' "$MOCK/latest/meta-data/iam/security-credentials/")" 401
out=$(aws "${IMDS[@]}" "$TOOL" creds 2)
check "IMDS: token PUT, role, credentials JSON" \
  eval '[[ $(grep -c "^source=IMDS key_id=ASIAIMDS" <<<"$out") == 2 ]]'
new_tree; out=$(aws "${IMDS[@]}" "$TOOL" push "$A/tree" "$W")
is "IMDS: a push with instance credentials passes SigV4 checks" "$(field uploaded "$out")" 1
closed=$(free_port)
out=$(aws AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$closed" "$TOOL" creds 1)
check "nothing found: the message lists every source tried and IMDS's failure" \
  has "$out" "no AWS credentials found: tried env, shared files, web identity, container, IMDS: PUT http://127.0.0.1:$closed/latest/api/token: "
out=$(aws "$TOOL" creds 1)
check "nothing configured, IMDS disabled: refused at configuration, naming every source" \
  has "$out" "no AWS credentials found: tried env (AWS_ACCESS_KEY_ID not set), shared files (profile default"

# ---- shared files and precedence ------------------------------------------------------------
cat > "$A/config" <<CFG
[default]
region = us-east-1
[profile dev]
region = us-east-1
s3 =
    addressing_style = path
CFG
printf '[dev]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' > "$A/credentials"
printf '[dev]\naws_access_key_id = S3RVER\naws_secret_access_key = not-the-secret\n' > "$A/credentials-bad"
FILES=(AWS_CONFIG_FILE="$A/config" AWS_SHARED_CREDENTIALS_FILE="$A/credentials" AWS_PROFILE=dev)
out=$(aws "${FILES[@]}" "$TOOL" creds 1)
is "shared files: [profile dev] in config, [dev] in credentials" "$out" "source=shared files (profile dev) key_id=S3RVER"
new_tree; out=$(aws "${FILES[@]}" "$TOOL" push "$A/tree" "$W")
is "shared files: a push with the profile's keys passes SigV4 checks" "$(field uploaded "$out")" 1
out=$(aws "${FILES[@]}" AWS_SHARED_CREDENTIALS_FILE="$A/credentials-bad" "$TOOL" check)
is "shared files: a wrong secret there is SignatureDoesNotMatch" "$(sed -n 's/^why=//p' <<<"$out")" SignatureDoesNotMatch
out=$(aws "${FILES[@]}" AWS_PROFILE=nope "$TOOL" creds 1)
check "shared files: an AWS_PROFILE neither file has is an error" has "$out" "AWS_PROFILE nope: no such profile"
out=$(aws "${IMDS[@]}" "${ECS[@]}" "${WEB[@]}" "${FILES[@]}" AWS_ACCESS_KEY_ID=ENVKEY AWS_SECRET_ACCESS_KEY=x "$TOOL" creds 1)
is "precedence: env first" "$(cut -d' ' -f1 <<<"$out")" "source=env"
out=$(aws "${IMDS[@]}" "${ECS[@]}" "${WEB[@]}" "${FILES[@]}" "$TOOL" creds 1)
is "precedence: then the shared files" "$(cut -d' ' -f1-4 <<<"$out")" "source=shared files (profile dev)"
out=$(aws "${IMDS[@]}" "${ECS[@]}" "${WEB[@]}" "$TOOL" creds 1)
check "precedence: then web identity" has "$out" "source=web identity key_id=ASIASTS"
out=$(aws "${IMDS[@]}" "${ECS[@]}" "$TOOL" creds 1)
check "precedence: then container, IMDS last" has "$out" "source=container key_id=ASIAECS"

# ---- the bucket check and SigV4 verification (through the proxy) -------------------------
S3K=(AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER)
is "check: the bucket answers" "$(aws "${S3K[@]}" "$TOOL" check)" ok
out=$(aws AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=wrong-secret "$TOOL" check)
is "check: a wrong secret is SignatureDoesNotMatch" "$(sed -n 's/^why=//p' <<<"$out")" SignatureDoesNotMatch
check "check: the message says where credentials came from" has "$out" "HTTP 403 (SignatureDoesNotMatch) (credentials from env)"
out=$(aws AWS_ACCESS_KEY_ID=NOSUCHKEY AWS_SECRET_ACCESS_KEY=x "$TOOL" check)
is "check: an unknown key id is InvalidAccessKeyId" "$(sed -n 's/^why=//p' <<<"$out")" InvalidAccessKeyId
out=$(aws AWS_ACCESS_KEY_ID=DENIEDKEY AWS_SECRET_ACCESS_KEY=denied-secret "$TOOL" check)
is "check: a key without the permission is AccessDenied" "$(sed -n 's/^why=//p' <<<"$out")" AccessDenied
out=$(aws "${S3K[@]}" BOXCAR_S3_BUCKET=no-such-bucket-here "$TOOL" check)
is "check: a missing bucket is NoSuchBucket" "$(sed -n 's/^why=//p' <<<"$out")" NoSuchBucket
out=$(aws "${S3K[@]}" AWS_ENDPOINT_URL_S3="http://127.0.0.1:$closed" "$TOOL" check)
check "check: an endpoint that does not answer is 'unreachable: <curl's reason>'" \
  eval '[[ $(sed -n "s/^why=//p" <<<"$out") == "unreachable: "* ]]'

new_tree
out=$(aws AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=wrong-secret BOXCAR_TEST_RETRIES=0 "$TOOL" push "$A/tree" "$W")
# A HEAD's refusal has no body (on S3 too): the status is all a push can say.
check "SigV4: a push with a wrong secret is refused (HEAD: HTTP 403)" \
  eval 'has "$out" "ERROR UPLOAD_FAILED: HEAD" && has "$out" ": HTTP 403"'
out=$(aws "${S3K[@]}" "$TOOL" push "$A/tree" "$W"); key=$(field key "$out"); sha=$(field sha256 "$out")
is "SigV4: the same push with the right secret is accepted" "$(field uploaded "$out")" 1
out=$(aws "${S3K[@]}" "$TOOL" push "$A/tree" "$W")
is "SigV4: dedup through the proxy (HEAD first, nothing sent)" "$(field uploaded "$out")" 0
url=$(aws "${S3K[@]}" "$TOOL" presign GET "$key" 300)
out=$(aws "${S3K[@]}" "$TOOL" fetch "$url" "$A/pulled" "$sha")
check "SigV4: a presigned GET passes the proxy's query-signature check" test "$(field sha256 "$out")" = "$sha"
bad_url=$(aws AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=wrong-secret "$TOOL" presign GET "$key" 300)
out=$(aws "${S3K[@]}" BOXCAR_TEST_RETRIES=0 "$TOOL" fetch "$bad_url" "$A/pulled-bad" "$sha")
check "SigV4: a URL presigned with a wrong secret is refused (SignatureDoesNotMatch)" \
  has "$out" "HTTP 403 (SignatureDoesNotMatch)"
expired=$(aws "${S3K[@]}" "$TOOL" presign GET "$key" 1 $(( $(date +%s) - 120 )))
out=$(aws "${S3K[@]}" BOXCAR_TEST_RETRIES=0 "$TOOL" fetch "$expired" "$A/pulled-expired" "$sha")
check "SigV4: an expired presigned URL is refused (AccessDenied), not retried" \
  eval 'has "$out" "HTTP 403 (AccessDenied)" && ! has "$out" "gave up"'
last=${url: -1}; [[ $last == 0 ]] && swap=1 || swap=0
out=$(aws "${S3K[@]}" BOXCAR_TEST_RETRIES=0 "$TOOL" fetch "${url%?}$swap" "$A/pulled-tampered" "$sha")
check "SigV4: a tampered presigned signature is refused" has "$out" "HTTP 403 (SignatureDoesNotMatch)"

# botocore (an independent signer) against the proxy: proves its checks
# accept what AWS's own SDK signs, and If-None-Match: * on an existing key.
bo=$(AWS_EP="$PROXY" BUCKET="$BOXCAR_S3_BUCKET" KEY="$key" NEWKEY="$BOXCAR_S3_PREFIX/botocore-$RANDOM" $PY - <<'PYEOF'
import os, urllib.request, urllib.error
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
def put(key, secret, body=b"x"):
    url = "%s/%s/%s" % (os.environ["AWS_EP"], os.environ["BUCKET"], key)
    req = AWSRequest(method="PUT", url=url, data=body, headers={"If-None-Match": "*"})
    S3SigV4Auth(Credentials("S3RVER", secret), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(url, data=body, method="PUT", headers=dict(req.headers.items()))
    try:
        return str(urllib.request.urlopen(r).status)
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        return "%d:%s" % (e.code, body.split("<Code>")[1].split("</Code>")[0] if "<Code>" in body else "")
print(put(os.environ["NEWKEY"], "S3RVER"), put(os.environ["KEY"], "S3RVER"), put(os.environ["NEWKEY"] + "b", "wrong"))
PYEOF
)
is "botocore through the proxy: new key 200, existing key 412 (If-None-Match), wrong secret 403" \
  "$bo" "200 412:PreconditionFailed 403:SignatureDoesNotMatch"

# ---- no credential in any output ------------------------------------------------------
leaks=0
while read -r akid secret token; do
  for s in "$secret" "$token"; do
    [[ -n $s ]] && grep -qF -- "$s" "$A/out.log" && { leaks=$((leaks + 1)); diag "leaked a secret of $akid"; }
  done
done < "$A/keys"
for s in "$(cat "$A/web-token")" "$ECS_TOKEN" wrong-secret not-the-secret denied-secret; do
  grep -qF -- "$s" "$A/out.log" && { leaks=$((leaks + 1)); diag "leaked '${s:0:6}…'"; }
done
check "no secret key, session token, web identity or container token in any output ($(wc -l < "$A/keys") issued)" \
  test "$leaks" -eq 0 -a "$(wc -l < "$A/keys")" -ge 8
