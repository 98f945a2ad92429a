/* The C validator's verdict on each file named on the command line, one
 * line each: "OK" or the error message (for tests/fuzz/spec_diff.py). */
#include <stdio.h>
#include <stdlib.h>

#include "common/cleanup.h"
#include "worker/spec.h"

static char *read_file(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        char *buf = malloc(1 << 20);
        size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
        fclose(f);
        *ret_len = n;
        return buf;
}

int main(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                size_t len = 0;
                _cleanup_free_ char *text = read_file(argv[i], &len);
                if (!text) {
                        perror(argv[i]);
                        return 1;
                }
                struct job_spec *spec = NULL;
                struct bc_error err = BC_ERROR_INIT;
                if (spec_parse(text, len, &spec, &err) >= 0) {
                        puts("OK");
                        spec_free(spec);
                } else {
                        printf("%s\n", bc_error_message(&err));
                }
                bc_error_clear(&err);
        }
        return 0;
}
