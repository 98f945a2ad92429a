/* Percent-encoding of URI components (RFC 3986), as S3's signatures and
 * the dashboard's links both need it. */
#ifndef BC_COMMON_URI_H
#define BC_COMMON_URI_H

#include "common/dynbuf.h"

/* Appends s with everything but A-Z a-z 0-9 - . _ ~ as %XX (uppercase),
 * and '/' too unless keep_slash.  Returns 0 or -E2BIG/-ENOMEM from b. */
int bc_uri_encode(struct dynbuf *b, const char *s, int keep_slash);

#endif
