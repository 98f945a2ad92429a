# Sourced by tests/storage/run.sh when its S3 is RGW (scripts/rgw.sh's
# environment in effect, $TOOL built, $W the scratch dir): a server that
# checks signatures as AWS does refuses a wrong secret and an unknown key
# with AWS's codes, stores nothing for them, honours If-None-Match: * on
# PUT, and its STS issues temporary credentials a push can use, to a
# request of its own and to boxcar's role_arn + source_profile.

G="$W/rgw"; mkdir -p "$G/tree"
head -c 40000 /dev/urandom > "$G/tree/blob"; echo rgw > "$G/tree/name"
g_sha=$(field sha256 "$(tool pack "$G/tree" "$G/tree.tgz")")
g_key="$BOXCAR_S3_PREFIX/sha256/${g_sha:0:2}/$g_sha.tar.gz"
# stored KEY: how many objects named KEY the bucket lists (0 or 1).
stored() { s3curl "$AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET?prefix=${1//\//%2F}" | grep -o "<Key>$1</Key>" | wc -l; }

is "RGW check: the bucket answers with the right keys" "$(tool check)" ok
out=$(AWS_SECRET_ACCESS_KEY=wrong-secret tool check)
is "RGW check: a wrong secret is SignatureDoesNotMatch" "$(sed -n 's/^why=//p' <<<"$out")" SignatureDoesNotMatch
check "RGW check: the message names the bucket, the code and where the credentials came from" \
  has "$out" "bucket $BOXCAR_S3_BUCKET at $AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET/: HTTP 403 (SignatureDoesNotMatch) (credentials from env)"
out=$(AWS_ACCESS_KEY_ID=NOSUCHKEY0000000000 tool check)
is "RGW check: an unknown access key is InvalidAccessKeyId" "$(sed -n 's/^why=//p' <<<"$out")" InvalidAccessKeyId
check "RGW check: the message names the code" has "$out" "HTTP 403 (InvalidAccessKeyId) (credentials from env)"

out=$(AWS_SECRET_ACCESS_KEY=wrong-secret BOXCAR_TEST_RETRIES=0 tool push "$G/tree" "$W")
check "RGW: a push with a wrong secret is UPLOAD_FAILED at its HEAD, HTTP 403 ($out)" \
  eval 'has "$out" "ERROR UPLOAD_FAILED: HEAD $AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET/$g_key: HTTP 403"'
check "RGW: the refusal does not show the secret" eval '! has "$out" wrong-secret'
out=$(AWS_ACCESS_KEY_ID=NOSUCHKEY0000000000 BOXCAR_TEST_RETRIES=0 tool push "$G/tree" "$W")
check "RGW: a push with an unknown access key is UPLOAD_FAILED, HTTP 403 ($out)" \
  eval 'has "$out" "ERROR UPLOAD_FAILED: HEAD" && has "$out" ": HTTP 403"'
is "RGW: neither refused push stored anything" "$(stored "$g_key")" 0
# A PUT on its own (no HEAD first), signed with the wrong secret: refused
# with RGW's own words, nothing stored.
code=$(curl -s -o "$G/put.xml" -w '%{http_code}' --aws-sigv4 "aws:amz:$AWS_REGION:s3" \
  -u "$AWS_ACCESS_KEY_ID:wrong-secret" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
  -T "$G/tree.tgz" "$AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET/$g_key")
is "RGW: a PUT signed with a wrong secret is 403 SignatureDoesNotMatch, nothing stored" \
  "$code $(grep -o '<Code>[^<]*' "$G/put.xml" | cut -c7-) $(stored "$g_key")" "403 SignatureDoesNotMatch 0"
out=$(tool push "$G/tree" "$W")
is "RGW: the same push with the right keys stores it" "$(field uploaded "$out") $(stored "$g_key")" "1 1"

# If-None-Match: * is what keeps a content-addressed object from being
# rewritten; RGW honours it (s3rver ignores it).
inm() {  # inm KEY: status of a PUT with If-None-Match: *
  s3curl -o /dev/null -w '%{http_code}' -H 'If-None-Match: *' -T "$G/tree.tgz" \
    "$AWS_ENDPOINT_URL_S3/$BOXCAR_S3_BUCKET/$1"
}
is "RGW If-None-Match: *: a new key is stored (200), an existing one refused (412)" \
  "$(inm "$BOXCAR_S3_PREFIX/inm-$RANDOM") $(inm "$g_key")" "200 412"

# ---- STS AssumeRole on the gateway that has it (scripts/rgw.sh) ---------------
# The source user's keys sign AssumeRole (botocore, an independent signer);
# the temporary key, secret and session token then sign a push by boxcar.
sts=$(ROLE="$BOXCAR_RGW_ROLE_ARN" EP="$BOXCAR_RGW_STS_ENDPOINT" $PY - <<'PYEOF'
import os, re, urllib.parse, urllib.request, urllib.error
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
body = urllib.parse.urlencode({"Action": "AssumeRole", "Version": "2011-06-15", "RoleArn": os.environ["ROLE"],
                               "RoleSessionName": "storage-suite", "DurationSeconds": "900"})
req = AWSRequest(method="POST", url=os.environ["EP"] + "/", data=body,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
SigV4Auth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]), "sts",
          os.environ["AWS_REGION"]).add_auth(req)
try:
    xml = urllib.request.urlopen(urllib.request.Request(req.url, data=body.encode(), method="POST",
                                                        headers=dict(req.headers.items()))).read().decode()
except urllib.error.HTTPError as e:
    print("HTTP", e.code, e.read().decode()[:300]); raise SystemExit
print(" ".join(re.search("<%s>([^<]*)</%s>" % (t, t), xml).group(1)
               for t in ("AccessKeyId", "SecretAccessKey", "SessionToken", "Arn")))
PYEOF
)
read -r s_key s_secret s_token s_arn <<<"$sts"
is "RGW STS: AssumeRole returns temporary credentials for the role" \
  "$s_arn" "arn:aws:sts:::assumed-role/${BOXCAR_RGW_ROLE_ARN##*/}/storage-suite"
echo "sts $RANDOM" > "$G/tree/sts"
out=$(AWS_ACCESS_KEY_ID=$s_key AWS_SECRET_ACCESS_KEY=$s_secret AWS_SESSION_TOKEN=$s_token \
      AWS_ENDPOINT_URL_S3=$BOXCAR_RGW_STS_ENDPOINT tool push "$G/tree" "$W")
is "RGW STS: a push signed with the temporary key, secret and session token is stored" "$(field uploaded "$out")" 1
check "RGW STS: no temporary secret or token in the output" eval '! has "$out" "$s_secret" && ! has "$out" "$s_token"'
echo "sts $RANDOM" > "$G/tree/sts"
out=$(AWS_ACCESS_KEY_ID=$s_key AWS_SECRET_ACCESS_KEY=$s_secret BOXCAR_TEST_RETRIES=0 \
      AWS_ENDPOINT_URL_S3=$BOXCAR_RGW_STS_ENDPOINT tool push "$G/tree" "$W")
check "RGW STS: without the session token the temporary key is refused (HTTP 403)" \
  eval 'has "$out" "ERROR UPLOAD_FAILED" && has "$out" "HTTP 403"'

# ---- boxcar's own role_arn + source_profile against RGW's STS ------------------
# The profile chain (storage/creds_assume.c) signs AssumeRole with the
# source profile's keys, parses RGW's real answer, and pushes with the
# temporary credentials; a role the user may not assume is refused with
# STS's code.  No key in the environment: the profile is the only source.
cat > "$G/role-config" <<CFG
[profile base]
aws_access_key_id = $AWS_ACCESS_KEY_ID
aws_secret_access_key = $AWS_SECRET_ACCESS_KEY

[profile role]
role_arn = $BOXCAR_RGW_ROLE_ARN
source_profile = base
role_session_name = boxcar-storage-suite
duration_seconds = 900

[profile nosuch-role]
role_arn = arn:aws:iam:::role/boxcar-no-such-role
source_profile = base
CFG
as_role() {
  env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_ENDPOINT_URL \
      AWS_CONFIG_FILE="$G/role-config" AWS_SHARED_CREDENTIALS_FILE="$G/no-credentials" \
      AWS_EC2_METADATA_DISABLED=true AWS_PROFILE="$1" AWS_ENDPOINT_URL_STS="$BOXCAR_RGW_STS_ENDPOINT" \
      AWS_ENDPOINT_URL_S3="$BOXCAR_RGW_STS_ENDPOINT" BOXCAR_TEST_RETRIES=0 "$TOOL" "${@:2}" 2>&1
}
out=$(as_role role creds 2)
check "role_arn + source_profile: boxcar's AssumeRole against RGW's STS gives the role's credentials, fetched once for two uses ($out)" \
  test "$(grep -c '^source=assume role (profile role, source_profile base)' <<<"$out")" -eq 2 -a \
       "$(grep -o 'key_id=[A-Za-z0-9]*' <<<"$out" | sort -u | wc -l)" -eq 1
check "role_arn + source_profile: the temporary key is not the source's" \
  eval '! has "$out" "key_id=$AWS_ACCESS_KEY_ID"'
echo "role $RANDOM" > "$G/tree/sts"
out=$(as_role role push "$G/tree" "$W")
is "role_arn + source_profile: a push with the assumed role's credentials is stored" "$(field uploaded "$out")" 1
check "role_arn + source_profile: no source secret in the output" eval '! has "$out" "$AWS_SECRET_ACCESS_KEY"'
out=$(as_role nosuch-role creds 1)
check "role_arn + source_profile: a role RGW does not know is refused, STS's answer named ($out)" \
  has "$out" "STS AssumeRole returned HTTP"
