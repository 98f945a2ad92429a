/* AWS Signature Version 4 for S3, written once on OpenSSL's HMAC.
 *
 * Why not libcurl's CURLOPT_AWS_SIGV4: on Debian 12's curl 7.88.1 it signs
 * the query string in the order given instead of sorted (checked: for
 * "?prefix=J%20K&max-keys=2" its signature matches the unsorted canonical
 * request, which S3 rejects), it neither sends nor signs the
 * x-amz-content-sha256 header S3 requires (checked: SignedHeaders is just
 * host;x-amz-date), it cannot presign (query auth) at all, and it offers
 * no fixed clock to replay AWS's vectors.  So both the query presigner and
 * the header signer for the worker's own requests are ours; they share
 * every canonicalization step, which is what the tests pin.
 *
 * These functions are pure: the caller passes the time, which is how the
 * tests replay AWS's and botocore's vectors. */
#ifndef BC_STORAGE_SIGV4_H
#define BC_STORAGE_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "common/dynbuf.h"
#include "common/error.h"

#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Raw (unencoded) name/value pair: a query parameter or a header. */
struct sigv4_pair {
        const char *name;
        const char *value;
};

struct sigv4_request {
        const char *method;             /* "GET", "PUT", "HEAD" */
        const char *host;               /* Host header value, port included
                                         * when not the scheme's default */
        const char *path;               /* raw object path, e.g. "/bucket/a b";
                                         * encoded here, '/' kept */
        const struct sigv4_pair *query; /* raw, any order; may be NULL */
        size_t n_query;
        const struct sigv4_pair *headers; /* besides host, all signed; any case */
        size_t n_headers;
        const char *payload_sha256; /* hex, or SIGV4_UNSIGNED_PAYLOAD */
        const char *access_key;
        const char *secret_key;
        const char *session_token; /* NULL when none */
        const char *region;
        const char *service; /* NULL: "s3" (STS AssumeRole passes "sts") */
        time_t now;
};

/* Appends s percent-encoded the way S3 wants it: everything but
 * A-Z a-z 0-9 - . _ ~ becomes %XX (uppercase), and '/' too unless
 * keep_slash.  Returns 0 or -E2BIG/-ENOMEM from the buffer. */
int sigv4_uri_encode(struct dynbuf *b, const char *s, int keep_slash);

/* "20130524T000000Z" into buf (at least 17 bytes). */
void sigv4_amz_date(time_t now, char buf[static 17]);

/* Header auth: *ret is the Authorization header value (heap, caller's).
 * The caller must send exactly the headers it passed, plus Host,
 * x-amz-date (sigv4_amz_date of req->now) and x-amz-content-sha256, and
 * x-amz-security-token when there is a session token; those four are
 * added to the signature here when missing from req->headers. */
int sigv4_authorization(const struct sigv4_request *req, char **ret, struct bc_error *err);

/* Query auth: *ret is the query string (no leading '?', heap, caller's)
 * to append to scheme://host + encoded path, ending in X-Amz-Signature.
 * req->headers must be empty (only host is signed), the payload is
 * unsigned; expires_s is checked by the caller. */
int sigv4_presign_query(const struct sigv4_request *req, long expires_s, char **ret,
                        struct bc_error *err);

/* The canonical request and signature of the last two, for tests and
 * debugging: *ret_canonical (may be NULL) and *ret_signature (hex). */
int sigv4_debug_sign(const struct sigv4_request *req, long expires_s, char **ret_canonical,
                     char **ret_signature, struct bc_error *err);

#endif
