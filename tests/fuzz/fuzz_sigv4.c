/* libFuzzer: SigV4 canonicalisation (storage/sigv4.c) of arbitrary object
 * keys, query parameters and header values.  The input is split on NUL
 * bytes: key, then name/value pairs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "storage/sigv4.h"
#include "tests/fuzz/fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_PARTS = 9 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_cstring(data, size);
        if (!text)
                return 0;
        const char *part[MAX_PARTS] = { "" };
        size_t n = 0;
        for (char *p = text; n < MAX_PARTS && p <= text + size; p += strlen(p) + 1)
                part[n++] = p;
        struct sigv4_pair query[4] = { { 0 } }, headers[1] = { { 0 } };
        size_t nq = 0;
        for (size_t i = 1; i + 1 < n && nq < 3; i += 2, nq++)
                query[nq] = (struct sigv4_pair){ part[i], part[i + 1] };
        if (n == MAX_PARTS)
                headers[0] = (struct sigv4_pair){ "x-amz-meta-f", part[MAX_PARTS - 1] };
        struct sigv4_request req = {
                .method = "GET", .host = "bucket.s3.amazonaws.com", .path = part[0],
                .query = query, .n_query = nq, .payload_sha256 = SIGV4_UNSIGNED_PAYLOAD,
                .access_key = "AKIDEXAMPLE", .secret_key = "secret", .region = "us-east-1",
                .now = 1700000000,
        };
        struct bc_error err = BC_ERROR_INIT;
        char *out = NULL;
        if (sigv4_presign_query(&req, 3600, &out, &err) >= 0)
                free(out);
        bc_error_clear(&err);
        req.headers = headers;
        req.n_headers = n == MAX_PARTS;
        out = NULL;
        if (sigv4_authorization(&req, &out, &err) >= 0)
                free(out);
        bc_error_clear(&err);
        struct dynbuf b;
        dynbuf_init(&b, 1 << 20);
        sigv4_uri_encode(&b, part[0], 1);
        dynbuf_done(&b);
        free(text);
        return 0;
}
