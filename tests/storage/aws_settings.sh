# Sourced by tests/storage/run.sh after aws.sh (its $A, $PROXY, aws(),
# new_tree): the AWS settings beyond the credential chain's basics, each
# against real processes and servers.
#   AWS_CA_BUNDLE / ca_bundle   S3 (and STS) behind a TLS endpoint whose
#                               certificate a CA of the test's own signed
#                               (tests/storage/tls_proxy.py, Python's ssl)
#   credential_process          a real script as the process
#   role_arn + source_profile   the profile chain's errors, and AssumeRole
#                               reaching its endpoint (TLS included); a
#                               real STS answer needs Ceph RGW (README)

# ---- AWS_CA_BUNDLE ------------------------------------------------------------------
T="$A/tls"; mkdir -p "$T"
mkca() {  # mkca NAME: a self-signed CA
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=boxcar test $1" \
    -keyout "$T/$1.key" -out "$T/$1.pem" 2>/dev/null
}
mkca ca && mkca other-ca
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$T/server.key" -out "$T/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$T/san.ext"
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
  -extfile "$T/san.ext" -out "$T/server.pem" 2>/dev/null
TLS_PORT=$(free_port); TLS=https://127.0.0.1:$TLS_PORT
bg $PY tests/storage/tls_proxy.py --port "$TLS_PORT" --cert "$T/server.pem" --key "$T/server.key" \
  --upstream "127.0.0.1:$PROXY_PORT"
tls_up() { openssl s_client -connect "127.0.0.1:$TLS_PORT" -CAfile "$T/ca.pem" </dev/null >/dev/null 2>&1; }
if [[ -s $T/server.pem ]] && wait_for "tls_proxy.py" 10 tls_up; then
  ok "TLS endpoint $TLS (certificate from the test's CA) in front of the signature-checking S3"
  KEYS=(AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL_S3="$TLS")
  out=$(aws "${KEYS[@]}" "$TOOL" check)
  check "CA bundle: without AWS_CA_BUNDLE the bucket check refuses, naming TLS verification" \
    eval 'has "$out" "SSL certificate problem" && ! has "$out" "ok"'
  out=$(aws "${KEYS[@]}" AWS_CA_BUNDLE="$T/ca.pem" "$TOOL" check)
  is "CA bundle: with AWS_CA_BUNDLE=the CA the check passes" "$out" ok
  new_tree; out=$(aws "${KEYS[@]}" AWS_CA_BUNDLE="$T/ca.pem" "$TOOL" push "$A/tree" "$W")
  is "CA bundle: a push over TLS (upload, HEAD) with the bundle" "$(field uploaded "$out")" 1
  out=$(aws "${KEYS[@]}" AWS_CA_BUNDLE="$T/other-ca.pem" "$TOOL" check)
  check "CA bundle: another CA's bundle refuses, naming TLS verification" \
    eval 'has "$out" "SSL certificate problem" && ! has "$out" "ok"'
  new_tree; out=$(aws "${KEYS[@]}" AWS_CA_BUNDLE="$T/other-ca.pem" "$TOOL" push "$A/tree" "$W")
  check "CA bundle: ...and so does a push" eval '[[ -z $(field uploaded "$out") ]] && has "$out" "SSL certificate problem"'
  printf '[default]\nca_bundle = %s\n' "$T/ca.pem" > "$A/ca-config"
  out=$(aws "${KEYS[@]}" AWS_CONFIG_FILE="$A/ca-config" "$TOOL" check)
  is "CA bundle: the profile's ca_bundle is used too" "$out" ok
  out=$(aws "${KEYS[@]}" AWS_CONFIG_FILE="$A/ca-config" AWS_CA_BUNDLE="$T/other-ca.pem" "$TOOL" check)
  check "CA bundle: AWS_CA_BUNDLE wins over the profile's" has "$out" "SSL certificate problem"
  out=$(aws "${KEYS[@]}" AWS_CA_BUNDLE="$T/missing.pem" "$TOOL" check)
  check "CA bundle: a missing file is an error at start naming it" \
    has "$out" "ERROR CONFIG: AWS_CA_BUNDLE $T/missing.pem: No such file or directory"
  out=$(aws "${KEYS[@]}" AWS_CA_BUNDLE="$T" "$TOOL" check)
  check "CA bundle: a directory is refused, named" has "$out" "AWS_CA_BUNDLE $T: Is a directory"
  printf '[default]\nca_bundle = %s\n' "$T/nope.pem" > "$A/ca-config-bad"
  out=$(aws "${KEYS[@]}" AWS_CONFIG_FILE="$A/ca-config-bad" "$TOOL" check)
  check "CA bundle: the profile's missing ca_bundle is named as the profile's" \
    has "$out" "the profile's ca_bundle $T/nope.pem: No such file or directory"
else
  not_ok "tls_proxy.py starts with a certificate from the test's CA (openssl)"
fi

# ---- credential_process ----------------------------------------------------------
# A long directory name: the process's path is named in full wherever it
# appears (a CI clone's path once went past a 64-character cut).
CP="$A/cp dir/a directory name long enough to pass sixty-four characters on its own"; mkdir -p "$CP"
# The process: new keys each run (added to the proxy's keys), its argv and
# run count recorded, its behaviour from $CP/mode and $CP/lifetime.
cat > "$CP/cred proc.sh" <<SCRIPT
#!/bin/bash
printf '%s\n' "\$@" > "$CP/argv"
n=\$(( \$(cat "$CP/count" 2>/dev/null || echo 0) + 1 )); echo \$n > "$CP/count"
mode=\$(cat "$CP/mode" 2>/dev/null); life=\$(cat "$CP/lifetime" 2>/dev/null || echo 3600)
ak=ASIAPROC\$n\$RANDOM; sk=proc-secret-\$RANDOM\$RANDOM\$RANDOM; tok=proc-token-\$RANDOM\$RANDOM
echo "\$ak \$sk \$tok" >> "$A/keys"; echo "\$sk" >> "$CP/secrets"
exp=\$(date -u -d "+\$life seconds" +%Y-%m-%dT%H:%M:%SZ)
case \$mode in
  fail) echo "starting up" >&2; echo "vault is sealed" >&2; exit 3 ;;
  badjson) echo "AccessKeyId=\$ak" ;;
  v2) echo "{\"Version\": 2, \"AccessKeyId\": \"\$ak\", \"SecretAccessKey\": \"\$sk\"}" ;;
  nosecret) echo "{\"Version\": 1, \"AccessKeyId\": \"\$ak\"}" ;;
  noexp) echo "{\"Version\": 1, \"AccessKeyId\": \"\$ak\", \"SecretAccessKey\": \"\$sk\", \"SessionToken\": \"\$tok\"}" ;;
  *) echo "{\"Version\": 1, \"AccessKeyId\": \"\$ak\", \"SecretAccessKey\": \"\$sk\", \"SessionToken\": \"\$tok\", \"Expiration\": \"\$exp\"}" ;;
esac
SCRIPT
chmod +x "$CP/cred proc.sh"
printf '[profile proc]\ncredential_process = "%s" '"'"'arg one'"'"' "two \\"quoted\\"" three\n' "$CP/cred proc.sh" > "$A/cp-config"
PROC=(AWS_PROFILE=proc AWS_CONFIG_FILE="$A/cp-config")
cp_mode() { echo "$1" > "$CP/mode"; }
cp_runs() { cat "$CP/count" 2>/dev/null || echo 0; }
cp_mode ok; echo 3600 > "$CP/lifetime"; n0=$(cp_runs)
out=$(aws "${PROC[@]}" "$TOOL" creds 3)
check "credential_process: credentials from the script (3 uses)" \
  eval '[[ $(grep -c "^source=credential_process (profile proc: $CP/cred proc.sh) key_id=ASIAPROC" <<<"$out") == 3 ]]'
is "credential_process: run once for three uses (cached until near Expiration)" "$(( $(cp_runs) - n0 ))" 1
is "credential_process: argv split without a shell, as the AWS CLI (shlex) does" \
  "$(cat "$CP/argv")" "$(printf 'arg one\ntwo "quoted"\nthree')"
new_tree; out=$(aws "${PROC[@]}" "$TOOL" push "$A/tree" "$W")
is "credential_process: a push signed with its key, secret and session token passes SigV4 checks" \
  "$(field uploaded "$out")" 1
echo 200 > "$CP/lifetime"; n0=$(cp_runs)
out=$(aws "${PROC[@]}" "$TOOL" creds 3)
is "credential_process: 200 s from Expiration: run again before each use (3 uses, 3 runs, 3 keys)" \
  "$(( $(cp_runs) - n0 ))/$(grep -o 'key_id=[A-Z0-9]*' <<<"$out" | sort -u | wc -l)" "3/3"
cp_mode noexp; n0=$(cp_runs)
out=$(aws "${PROC[@]}" "$TOOL" creds 3)
is "credential_process: no Expiration: run once (never expire)" "$(( $(cp_runs) - n0 ))" 1
cp_mode fail; out=$(aws "${PROC[@]}" "$TOOL" creds 1)
check "credential_process: a non-zero exit is named with its status and its stderr's last line" \
  has "$out" "AWS credentials: credential_process (profile proc: $CP/cred proc.sh): credential_process $CP/cred proc.sh: exit status 3: vault is sealed"
cp_mode badjson; out=$(aws "${PROC[@]}" "$TOOL" creds 1)
check "credential_process: output that is not JSON is named" has "$out" "credential_process: its output is not a JSON object"
cp_mode v2; out=$(aws "${PROC[@]}" "$TOOL" creds 1)
check "credential_process: Version 2 is refused" has "$out" "credential_process: Version 2 is not supported (only 1)"
cp_mode nosecret; out=$(aws "${PROC[@]}" "$TOOL" creds 1)
check "credential_process: a missing SecretAccessKey is named" has "$out" "credential_process: its output lacks SecretAccessKey"
cp_mode ok
printf '[profile proc]\ncredential_process = %s/no-such-helper --x\n' "$A" > "$A/cp-missing"
out=$(aws AWS_PROFILE=proc AWS_CONFIG_FILE="$A/cp-missing" "$TOOL" creds 1)
check "credential_process: a command that does not exist is named" \
  has "$out" "credential_process: $A/no-such-helper: No such file or directory"
printf '[profile proc]\ncredential_process = "%s/unclosed --x\n' "$A" > "$A/cp-unclosed"
out=$(aws AWS_PROFILE=proc AWS_CONFIG_FILE="$A/cp-unclosed" "$TOOL" creds 1)
check "credential_process: an unclosed quote is a configuration error at start" \
  has "$out" "ERROR CONFIG: AWS credentials: profile proc ($A/cp-unclosed): credential_process: a \" is not closed"
leaked=0
while read -r sk; do grep -qF -- "$sk" "$A/out.log" && leaked=$((leaked + 1)); done < "$CP/secrets"
is "credential_process: none of the $(wc -l < "$CP/secrets") secrets it printed appears in any output" "$leaked" 0

# ---- role_arn + source_profile -------------------------------------------------------
RA="$A/role-config"
cat > "$RA" <<CFG
[profile base]
aws_access_key_id = AKIDBASE
aws_secret_access_key = base-secret-$RANDOM

[profile role]
role_arn = arn:aws:iam::123456789012:role/boxcar
source_profile = base
role_session_name = boxcar-test
external_id = ext-123

[profile role-proc]
role_arn = arn:aws:iam::123456789012:role/boxcar
source_profile = proc

[profile proc]
credential_process = "$CP/cred proc.sh"

[profile orphan]
role_arn = arn:aws:iam::123456789012:role/boxcar
source_profile = nosuch

[profile loop-a]
role_arn = arn:aws:iam::123456789012:role/a
source_profile = loop-b

[profile loop-b]
role_arn = arn:aws:iam::123456789012:role/b
source_profile = loop-a

[profile self-nokeys]
role_arn = arn:aws:iam::123456789012:role/s
source_profile = self-nokeys

[profile no-source]
role_arn = arn:aws:iam::123456789012:role/n

[profile empty-source]
role_arn = arn:aws:iam::123456789012:role/e
source_profile = empty

[profile empty]
region = us-east-1

[profile long]
role_arn = arn:aws:iam::123456789012:role/l
source_profile = base
duration_seconds = 60
CFG
role() { aws AWS_CONFIG_FILE="$RA" AWS_PROFILE="$1" "${@:2}"; }
DEAD=$(free_port)
out=$(role role AWS_ENDPOINT_URL_STS=http://127.0.0.1:$DEAD "$TOOL" creds 1)
check "assume role: an unreachable STS endpoint is named" \
  has "$out" "AWS credentials: assume role (profile role, source_profile base): STS AssumeRole: POST http://127.0.0.1:$DEAD/: "
out=$(role orphan "$TOOL" creds 1)
check "assume role: a source_profile that does not exist is named, with both files" \
  has "$out" "ERROR CONFIG: AWS credentials: profile orphan: source_profile nosuch: no such profile in $A/no-credentials or $RA"
out=$(role loop-a "$TOOL" creds 1)
check "assume role: a source_profile cycle is named with its path" \
  has "$out" "source_profile chain loop-a -> loop-b -> loop-a is a cycle"
out=$(role self-nokeys "$TOOL" creds 1)
check "assume role: a profile its own source_profile without keys is refused" \
  has "$out" "profile self-nokeys is its own source_profile but has no aws_access_key_id"
out=$(role no-source "$TOOL" creds 1)
check "assume role: role_arn without source_profile is named (not silently skipped)" \
  has "$out" "profile no-source ($RA) has role_arn but neither source_profile nor web_identity_token_file"
out=$(role empty-source "$TOOL" creds 1)
check "assume role: a source profile without credentials is named" \
  has "$out" "source_profile empty has no credentials"
out=$(role long "$TOOL" creds 1)
check "assume role: duration_seconds out of STS's range is refused" has "$out" "profile long: duration_seconds must be 900..43200"
n0=$(cp_runs)
out=$(role role-proc AWS_ENDPOINT_URL_STS=http://127.0.0.1:$DEAD "$TOOL" creds 1)
check "assume role: a credential_process source profile runs before STS is asked" \
  eval '[[ $(( $(cp_runs) - n0 )) == 1 ]] && has "$out" "assume role (profile role-proc, source_profile proc): STS AssumeRole: POST http://127.0.0.1:$DEAD/"'
if [[ -n ${TLS_PORT:-} ]]; then
  # The TLS endpoint is S3's, not STS: what matters is that the request
  # got through TLS (or did not) with the bundle; the answer is S3's 4xx.
  out=$(role role AWS_ENDPOINT_URL_STS="$TLS" "$TOOL" creds 1)
  check "assume role: STS over TLS without the CA bundle: TLS verification named" \
    has "$out" "STS AssumeRole: POST $TLS/: SSL certificate problem"
  out=$(role role AWS_ENDPOINT_URL_STS="$TLS" AWS_CA_BUNDLE="$T/ca.pem" "$TOOL" creds 1)
  check "assume role: with AWS_CA_BUNDLE the signed POST reaches the endpoint (its HTTP answer named)" \
    eval 'has "$out" "STS AssumeRole returned HTTP 4" && ! has "$out" "SSL"'
fi
# The AssumeRole request's SigV4 (service "sts", the form body's hash, the
# source's session token), verified by sigv4_proxy.py's own signer, which
# takes the service from the credential scope; past it, s3rver answers
# the POST with an S3 error, which is what the message then carries.
cat > "$A/role-signed" <<CFG
[profile good]
aws_access_key_id = S3RVER
aws_secret_access_key = S3RVER
[profile bad]
aws_access_key_id = S3RVER
aws_secret_access_key = not-the-secret
[profile role-good]
role_arn = arn:aws:iam::123456789012:role/boxcar
source_profile = good
external_id = ext-1
duration_seconds = 900
[profile role-bad]
role_arn = arn:aws:iam::123456789012:role/boxcar
source_profile = bad
[profile proc]
credential_process = "$CP/cred proc.sh"
[profile role-proc]
role_arn = arn:aws:iam::123456789012:role/boxcar
source_profile = proc
CFG
signed() { aws AWS_CONFIG_FILE="$A/role-signed" AWS_PROFILE="$1" AWS_ENDPOINT_URL_STS="$PROXY" "$TOOL" creds 1; }
out=$(signed role-bad)
check "assume role: a source secret the server does not know: SignatureDoesNotMatch (the proxy checks STS requests)" \
  has "$out" "STS AssumeRole returned HTTP 403 (SignatureDoesNotMatch)"
out=$(signed role-good)
check "assume role: the SigV4-signed POST (service sts, body hash) passes the signature check" \
  eval 'has "$out" "STS AssumeRole returned HTTP" && ! has "$out" "SignatureDoesNotMatch" && ! has "$out" "InvalidAccessKeyId" && ! has "$out" "AccessDenied"'
cp_mode ok; echo 3600 > "$CP/lifetime"
out=$(signed role-proc)
check "assume role: signed with a credential_process source's key and session token, it passes too" \
  eval 'has "$out" "STS AssumeRole returned HTTP" && ! has "$out" "SignatureDoesNotMatch" && ! has "$out" "InvalidToken" && ! has "$out" "InvalidAccessKeyId"'
