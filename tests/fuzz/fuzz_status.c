/* libFuzzer: the reader of boxcar-sandbox's JSON status (sandbox/status.c). */
#include <stddef.h>
#include <stdint.h>

#include "sandbox/sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct sandbox_status st;
        struct bc_error err = BC_ERROR_INIT;
        if (sandbox_status_parse((const char *)data, size, &st, &err) >= 0)
                sandbox_status_done(&st);
        bc_error_clear(&err);
        return 0;
}
