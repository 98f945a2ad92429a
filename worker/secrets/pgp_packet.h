/* OpenPGP packet framing (RFC 4880 §4.2): old- and new-format headers,
 * partial body lengths.  The bytes come from a job's spec, so every length
 * is checked against what is left of the buffer before it is trusted. */
#ifndef BC_WORKER_SECRETS_PGP_PACKET_H
#define BC_WORKER_SECRETS_PGP_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

enum {
        PGP_TAG_PKESK = 1,
        PGP_TAG_SYM_ENCRYPTED = 9,
        PGP_TAG_COMPRESSED = 8,
        PGP_TAG_MARKER = 10,
        PGP_TAG_LITERAL = 11,
        PGP_TAG_PUBLIC_KEY = 6,
        PGP_TAG_PUBLIC_SUBKEY = 14,
        PGP_TAG_SEIPD = 18,
        PGP_TAG_MDC = 19,
};

/* A cursor over a byte buffer the caller keeps alive. */
struct pgp_cursor {
        const uint8_t *data;
        size_t len;
        size_t off;
};

/* Reads the packet at c's position.  Returns 1 with *ret_tag and the body
 * in *ret_body and *ret_len (malloc'd, the caller frees it; partial bodies are
 * joined), 0 at the end of the buffer, or a negative errno with err set
 * (BC_SECRET_UNAVAILABLE) when the framing is malformed or runs past the buffer. */
int pgp_packet_next(struct pgp_cursor *c, int *ret_tag, uint8_t **ret_body, size_t *ret_len,
                    struct bc_error *err);

/* Writes a new-format packet header for tag and len into out (at least 6
 * bytes) and returns its size. */
size_t pgp_packet_header(uint8_t *out, int tag, size_t len);

#endif
