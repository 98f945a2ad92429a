/* libFuzzer: Standard Webhooks verification (worker/webhook/webhook_sign.c): the
 * webhook-id, webhook-timestamp and webhook-signature headers and the body
 * as a receiver gets them, split on the first three NUL bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/webhook/webhook_sign.h"
#include "tests/fuzz/fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct webhook_secrets *secrets;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct bc_error err = BC_ERROR_INIT;
        /* The Standard Webhooks test vector's secret (see
         * tests/unit/worker/webhook/test_webhook.c). */
        if (!secrets && webhook_secrets_parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                              &secrets, &err) < 0)
                abort();
        char *text = fuzz_cstring(data, size);
        if (!text)
                return 0;
        const char *part[4] = { "", "", "", "" };
        size_t n = 0;
        for (char *p = text; n < 4 && p <= text + size; p += strlen(p) + 1)
                part[n++] = p;
        size_t body_len = n == 4 ? size - (size_t)(part[3] - text) : 0;
        webhook_verify(secrets, part[0], part[1], part[3], body_len, part[2], 1700000000, 300,
                       &err);
        bc_error_clear(&err);
        /* The secrets reader takes the operator's configuration as text too. */
        struct webhook_secrets *s = NULL;
        if (webhook_secrets_parse(text, &s, &err) >= 0)
                webhook_secrets_free(s);
        bc_error_clear(&err);
        free(text);
        return 0;
}
