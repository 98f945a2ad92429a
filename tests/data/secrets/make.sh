#!/usr/bin/env bash
# Regenerates the sealed values tests/unit/worker/secrets/test_pgp_decrypt.c
# opens: real pgcrypto output (pgp_pub_encrypt) for key.pem, a test-only
# key, with each cipher and compression pgcrypto offers.
#   DATABASE_URL=... tests/data/secrets/make.sh   (a migrated database)
set -euo pipefail
cd "$(dirname "$0")"
boxcar=${BOXCAR:-../../../build/boxcar}
"$boxcar" secrets add-key key.pem >/dev/null
seal() { # NAME PLAINTEXT-SQL OPTIONS
  psql -X -qtA -v ON_ERROR_STOP=1 "$DATABASE_URL" -c \
    "select translate(encode(boxcar_pgcrypto.pgp_pub_encrypt($2, public_key, '$3'), 'base64'), E'\\n', '')
       from boxcar.secret_keys where key_id = '5e3440960b06c7f9'" > "$1.b64"
}
seal aes128 "'hunter2-aes128'" 'cipher-algo=aes128'
seal aes192 "'hunter2-aes192'" 'cipher-algo=aes192'
seal aes256 "'hunter2-aes256'" 'cipher-algo=aes256'
seal zip "'hunter2-zip hunter2-zip hunter2-zip'" 'cipher-algo=aes256, compress-algo=1'
seal zlib "'hunter2-zlib hunter2-zlib hunter2-zlib'" 'cipher-algo=aes256, compress-algo=2'
# 60000 bytes: the literal packet is written in partial body lengths.
seal long "repeat('0123456789', 6000)" 'cipher-algo=aes256'
seal blowfish "'hunter2-bf'" 'cipher-algo=bf'
# A job's value as the database seals it (sql/12_secrets.sql): in its
# envelope, for scope "default" and the name API_KEY.
seal job "E'boxcar-secret-v1\\ndefault\\nAPI_KEY\\nhunter2-aes256'" 'cipher-algo=aes256'
