#include "common/dynbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dynbuf_init(struct dynbuf *b, size_t cap)
{
        b->data = NULL;
        b->len = 0;
        b->alloc = 0;
        b->cap = cap;
}

void dynbuf_done(struct dynbuf *b)
{
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}

void dynbuf_reset(struct dynbuf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = '\0';
}

int dynbuf_add(struct dynbuf *b, const void *data, size_t len)
{
        if (len > b->cap || b->len > b->cap - len)
                return -E2BIG;
        size_t need = b->len + len + 1;
        if (need > b->alloc) {
                size_t n = b->alloc ? b->alloc : 64;
                while (n < need)
                        n *= 2;
                if (n > b->cap + 1)
                        n = b->cap + 1;
                char *p = realloc(b->data, n);
                if (!p)
                        return -ENOMEM;
                b->data = p;
                b->alloc = n;
        }
        if (len)
                memcpy(b->data + b->len, data, len);
        b->len += len;
        b->data[b->len] = '\0';
        return 0;
}

int dynbuf_addstr(struct dynbuf *b, const char *s)
{
        return dynbuf_add(b, s, strlen(s));
}

int dynbuf_printf(struct dynbuf *b, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *s = NULL;
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        int r = dynbuf_add(b, s, (size_t)n);
        free(s);
        return r;
}

char *dynbuf_steal(struct dynbuf *b)
{
        char *p = b->data;
        if (!p)
                p = strdup("");
        b->data = NULL;
        b->len = b->alloc = 0;
        return p;
}
