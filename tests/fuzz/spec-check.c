/* The C validator's verdict on each file named on the command line, each
 * ended by a NUL: "OK" or the error message (for tests/fuzz/spec_diff.py).
 * Not one per line: a message quotes the spec's field names, which may
 * hold line breaks, and one verdict read as two shifted every later file's
 * verdict onto the wrong spec. */
#include <stdio.h>
#include <stdlib.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/io.h"
#include "worker/spec/spec.h"

int main(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                size_t len = 0;
                _cleanup_free_ char *text = NULL;
                struct bc_error read_err = BC_ERROR_INIT;
                if (bc_read_all(argv[i], 1 << 20, &text, &len, &read_err) < 0) {
                        fprintf(stderr, "%s\n", bc_error_message(&read_err));
                        bc_error_clear(&read_err);
                        return 1;
                }
                struct job_spec *spec = NULL;
                struct bc_error err = BC_ERROR_INIT;
                if (spec_parse(text, len, &spec, &err) >= 0) {
                        fputs("OK", stdout);
                        spec_free(spec);
                } else {
                        fputs(bc_error_message(&err), stdout);
                }
                putchar('\0');
                bc_error_clear(&err);
        }
        return 0;
}
