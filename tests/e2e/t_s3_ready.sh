# S3 problems show at start: the worker checks its bucket (a signed
# ListObjects) when it starts and then periodically, logs s3.check_failed
# with S3's error code, and /readyz says "s3: <code>" until the bucket
# answers; it keeps running and recovers without a restart.  The wrong
# secret is seen through tests/storage/sigv4_proxy.py (s3rver accepts any),
# and a worker on web identity credentials (tests/storage/aws_mock.py as
# STS) runs a job that uploads through that proxy, with no secret in its log.
# S3 over TLS with a CA of the test's own (tests/storage/tls_proxy.py):
# refused without AWS_CA_BUNDLE or with another CA, a job's upload works
# with it, a missing bundle stops the worker at start; and a worker on
# credential_process runs a job.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="e2e-ready-$$"
fresh_db e2e_s3_ready
tmp=$(mktemp -d)
trap 'cleanup_bg; rm -rf "$tmp"' EXIT
S3=$AWS_ENDPOINT_URL_S3
logof() { echo "$BOXCAR_DEV/test-logs/$1.log"; }
readyz_is() { [[ $(curl -s "$1/readyz") == "$2" ]]; }
W=(--sandbox "$E2E_SANDBOX" --poll-interval 500ms)

# ---- a missing bucket, then created ----------------------------------------
bucket="ready-$$-$RANDOM"
p=$(free_port); M=http://127.0.0.1:$p
BOXCAR_S3_BUCKET=$bucket start_worker ready-a --metrics-addr "127.0.0.1:$p" "${W[@]}"
check "missing bucket: /readyz is 503 's3: NoSuchBucket'" wait_for "NoSuchBucket" 20 readyz_is "$M" "s3: NoSuchBucket"
is "missing bucket: status 503" "$(curl -s -o /dev/null -w '%{http_code}' "$M/readyz")" 503
check "missing bucket: s3.check_failed logged at start with the code" \
  grep -q 's3.check_failed.*why=NoSuchBucket' "$(logof ready-a)"
check "missing bucket: the worker keeps running (no crash loop)" kill -0 "$WORKER_PID"
curl -s -X PUT "$S3/$bucket" >/dev/null
check "bucket created: /readyz turns 200 without a restart" wait_for "ready" 40 readyz_is "$M" "ok"
check "bucket created: s3.ready logged" grep -q 's3.ready' "$(logof ready-a)"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# ---- a wrong secret, behind a signature-checking proxy ------------------------------
A="$tmp/aws"; mkdir -p "$A"; : > "$A/keys"
pp=$(free_port); PROXY=http://127.0.0.1:$pp
bg python3 "$BOXCAR_ROOT/tests/storage/sigv4_proxy.py" --port "$pp" --upstream "$S3" \
  --key S3RVER:S3RVER --keys "$A/keys"
wait_for "proxy" 15 curl -s -o /dev/null "$PROXY/"
wrong="wrong-secret-$RANDOM$RANDOM"
p=$(free_port); M=http://127.0.0.1:$p
AWS_ENDPOINT_URL_S3=$PROXY AWS_SECRET_ACCESS_KEY=$wrong start_worker ready-b --metrics-addr "127.0.0.1:$p" "${W[@]}"
check "wrong secret: /readyz is 503 's3: SignatureDoesNotMatch'" \
  wait_for "SignatureDoesNotMatch" 20 readyz_is "$M" "s3: SignatureDoesNotMatch"
check "wrong secret: logged with the code" grep -q 's3.check_failed.*why=SignatureDoesNotMatch' "$(logof ready-b)"
check "wrong secret: the secret is not in the log" bash -c "! grep -qF '$wrong' '$(logof ready-b)'"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# ---- an endpoint that does not answer --------------------------------------------
closed=$(free_port)
p=$(free_port); M=http://127.0.0.1:$p
AWS_ENDPOINT_URL_S3=http://127.0.0.1:$closed start_worker ready-c --metrics-addr "127.0.0.1:$p" "${W[@]}"
check "unreachable: /readyz says 's3: unreachable: <curl's reason>'" \
  wait_for "unreachable" 20 bash -c "[[ \$(curl -s '$M/readyz') == 's3: unreachable: '* ]]"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null

# upload_and_count_leaks LABEL STORAGE WORKER: a job's artifact uploaded
# through STORAGE with the worker's credentials; $leaks counts the issued
# secrets and tokens ($A/keys) found in WORKER's log.
upload_and_count_leaks() {
  local j akid secret token s
  j=$(echo "{\"script\": \"echo via-$2 > out.txt\", \"artifact\": {\"storage\": \"$2\"}}" | "$BOXCAR" enqueue --spec -)
  "$BOXCAR" status --wait "$j" >/dev/null
  is "$1: a job's artifact is uploaded with them (signatures verified)" "$(job_field "$j" status)" succeeded
  leaks=0
  while read -r akid secret token; do
    for s in "$secret" "$token"; do [[ -n $s ]] && grep -qF -- "$s" "$(logof "$3")" && leaks=$((leaks + 1)); done
  done < "$A/keys"
}

# ---- web identity credentials, a job uploading through the proxy ---------------------
mp=$(free_port); MOCK=http://127.0.0.1:$mp
printf 'eyJ.web-identity-%s.sig\n' "$RANDOM$RANDOM" > "$A/web-token"
bg python3 "$BOXCAR_ROOT/tests/storage/aws_mock.py" --port "$mp" --web-token-file "$A/web-token" \
  --role-arn arn:aws:iam::123456789012:role/boxcar --ecs-token unused --keys "$A/keys"
wait_for "mock" 15 curl -sf -o /dev/null "$MOCK/_stats"
p=$(free_port); M=http://127.0.0.1:$p
static_key=$AWS_ACCESS_KEY_ID static_secret=$AWS_SECRET_ACCESS_KEY
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY   # env credentials would come first
AWS_ENDPOINT_URL_S3="$PROXY" AWS_WEB_IDENTITY_TOKEN_FILE="$A/web-token" \
  AWS_ROLE_ARN=arn:aws:iam::123456789012:role/boxcar AWS_ENDPOINT_URL_STS="$MOCK" \
  AWS_CONFIG_FILE="$A/none" AWS_SHARED_CREDENTIALS_FILE="$A/none" \
  start_worker ready-d --metrics-addr "127.0.0.1:$p" "${W[@]}"
export AWS_ACCESS_KEY_ID=$static_key AWS_SECRET_ACCESS_KEY=$static_secret  # for the CLI
check "web identity: /readyz 200 (bucket checked with STS credentials)" wait_for "ready" 20 readyz_is "$M" "ok"
check "web identity: the worker names its credential source" \
  grep -q 's3.ready.*credentials="\{0,1\}web identity' "$(logof ready-d)"
upload_and_count_leaks "web identity" ready-sts ready-d
grep -qF -- "$(cat "$A/web-token")" "$(logof ready-d)" && leaks=$((leaks + 1))
check "web identity: no secret key, session token or web token in the worker's log ($(wc -l < "$A/keys") keys issued)" \
  test "$leaks" -eq 0 -a "$(wc -l < "$A/keys")" -ge 1
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null  # it would take the jobs below

# ---- S3 over TLS with a private CA (AWS_CA_BUNDLE) ---------------------------------
T="$tmp/tls"; mkdir -p "$T"
for ca in ca other-ca; do
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=boxcar e2e $ca" \
    -keyout "$T/$ca.key" -out "$T/$ca.pem" 2>/dev/null
done
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$T/server.key" -out "$T/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$T/san.ext"
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
  -extfile "$T/san.ext" -out "$T/server.pem" 2>/dev/null
tp=$(free_port); TLS=https://127.0.0.1:$tp
bg python3 "$BOXCAR_ROOT/tests/storage/tls_proxy.py" --port "$tp" --cert "$T/server.pem" \
  --key "$T/server.key" --upstream "127.0.0.1:$pp"
wait_for "tls proxy" 15 curl -s -o /dev/null --cacert "$T/ca.pem" "$TLS/"
p=$(free_port); M=http://127.0.0.1:$p
AWS_ENDPOINT_URL_S3=$TLS start_worker ready-tls-none --metrics-addr "127.0.0.1:$p" "${W[@]}"
check "TLS, no AWS_CA_BUNDLE: /readyz 's3: unreachable: SSL certificate problem: …'" \
  wait_for "tls refused" 20 bash -c "[[ \$(curl -s '$M/readyz') == 's3: unreachable: SSL certificate problem'* ]]"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
p=$(free_port); M=http://127.0.0.1:$p
AWS_ENDPOINT_URL_S3=$TLS AWS_CA_BUNDLE="$T/other-ca.pem" start_worker ready-tls-other --metrics-addr "127.0.0.1:$p" "${W[@]}"
check "TLS, another CA's bundle: refused the same way" \
  wait_for "tls refused" 20 bash -c "[[ \$(curl -s '$M/readyz') == 's3: unreachable: SSL certificate problem'* ]]"
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
p=$(free_port); M=http://127.0.0.1:$p
AWS_ENDPOINT_URL_S3=$TLS AWS_CA_BUNDLE="$T/ca.pem" start_worker ready-tls --metrics-addr "127.0.0.1:$p" "${W[@]}"
check "TLS, AWS_CA_BUNDLE=the CA: /readyz 200" wait_for "ready" 20 readyz_is "$M" "ok"
j=$(echo '{"script": "echo via-tls > out.txt", "artifact": {"storage": "ready-tls"}}' | "$BOXCAR" enqueue --spec -)
"$BOXCAR" status --wait "$j" >/dev/null
is "TLS, AWS_CA_BUNDLE=the CA: a job's artifact is uploaded over TLS" "$(job_field "$j" status)" succeeded
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
AWS_ENDPOINT_URL_S3=$TLS AWS_CA_BUNDLE="$T/missing.pem" start_worker ready-tls-missing "${W[@]}"
wait "$WORKER_PID" 2>/dev/null; rc=$?
check "TLS, a missing AWS_CA_BUNDLE: the worker stops at start (rc=$rc) naming the file" \
  eval '[[ $rc -ne 0 ]] && grep -qF "AWS_CA_BUNDLE $T/missing.pem: No such file or directory" "$(logof ready-tls-missing)"'

# ---- credential_process -------------------------------------------------------------
cat > "$A/creds.sh" <<SCRIPT
#!/bin/bash
n=\$(( \$(cat "$A/cp-count" 2>/dev/null || echo 0) + 1 )); echo \$n > "$A/cp-count"
ak=ASIAPROC\$n\$RANDOM; sk=proc-secret-\$RANDOM\$RANDOM; tok=proc-token-\$RANDOM\$RANDOM
echo "\$ak \$sk \$tok" >> "$A/keys"
echo "{\"Version\": 1, \"AccessKeyId\": \"\$ak\", \"SecretAccessKey\": \"\$sk\", \"SessionToken\": \"\$tok\", \"Expiration\": \"\$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)\"}"
SCRIPT
chmod +x "$A/creds.sh"
printf '[profile proc]\ncredential_process = %s\n' "$A/creds.sh" > "$A/proc-config"
p=$(free_port); M=http://127.0.0.1:$p
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
AWS_ENDPOINT_URL_S3="$PROXY" AWS_PROFILE=proc AWS_CONFIG_FILE="$A/proc-config" \
  AWS_SHARED_CREDENTIALS_FILE="$A/none" start_worker ready-proc --metrics-addr "127.0.0.1:$p" "${W[@]}"
export AWS_ACCESS_KEY_ID=$static_key AWS_SECRET_ACCESS_KEY=$static_secret
check "credential_process: /readyz 200 (bucket checked with the process's credentials)" wait_for "ready" 20 readyz_is "$M" "ok"
check "credential_process: the worker names the source" \
  grep -q "s3.ready.*credential_process (profile proc: $A/creds.sh)" "$(logof ready-proc)"
upload_and_count_leaks credential_process ready-proc ready-proc
is "credential_process: no secret or token in the worker's log" "$leaks" 0
kill "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null
tap_done
