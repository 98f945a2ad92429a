#include "common/tailbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tailbuf_init(struct tailbuf *t, size_t cap)
{
        memset(t, 0, sizeof(*t));
        t->cap = cap;
        if (cap) {
                t->ring = malloc(cap);
                if (!t->ring)
                        return -ENOMEM;
        }
        return 0;
}

void tailbuf_done(struct tailbuf *t)
{
        if (!t)
                return;
        free(t->ring);
        t->ring = NULL;
        t->len = t->start = 0;
}

void tailbuf_write(struct tailbuf *t, const void *data, size_t len)
{
        const char *p = data;
        t->total += len;
        if (!t->cap)
                return;
        if (len >= t->cap) {
                /* Only the last cap bytes can survive: keep those. */
                memcpy(t->ring, p + len - t->cap, t->cap);
                t->start = 0;
                t->len = t->cap;
                return;
        }
        size_t end = (t->start + t->len) % t->cap;
        size_t first = t->cap - end < len ? t->cap - end : len;
        memcpy(t->ring + end, p, first);
        memcpy(t->ring, p + first, len - first);
        if (t->len + len <= t->cap) {
                t->len += len;
        } else {
                size_t overflow = t->len + len - t->cap;
                t->start = (t->start + overflow) % t->cap;
                t->len = t->cap;
        }
}

bool tailbuf_truncated(const struct tailbuf *t)
{
        return t->total > t->len;
}

char *tailbuf_copy(const struct tailbuf *t, size_t *ret_len)
{
        char *out = malloc(t->len + 1);
        if (!out)
                return NULL;
        size_t first = t->cap - t->start < t->len ? t->cap - t->start : t->len;
        if (first)
                memcpy(out, t->ring + t->start, first);
        if (t->len > first)
                memcpy(out + first, t->ring, t->len - first);
        out[t->len] = '\0';
        if (ret_len)
                *ret_len = t->len;
        return out;
}
