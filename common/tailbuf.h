/* Keeps the last `cap` bytes written to it (a job's stdout/stderr tail),
 * counting everything that passed through, in O(cap) memory however much
 * the job writes. */
#ifndef BC_COMMON_TAILBUF_H
#define BC_COMMON_TAILBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tailbuf {
        char *ring;
        size_t cap;
        size_t start;   /* index of the oldest kept byte */
        size_t len;     /* bytes kept, <= cap */
        uint64_t total; /* bytes ever written */
};

/* Returns 0 or -ENOMEM.  cap may be 0 (keeps nothing, still counts). */
int tailbuf_init(struct tailbuf *t, size_t cap);
void tailbuf_done(struct tailbuf *t);
void tailbuf_write(struct tailbuf *t, const void *data, size_t len);
bool tailbuf_truncated(const struct tailbuf *t);
/* Copies the kept bytes, in order, into a new NUL-terminated heap string
 * (embedded NULs kept; *ret_len gets the length).  NULL on ENOMEM. */
char *tailbuf_copy(const struct tailbuf *t, size_t *ret_len);

#endif
