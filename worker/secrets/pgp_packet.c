#include "worker/secrets/pgp_packet.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

static int truncated(struct bc_error *err, const char *what)
{
        return bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG, "OpenPGP message truncated (%s)",
                            what);
}

static int take(struct pgp_cursor *c, size_t n, const uint8_t **ret, struct bc_error *err,
                const char *what)
{
        if (n > c->len - c->off)
                return truncated(err, what);
        *ret = c->data + c->off;
        c->off += n;
        return 0;
}

static uint32_t be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One new-format length (§4.2.2).  *ret_partial tells a partial body
 * length, after which another length follows. */
static int new_length(struct pgp_cursor *c, size_t *ret_len, int *ret_partial,
                      struct bc_error *err)
{
        const uint8_t *p = NULL;
        if (take(c, 1, &p, err, "length") < 0)
                return -EBADMSG;
        *ret_partial = 0;
        if (p[0] < 192) {
                *ret_len = p[0];
        } else if (p[0] < 224) {
                const uint8_t *q = NULL;
                if (take(c, 1, &q, err, "length") < 0)
                        return -EBADMSG;
                *ret_len = ((size_t)(p[0] - 192) << 8) + q[0] + 192;
        } else if (p[0] == 255) {
                const uint8_t *q = NULL;
                if (take(c, 4, &q, err, "length") < 0)
                        return -EBADMSG;
                *ret_len = be32(q);
        } else {
                *ret_len = (size_t)1 << (p[0] & 0x1f);
                *ret_partial = 1;
        }
        return 0;
}

static int old_length(struct pgp_cursor *c, int type, size_t *ret_len, struct bc_error *err)
{
        const uint8_t *p = NULL;
        switch (type) {
        case 0:
                if (take(c, 1, &p, err, "length") < 0)
                        return -EBADMSG;
                *ret_len = p[0];
                return 0;
        case 1:
                if (take(c, 2, &p, err, "length") < 0)
                        return -EBADMSG;
                *ret_len = (size_t)p[0] << 8 | p[1];
                return 0;
        case 2:
                if (take(c, 4, &p, err, "length") < 0)
                        return -EBADMSG;
                *ret_len = be32(p);
                return 0;
        default: /* indeterminate: the rest of the buffer */
                *ret_len = c->len - c->off;
                return 0;
        }
}

/* Appends the parts of a new-format body to out, which has room for the
 * rest of the buffer: no body is longer than what it was read from. */
static int read_new_body(struct pgp_cursor *c, uint8_t *out, size_t *ret_len, struct bc_error *err)
{
        size_t len = 0;
        for (;;) {
                size_t n;
                int partial;
                const uint8_t *p = NULL;
                if (new_length(c, &n, &partial, err) < 0 || take(c, n, &p, err, "body") < 0)
                        return -EBADMSG;
                memcpy(out + len, p, n);
                len += n;
                if (!partial) {
                        *ret_len = len;
                        return 0;
                }
        }
}

int pgp_packet_next(struct pgp_cursor *c, int *ret_tag, uint8_t **ret_body, size_t *ret_len,
                    struct bc_error *err)
{
        if (c->off >= c->len)
                return 0;
        const uint8_t *h = NULL;
        if (take(c, 1, &h, err, "header") < 0)
                return -EBADMSG;
        if (!(h[0] & 0x80))
                return bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG,
                                    "not an OpenPGP packet (header byte 0x%02x)", h[0]);
        /* One allocation, never grown: bodies of inner packets are
         * plaintext, and a realloc would leave copies behind unwiped. */
        size_t room = c->len - c->off;
        uint8_t *data = malloc(room ? room : 1);
        if (!data)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        int tag, r;
        size_t len = 0;
        if (h[0] & 0x40) {
                tag = h[0] & 0x3f;
                r = read_new_body(c, data, &len, err);
        } else {
                tag = (h[0] >> 2) & 0x0f;
                const uint8_t *p = NULL;
                r = old_length(c, h[0] & 3, &len, err);
                if (r == 0)
                        r = take(c, len, &p, err, "body");
                if (r == 0)
                        memcpy(data, p, len);
        }
        if (r < 0) {
                explicit_bzero(data, room);
                free(data);
                return -EBADMSG;
        }
        *ret_tag = tag;
        *ret_body = data;
        *ret_len = len;
        return 1;
}

size_t pgp_packet_header(uint8_t *out, int tag, size_t len)
{
        out[0] = (uint8_t)(0xc0 | tag);
        if (len < 192) {
                out[1] = (uint8_t)len;
                return 2;
        }
        if (len < 8384) {
                out[1] = (uint8_t)(((len - 192) >> 8) + 192);
                out[2] = (uint8_t)((len - 192) & 0xff);
                return 3;
        }
        out[1] = 255;
        out[2] = (uint8_t)(len >> 24);
        out[3] = (uint8_t)(len >> 16);
        out[4] = (uint8_t)(len >> 8);
        out[5] = (uint8_t)len;
        return 6;
}
