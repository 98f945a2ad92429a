# No error shows a secret: a worker config file's bad line, bad key or bad
# value (named by file, line and key instead), a mistyped flag or a stray
# argument holding a URL, and a database URL libpq cannot parse (its
# message would quote the URL or the password).
source "$(dirname "$0")/../lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
secret=S3cretValue-$RANDOM$RANDOM
# worker_with NAME LINE...: the worker started with a config file of these
# lines; its stdout and stderr in $T/NAME.out and .err.
worker_with() {
  printf '%s\n' "${@:2}" > "$T/$1.conf"
  timeout 30 "$BOXCAR" worker --config "$T/$1.conf" --work-dir "$T/work" >"$T/$1.out" 2>"$T/$1.err"
}
shows_no_secret() { ! grep -qF "$secret" "$T/$1.out" "$T/$1.err"; }
names() { grep -qF "$T/$1.conf:2: " "$T/$1.err" && grep -qF -- "$2" "$T/$1.err"; }

while IFS='|' read -r name line key; do
  worker_with "$name" "# a comment" "$line"
  rc=$?
  is "$name: the worker refuses to start (usage)" "$rc" 2
  check "$name: the error names the file and line 2${key:+ and the key $key}" names "$name" "$key"
  check "$name: and never shows the secret" shows_no_secret "$name"
done <<EOF2
no-equals|webhook-secret: whsec_$secret|
bare-value|whsec_${secret}==|
bad-key|webhook_secret = $secret|
unknown-key|aws-secret-access-key = $secret|aws-secret-access-key
bad-duration|lease = $secret|lease
bad-queues|queues = a $secret|queues
bad-network|network-allow = ci=$secret|network-allow
bad-cidr|allow-url-cidr = $secret|allow-url-cidr
EOF2

# The database URL: libpq quotes a URL it cannot parse, or its password.
for url in "postgresql://u:$secret%zz@127.0.0.1:1/db" "postgresql://u:$secret@[::1/db" \
           "postgresql://u:$secret@[::1]x/db" "postgresql://u:$secret@127.0.0.1:1/db" \
           "host=127.0.0.1 port=1 password=$secret bogus"; do
  timeout 30 "$BOXCAR" migrate --database-url "$url" >"$T/m.out" 2>"$T/m.err"
  rc=$?
  check "boxcar migrate with an unusable URL fails ($rc)" test "$rc" -ne 0
  check "without showing its password (${url%%$secret*}...)" bash -c "! grep -qF '$secret' '$T/m.out' '$T/m.err'"
  DATABASE_URL=$url timeout 30 "$BOXCAR" status 00000000-0000-0000-0000-000000000000 >"$T/s.out" 2>"$T/s.err"
  check "nor does boxcar status with it in DATABASE_URL" bash -c "! grep -qF '$secret' '$T/s.out' '$T/s.err'"
done
worker_with db-url "database-url = postgresql://u:$secret%zz@127.0.0.1:1/db"
check "the worker with such a URL in its file fails without showing it" shows_no_secret db-url
grep -q 'percent-encoded' "$T/db-url.err"
is "while still saying what is wrong" "$?" 0

timeout 30 "$BOXCAR" worker "--databse-url=postgresql://u:$secret@h/db" >"$T/f.out" 2>"$T/f.err"
is "a mistyped flag: usage error" "$?" 2
check "naming the flag" grep -qF "'--databse-url'" "$T/f.err"
check "not its value" bash -c "! grep -qF '$secret' '$T/f.err'"
timeout 30 "$BOXCAR" worker "postgresql://u:$secret@h/db" >"$T/a.out" 2>"$T/a.err"
is "a URL without its flag: usage error" "$?" 2
check "not shown" bash -c "! grep -qF '$secret' '$T/a.err'"
for cmd in "status" "jobs ls" "queue config q" "storage push" "webhooks verify"; do
  timeout 30 "$BOXCAR" $cmd "--databse-url=postgresql://u:$secret@h/db" x >"$T/c.out" 2>"$T/c.err"
  check "boxcar $cmd: a mistyped flag is named, its value not shown" \
    bash -c "grep -qF -- '--databse-url' '$T/c.err' && ! grep -qF '$secret' '$T/c.err'"
done
tap_done
