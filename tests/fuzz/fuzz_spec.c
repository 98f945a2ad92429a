/* libFuzzer: the job spec parser (worker/spec/spec.c), fed arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>

#include "worker/spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct job_spec *spec = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (spec_parse((const char *)data, size, &spec, &err) >= 0)
                spec_free(spec);
        bc_error_clear(&err);
        return 0;
}
