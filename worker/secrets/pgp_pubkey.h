/* The OpenPGP v4 form of a worker's RSA public key (RFC 4880 §5.5.2), as
 * pgcrypto's pgp_pub_encrypt reads it to seal job secrets.
 *
 * pgcrypto never encrypts to a primary key: it skips the Public-Key packet
 * and uses the first Public-Subkey packet.  So the key is written as a
 * primary key and a subkey with the same RSA material and the same body;
 * the key id (low 64 bits of the SHA-1 fingerprint) is then one id for
 * both, the one pgcrypto writes into each message.
 *
 * The creation time is fixed at 0 so that the key id is a function of the
 * RSA key alone: a worker computes the id of each private key it loads, and
 * `boxcar secrets add-key` registers the same id for the same file. */
#ifndef BC_WORKER_SECRETS_PGP_PUBKEY_H
#define BC_WORKER_SECRETS_PGP_PUBKEY_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The transferable public key (Public-Key + Public-Subkey packets) of an
 * RSA key in *ret_packets and *ret_len (malloc'd, caller frees) and its key id
 * in *ret_key_id.  Fails with BC_CONFIG when pkey is not RSA. */
int pgp_pubkey_build(EVP_PKEY *pkey, uint8_t **ret_packets, size_t *ret_len, uint64_t *ret_key_id,
                     struct bc_error *err);

/* The key id of an RSA key, as pgp_pubkey_build computes it. */
int pgp_pubkey_key_id(EVP_PKEY *pkey, uint64_t *ret_key_id, struct bc_error *err);

/* "0123456789abcdef" form of a key id into out (17 bytes). */
void pgp_key_id_hex(uint64_t key_id, char out[17]);

#endif
