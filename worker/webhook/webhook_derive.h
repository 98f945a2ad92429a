/* Per-scope webhook secrets, derived from the operator's master key.
 *
 * BOXCAR_WEBHOOK_SECRET is a master key that never signs anything itself:
 * each scope (tenant), and each endpoint that was given secrets of its
 * own, signs with
 *
 *   secret(scope, endpoint, generation) = "whsec_" + base64(HMAC-SHA256(
 *       master, "boxcar webhook secret v1\0" scope "\0" endpoint "\0" generation))
 *
 * (endpoint "" for the scope-wide secret, generation in decimal), so a
 * tenant's receiver holds the key to its own deliveries only, and no
 * secret is stored anywhere: the database records generations only
 * (sql/62_webhook_secrets.sql).  HMAC keeps the derivation one-way: a
 * derived secret tells nothing about the master or any other secret.
 *
 * The cache keeps derived keys per (master key, scope, endpoint,
 * generation), bounded, least recently used out first; one per delivery
 * thread (no locking). */
#ifndef BC_WORKER_WEBHOOK_WEBHOOK_DERIVE_H
#define BC_WORKER_WEBHOOK_WEBHOOK_DERIVE_H

#include <stddef.h>

#include "common/cleanup.h"
#include "common/error.h"

struct webhook_secrets;

#define WEBHOOK_DERIVED_KEY_BYTES 32
/* "whsec_" + 44 characters of base64 + NUL. */
#define WEBHOOK_SECRET_TEXT_SIZE 51
/* Master keys a worker signs with (each derives its own secrets: several
 * while the master itself is rotated). */
#define WEBHOOK_MASTER_KEYS_MAX 4
/* Scope and endpoint lengths the SQL API allows (check_webhook_secret_target). */
#define WEBHOOK_SCOPE_MAX 128
#define WEBHOOK_ENDPOINT_MAX 2048

/* Derives the secret of (scope, endpoint, generation) from master key i
 * (i < webhook_secrets_count(master)) into ret_key.  endpoint "" is the
 * scope-wide secret.  Fails (-EINVAL, err names the field) for an empty
 * or overlong scope, an overlong endpoint or a negative generation. */
int webhook_derive_key(const struct webhook_secrets *master, size_t i, const char *scope,
                       const char *endpoint, int generation,
                       unsigned char ret_key[static WEBHOOK_DERIVED_KEY_BYTES],
                       struct bc_error *err);

/* "whsec_<base64>" of a derived key, as a receiver is given it. */
void webhook_key_text(const unsigned char key[static WEBHOOK_DERIVED_KEY_BYTES],
                      char out[static WEBHOOK_SECRET_TEXT_SIZE]);

struct webhook_keycache;

/* A cache of up to cap derived keys of master (borrowed: it must outlive
 * the cache).  Free with webhook_keycache_free(). */
int webhook_keycache_new(const struct webhook_secrets *master, size_t cap,
                         struct webhook_keycache **ret, struct bc_error *err);

/* Wipes the keys and frees.  NULL-safe. */
void webhook_keycache_free(struct webhook_keycache *c);
BC_DEFINE_CLEANUP(struct webhook_keycache *, webhook_keycache_free)

/* Adds to set the secret of (scope, endpoint, generation) derived from
 * every master key, from the cache or derived now.  Errors as
 * webhook_derive_key and webhook_secrets_add. */
int webhook_keycache_add(struct webhook_keycache *c, const char *scope, const char *endpoint,
                         int generation, struct webhook_secrets *set, struct bc_error *err);

#endif
