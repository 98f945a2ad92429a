/* libFuzzer: the small parsers of operator input (worker/config/config.c):
 * durations, retry schedules and queue lists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/config/config.h"
#include "tests/fuzz/fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_cstring(data, size);
        if (!text)
                return 0;
        double seconds;
        if (config_parse_duration(text, true, &seconds) == 0 && !(seconds >= 0))
                abort();   /* a parsed duration is never negative or NaN */
        char *literal = NULL;
        if (config_parse_schedule(text, &literal) == 0)
                free(literal);
        char **queues = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (config_parse_queues(text, &queues, &err) == 0)
                config_strv_free(queues);
        bc_error_clear(&err);
        free(text);
        return 0;
}
