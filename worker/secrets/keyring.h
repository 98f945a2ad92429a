/* The workers' private keys for job secrets: every *.pem file of the
 * --secret-keys directory, each known by its OpenPGP key id
 * (worker/secrets/pgp_pubkey.h). */
#ifndef BC_WORKER_SECRETS_KEYRING_H
#define BC_WORKER_SECRETS_KEYRING_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct secret_key {
        uint64_t key_id;
        EVP_PKEY *pkey;
};

struct secret_keyring {
        struct secret_key *keys;
        size_t n;
};

/* Loads every *.pem private RSA key of dir into *ret (free it with
 * secret_keyring_free).  Refuses (BC_CONFIG, naming the file) a key file
 * that is not a regular file, that the group or others may read or write,
 * or that is not an RSA private key; at most 64 keys. */
int secret_keyring_load(const char *dir, struct secret_keyring **ret, struct bc_error *err);

/* Adds pkey (taken over) to kr; for tests and loading. */
int secret_keyring_add(struct secret_keyring *kr, EVP_PKEY *pkey, struct bc_error *err);

/* The key with that id, or NULL. */
EVP_PKEY *secret_keyring_find(const struct secret_keyring *kr, uint64_t key_id);

/* NULL-safe. */
void secret_keyring_free(struct secret_keyring *kr);

#endif
