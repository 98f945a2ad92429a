/* Standard Webhooks signatures (https://www.standardwebhooks.com):
 * HMAC-SHA256 over "<msg_id>.<timestamp>.<body>" with each secret,
 * base64, sent as "webhook-signature: v1,<b64> v1,<b64>".
 *
 * A set of secrets is parsed from text (one or more "whsec_<base64>"
 * separated by whitespace: a receiver's secrets for `boxcar webhooks
 * verify`, the operator's master keys in BOXCAR_WEBHOOK_SECRET), or built
 * key by key (a delivery's derived secrets, webhook_derive.h).  Every
 * secret signs (one v1 signature each), so during a rotation consumers
 * holding either the old or the new secret accept the same request.  The
 * key material is never put in an error message and is wiped when freed.
 *
 * Thread safety: a parsed struct webhook_secrets is read-only and may be
 * shared by any number of threads signing or verifying at once. */
#ifndef BC_WORKER_WEBHOOK_WEBHOOK_SIGN_H
#define BC_WORKER_WEBHOOK_WEBHOOK_SIGN_H

#include <stddef.h>

#include "common/cleanup.h"
#include "common/error.h"

/* Limits on what the secret value may make us hold.  The spec asks for
 * keys of 24 to 64 bytes; shorter keys are refused as too weak. */
#define WEBHOOK_SECRETS_MAX 8
/* Keys a built set may hold (one signature each). */
#define WEBHOOK_SIGNING_KEYS_MAX 32
#define WEBHOOK_SECRET_MIN_BYTES 24
#define WEBHOOK_SECRET_MAX_BYTES 64

/* Seconds a consumer should accept between the signed timestamp and its
 * own clock (the spec's recommendation). */
#define WEBHOOK_DEFAULT_TOLERANCE_S 300

struct webhook_secrets;

/* Parses value (e.g. the contents of BOXCAR_WEBHOOK_SECRET).  On success
 * *ret is set to a new set of at least one secret; free it with
 * webhook_secrets_free().  On failure err (BC_CONFIG, -EINVAL) names the
 * bad entry by position ("entry 2 of 3: not valid base64 after whsec_")
 * and never contains any part of the secret. */
int webhook_secrets_parse(const char *value, struct webhook_secrets **ret, struct bc_error *err);

/* Wipes and frees the keys.  NULL-safe. */
void webhook_secrets_free(struct webhook_secrets *s);
BC_DEFINE_CLEANUP(struct webhook_secrets *, webhook_secrets_free)
#define _cleanup_webhook_secrets_ _cleanup_(webhook_secrets_freep)

/* Number of secrets in s (each adds one signature to a header). */
size_t webhook_secrets_count(const struct webhook_secrets *s);

/* A new empty set, to be filled with webhook_secrets_add(); free it with
 * webhook_secrets_free().  Fails only when out of memory or when OpenSSL
 * has no HMAC. */
int webhook_secrets_new(struct webhook_secrets **ret, struct bc_error *err);

/* Adds a key of WEBHOOK_SECRET_MIN_BYTES to WEBHOOK_SECRET_MAX_BYTES bytes
 * (copied).  -E2BIG when s already holds WEBHOOK_SIGNING_KEYS_MAX keys,
 * -EINVAL for a bad length; err says which. */
int webhook_secrets_add(struct webhook_secrets *s, const unsigned char *key, size_t len,
                        struct bc_error *err);

/* Wipes every key of s and empties it, for the next delivery's keys. */
void webhook_secrets_reset(struct webhook_secrets *s);

/* HMAC-SHA256 with the i-th key of s (i < count) over the concatenation
 * of the n parts, into out.  Returns 0, or -ENOMEM / -EIO / -EINVAL. */
struct iovec;
int webhook_secrets_hmac(const struct webhook_secrets *s, size_t i, const struct iovec *parts,
                         size_t n, unsigned char out[static 32]);

/* Signs one delivery attempt.  msg_id must be non-empty and, like every
 * header value, free of control characters.  body may be NULL when
 * body_len is 0.  On success *ret_header is the webhook-signature header
 * value "v1,<b64> v1,<b64>…" in the order of the secrets (caller frees).
 * Returns 0, or -EINVAL (bad msg_id) / -ENOMEM / -EIO (OpenSSL) with err
 * set. */
int webhook_sign(const struct webhook_secrets *s, const char *msg_id, long long timestamp,
                 const char *body, size_t body_len, char **ret_header, struct bc_error *err);

/* Verifies a received request, as a consumer would.  timestamp is the
 * webhook-timestamp header as received (decimal seconds), signature_header
 * the webhook-signature header (space-separated "version,b64" entries;
 * versions other than v1 are ignored).  Signatures are compared in
 * constant time.
 *
 * Returns 0 when some v1 signature matches some secret and
 * |now - timestamp| <= tolerance_s.  Otherwise err (BC_CHECKSUM_MISMATCH)
 * says why and the return value tells the cases apart:
 *   -EINVAL   missing or malformed id, timestamp or signature header
 *   -EBADMSG  no v1 signature matches any secret (wrong secret, or the
 *             id, timestamp or body was changed)
 *   -ERANGE   the signature is genuine but the timestamp is outside the
 *             tolerance (a replay, or a skewed clock)
 * The signature is checked before the timestamp so that "stale" is only
 * ever said of an authentic request.  A negative tolerance_s skips the
 * timestamp check (for looking at a saved request later). */
int webhook_verify(const struct webhook_secrets *s, const char *msg_id, const char *timestamp,
                   const char *body, size_t body_len, const char *signature_header, long long now,
                   long long tolerance_s, struct bc_error *err);

#endif
