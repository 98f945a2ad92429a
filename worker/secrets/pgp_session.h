/* The session key of an OpenPGP message: a Public-Key Encrypted Session
 * Key packet (RFC 4880 §5.1, v3, RSA) opened with a worker's key. */
#ifndef BC_WORKER_SECRETS_PGP_SESSION_H
#define BC_WORKER_SECRETS_PGP_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/secrets/keyring.h"

struct pgp_session_key {
        int algo; /* 7, 8, 9: AES-128, -192, -256 */
        size_t len;
        uint8_t key[32];
};

/* The key length of a symmetric algorithm; 0 when not supported. */
size_t pgp_sym_key_len(int algo);

/* Opens the PKESK packet body with the key of kr it names.  Returns 1 with
 * *ret set, 0 when kr holds no key of that id (the caller may try another
 * PKESK), *ret_key_id the packet's key id in both cases, or a negative errno with err set
 * (BC_SECRET_UNAVAILABLE) when the packet is malformed or does not open.
 * The caller wipes *ret after use. */
int pgp_session_open(const uint8_t *body, size_t len, const struct secret_keyring *kr,
                     struct pgp_session_key *ret, uint64_t *ret_key_id, struct bc_error *err);

#endif
