/* A sealed secret as a job's spec holds it: {"sealed": base64 of an
 * OpenPGP message, "key": key id}. */
#ifndef BC_WORKER_SECRETS_SEALED_H
#define BC_WORKER_SECRETS_SEALED_H

#include <stddef.h>

#include "common/error.h"
#include "worker/secrets/keyring.h"

/* Decodes sealed (base64, at most 128 KiB) and opens it with kr.  On
 * success *ret_value (NUL-terminated, malloc'd: the caller wipes it with
 * explicit_bzero and frees it) and *ret_len.  On failure err is set with
 * BC_SECRET_UNAVAILABLE and a message without any plaintext. */
int sealed_open(const char *sealed, const struct secret_keyring *kr, char **ret_value,
                size_t *ret_len, struct bc_error *err);

/* Standard base64 ("+/", "=" padding, no whitespace) into *ret (malloc'd)
 * and *ret_len; -EINVAL on anything else. */
int sealed_base64_decode(const char *s, unsigned char **ret, size_t *ret_len);

#endif
