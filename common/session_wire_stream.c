/* The framing of a byte stream into session frames (session_wire.h's
 * sw_stream): bytes are fed as they come off the socket, whole frames are
 * taken out, and a header announcing more than SW_PAYLOAD_MAX is an error
 * from then on (the peer is broken or hostile: the stream cannot be
 * resynchronised). */
#include "common/session_wire.h"

#include <errno.h>
#include <string.h>

/* What the buffer may hold: a whole frame not yet taken and a feed as big
 * again.  A caller that takes every whole frame after each feed holds at
 * most one partial frame, so it can feed up to a frame's size at a time. */
#define SW_STREAM_CAP (2 * (sizeof(struct sw_header) + (size_t)SW_PAYLOAD_MAX))
/* Above this, an emptied buffer is given back rather than kept. */
#define SW_STREAM_KEEP (256u * 1024)

void sw_stream_init(struct sw_stream *s)
{
        dynbuf_init(&s->buf, SW_STREAM_CAP);
        s->taken = 0;
}

void sw_stream_done(struct sw_stream *s)
{
        dynbuf_done(&s->buf);
        s->taken = 0;
}

/* Drops the frames already taken, so the buffer holds only what is still
 * to come (their payloads, handed out by take, are invalid from here). */
static void stream_compact(struct sw_stream *s)
{
        if (s->taken == 0)
                return;
        size_t rest = s->buf.len - s->taken;
        if (rest == 0 && s->buf.alloc > SW_STREAM_KEEP) {
                dynbuf_done(&s->buf);
                dynbuf_init(&s->buf, SW_STREAM_CAP);
        } else {
                memmove(s->buf.data, s->buf.data + s->taken, rest);
                s->buf.len = rest;
                s->buf.data[rest] = '\0';
        }
        s->taken = 0;
}

static int header_at(const struct sw_stream *s, struct sw_header *ret)
{
        if (s->buf.len - s->taken < sizeof(*ret))
                return 0;
        struct sw_header h;
        memcpy(&h, s->buf.data + s->taken, sizeof(h));
        if (h.len > SW_PAYLOAD_MAX)
                return -EMSGSIZE;
        *ret = h;
        return 1;
}

int sw_stream_feed(struct sw_stream *s, const void *data, size_t len)
{
        struct sw_header h;
        /* A header already known to be bad stays an error. */
        int r = header_at(s, &h);
        if (r < 0)
                return r;
        stream_compact(s);
        r = dynbuf_add(&s->buf, data, len);
        if (r < 0)
                return r == -E2BIG ? -ENOBUFS : r;
        r = header_at(s, &h);
        return r < 0 ? r : 0;
}

int sw_stream_take(struct sw_stream *s, struct sw_header *ret_hdr, const char **ret_payload)
{
        struct sw_header h;
        int r = header_at(s, &h);
        if (r <= 0)
                return r;
        if (s->buf.len - s->taken - sizeof(h) < h.len)
                return 0;
        *ret_payload = s->buf.data + s->taken + sizeof(h);
        *ret_hdr = h;
        s->taken += sizeof(h) + h.len;
        return 1;
}
