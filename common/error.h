/* Errors carried up the stack: a code from DESIGN §5 (or an internal one),
 * the errno that caused it, and a heap message that gains context on the
 * way up ("claim: connect: timeout").  Libraries fill a caller's
 * struct bc_error and return a negative errno; only the CLI and the worker
 * loop print it. */
#ifndef BC_COMMON_ERROR_H
#define BC_COMMON_ERROR_H

#include <stdarg.h>

enum bc_code {
        BC_OK = 0,
        /* Job error codes: their names are the public contract (DESIGN §5). */
        BC_BAD_SPEC,
        BC_FETCH_FAILED,
        BC_CHECKSUM_MISMATCH,
        BC_BAD_ARCHIVE,
        BC_SANDBOX_SETUP,
        BC_TIMEOUT,
        BC_OOM,
        BC_UPLOAD_FAILED,
        BC_CANCELLED,
        BC_WORKER_LOST,
        BC_NONZERO_EXIT,
        BC_WORKSPACE_LIMIT,    /* what the job left in its workspace is over a limit */
        BC_FILE_OP_FAILED,     /* a file operation of a session job failed (spec.files) */
        BC_SECRET_UNAVAILABLE, /* a sealed secret of the job cannot be opened (spec.secrets) */
        /* Internal codes, never stored on a job. */
        BC_INTERNAL,
        BC_DATABASE,
        BC_CONFIG,
        BC_IO,
        BC_USAGE,
        BC_NOT_FOUND,
        _BC_CODE_MAX,
};

struct bc_error {
        enum bc_code code;
        int errnum;    /* positive errno, 0 when none applies */
        char *message; /* owned; NULL when no error was set */
};

/* One line, which clang-format would spread over four. */
/* clang-format off */
#define BC_ERROR_INIT { BC_OK, 0, NULL }
/* clang-format on */

/* Sets err (replacing any earlier error) and returns -errnum, or -EIO when
 * errnum is 0, so callers can write `return bc_error_set(...)`.  err may be
 * NULL: the return value is still right. */
int bc_error_set(struct bc_error *err, enum bc_code code, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
int bc_error_setv(struct bc_error *err, enum bc_code code, int errnum, const char *fmt, va_list ap)
        __attribute__((format(printf, 4, 0)));

/* Prepends "context: " to the message already set and returns the same
 * negative value bc_error_set returned. */
int bc_error_prefix(struct bc_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Frees the message and resets err to BC_OK.  NULL-safe. */
void bc_error_clear(struct bc_error *err);

/* Moves src into dst (dst cleared first); src is left empty. */
void bc_error_move(struct bc_error *dst, struct bc_error *src);

/* "BAD_SPEC", "TIMEOUT", … ; never NULL. */
const char *bc_code_name(enum bc_code code);

/* The message, or the code's name when no message was set; never NULL. */
const char *bc_error_message(const struct bc_error *err);

#endif
