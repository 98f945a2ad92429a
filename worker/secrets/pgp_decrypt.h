/* Opens an OpenPGP message sealed to one of the workers' RSA keys, as
 * pgcrypto's pgp_pub_encrypt writes it (RFC 4880): a Public-Key Encrypted
 * Session Key packet (v3, RSA, PKCS#1 v1.5), then a Symmetrically
 * Encrypted Integrity Protected Data packet (v1, AES, OpenPGP CFB) holding
 * an optional Compressed Data packet (ZIP or ZLIB), a Literal Data packet
 * and the Modification Detection Code.
 *
 * The message comes from a job's spec: anyone who can enqueue chooses its
 * bytes.  Every length is bounded, the MDC is checked before any inner
 * packet is parsed, and key material and plaintext are wiped from memory
 * that is given back. */
#ifndef BC_WORKER_SECRETS_PGP_DECRYPT_H
#define BC_WORKER_SECRETS_PGP_DECRYPT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/secrets/keyring.h"

/* The largest plaintext accepted (the spec's limit on a secret value). */
#define PGP_PLAINTEXT_MAX 65536

/* Decrypts msg with the key of kr its session key packet names.  On
 * success *ret_plain and *ret_len hold the literal data (malloc'd, NUL
 * appended; the caller wipes it with explicit_bzero and frees it) and
 * *ret_key_id the key used.  On failure err is set with BC_SECRET_UNAVAILABLE
 * and a message naming the problem (the key id when no key of kr opens
 * it), never any plaintext. */
int pgp_decrypt(const uint8_t *msg, size_t len, const struct secret_keyring *kr,
                uint8_t **ret_plain, size_t *ret_len, struct bc_error *err);

#endif
