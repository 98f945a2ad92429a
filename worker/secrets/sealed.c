#include "worker/secrets/sealed.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/cleanup.h"
#include "worker/secrets/pgp_decrypt.h"

#define SEALED_MAX 131072

int sealed_base64_decode(const char *s, unsigned char **ret, size_t *ret_len)
{
        size_t n = strlen(s);
        if (n == 0 || n % 4 != 0)
                return -EINVAL;
        size_t pad = (s[n - 1] == '=') + (n > 1 && s[n - 2] == '=');
        unsigned char *out = malloc(n / 4 * 3);
        if (!out)
                return -ENOMEM;
        size_t len = 0;
        for (size_t i = 0; i < n; i += 4) {
                uint32_t acc = 0;
                for (size_t j = 0; j < 4; j++) {
                        int v = base64_value((unsigned char)s[i + j]);
                        /* "=" only as the padding at the very end */
                        if (v < 0 && !(s[i + j] == '=' && i + j >= n - pad)) {
                                free(out);
                                return -EINVAL;
                        }
                        acc = acc << 6 | (uint32_t)(v < 0 ? 0 : v);
                }
                out[len++] = (unsigned char)(acc >> 16);
                out[len++] = (unsigned char)(acc >> 8);
                out[len++] = (unsigned char)acc;
        }
        *ret = out;
        *ret_len = len - pad;
        return 0;
}

int sealed_open(const char *sealed, const struct secret_keyring *kr, char **ret_value,
                size_t *ret_len, struct bc_error *err)
{
        if (strlen(sealed) > SEALED_MAX)
                return bc_error_set(err, BC_SECRET_UNAVAILABLE, E2BIG,
                                    "the sealed value is longer than %d bytes", SEALED_MAX);
        _cleanup_free_ unsigned char *msg = NULL;
        size_t len;
        if (sealed_base64_decode(sealed, &msg, &len) < 0)
                return bc_error_set(err, BC_SECRET_UNAVAILABLE, EINVAL,
                                    "the sealed value is not base64");
        uint8_t *plain;
        size_t plain_len;
        int r = pgp_decrypt(msg, len, kr, &plain, &plain_len, err);
        if (r < 0)
                return r;
        if (memchr(plain, 0, plain_len)) {
                explicit_bzero(plain, plain_len);
                free(plain);
                return bc_error_set(
                        err, BC_SECRET_UNAVAILABLE, EINVAL,
                        "the value holds a NUL byte, which no environment variable can");
        }
        *ret_value = (char *)plain;
        *ret_len = plain_len;
        return 0;
}
