/* A growable byte buffer with a hard cap, so nothing a user controls can
 * make us allocate without bound (curl's dynbuf idea).  The contents are
 * always NUL-terminated for convenience; len excludes the NUL. */
#ifndef BC_COMMON_DYNBUF_H
#define BC_COMMON_DYNBUF_H

#include <stdarg.h>
#include <stddef.h>

struct dynbuf {
        char *data;
        size_t len;
        size_t alloc;
        size_t cap; /* most bytes it may ever hold */
};

void dynbuf_init(struct dynbuf *b, size_t cap);
/* Frees the contents; the buffer can be reused after dynbuf_init. NULL-safe. */
void dynbuf_done(struct dynbuf *b);
static inline void dynbuf_donep(struct dynbuf *b)
{
        dynbuf_done(b);
}
void dynbuf_reset(struct dynbuf *b);

/* Appends; returns 0, -ENOMEM, or -E2BIG when the cap would be exceeded
 * (nothing is appended then). */
int dynbuf_add(struct dynbuf *b, const void *data, size_t len);
int dynbuf_addstr(struct dynbuf *b, const char *s);
int dynbuf_printf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands the contents to the caller (free() them) and empties b. Never NULL
 * unless out of memory. */
char *dynbuf_steal(struct dynbuf *b);

#endif
