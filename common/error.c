#include "common/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const code_names[_BC_CODE_MAX] = {
        [BC_OK] = "OK",
        [BC_BAD_SPEC] = "BAD_SPEC",
        [BC_FETCH_FAILED] = "FETCH_FAILED",
        [BC_CHECKSUM_MISMATCH] = "CHECKSUM_MISMATCH",
        [BC_BAD_ARCHIVE] = "BAD_ARCHIVE",
        [BC_SANDBOX_SETUP] = "SANDBOX_SETUP",
        [BC_TIMEOUT] = "TIMEOUT",
        [BC_OOM] = "OOM",
        [BC_UPLOAD_FAILED] = "UPLOAD_FAILED",
        [BC_CANCELLED] = "CANCELLED",
        [BC_WORKER_LOST] = "WORKER_LOST",
        [BC_NONZERO_EXIT] = "NONZERO_EXIT",
        [BC_FILE_OP_FAILED] = "FILE_OP_FAILED",
        [BC_WORKSPACE_LIMIT] = "WORKSPACE_LIMIT",
        [BC_SECRET_UNAVAILABLE] = "SECRET_UNAVAILABLE",
        [BC_INTERNAL] = "INTERNAL",
        [BC_DATABASE] = "DATABASE",
        [BC_CONFIG] = "CONFIG",
        [BC_IO] = "IO",
        [BC_USAGE] = "USAGE",
        [BC_NOT_FOUND] = "NOT_FOUND",
};

const char *bc_code_name(enum bc_code code)
{
        if ((int)code < 0 || code >= _BC_CODE_MAX || !code_names[code])
                return "INTERNAL";
        return code_names[code];
}

static int errno_return(int errnum)
{
        return errnum > 0 ? -errnum : -EIO;
}

int bc_error_setv(struct bc_error *err, enum bc_code code, int errnum, const char *fmt, va_list ap)
{
        if (!err)
                return errno_return(errnum);
        free(err->message);
        err->message = NULL;
        err->code = code;
        err->errnum = errnum;
        char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) >= 0)
                err->message = msg;
        return errno_return(errnum);
}

int bc_error_set(struct bc_error *err, enum bc_code code, int errnum, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = bc_error_setv(err, code, errnum, fmt, ap);
        va_end(ap);
        return r;
}

int bc_error_prefix(struct bc_error *err, const char *fmt, ...)
{
        if (!err)
                return -EIO;
        char *ctx = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&ctx, fmt, ap);
        va_end(ap);
        if (n >= 0) {
                char *joined = NULL;
                if (asprintf(&joined, "%s: %s", ctx, bc_error_message(err)) >= 0) {
                        free(err->message);
                        err->message = joined;
                }
                free(ctx);
        }
        return errno_return(err->errnum);
}

void bc_error_clear(struct bc_error *err)
{
        if (!err)
                return;
        free(err->message);
        err->message = NULL;
        err->code = BC_OK;
        err->errnum = 0;
}

void bc_error_move(struct bc_error *dst, struct bc_error *src)
{
        bc_error_clear(dst);
        *dst = *src;
        src->message = NULL;
        src->code = BC_OK;
        src->errnum = 0;
}

const char *bc_error_message(const struct bc_error *err)
{
        if (!err)
                return "unknown error";
        if (err->message)
                return err->message;
        return bc_code_name(err->code);
}
