/* Shared by the harnesses: the fuzzer's bytes as a C string. */
#ifndef BC_TESTS_FUZZ_FUZZ_UTIL_H
#define BC_TESTS_FUZZ_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of data (caller frees), or NULL on ENOMEM. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        if (text) {
                memcpy(text, data, size);
                text[size] = '\0';
        }
        return text;
}

#endif
