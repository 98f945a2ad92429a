#include "worker/job/livelog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/secret_mask.h"
#include "worker/db/db.h"

#define FLUSH_BYTES (64 * 1024)
#define FLUSH_MS 200
/* A batch the database did not take is kept (while it is under
 * FLUSH_BYTES) and tried again this much later, or goes with the result. */
#define RETRY_MS 1000

void livelog_init(struct livelog *l, const char *job_id, int attempt, int first_seq,
                  uint64_t stored_before, uint64_t cap, livelog_append_fn *append, void *ctx)
{
        memset(l, 0, sizeof(*l));
        l->job_id = job_id;
        l->attempt = attempt;
        l->cap = cap;
        l->stored = stored_before;
        /* Only the marker takes the stored bytes past the cap: an earlier
         * run stored it already. */
        l->capped = cap && stored_before > cap;
        l->next_seq = first_seq;
        l->append = append;
        l->append_ctx = ctx;
        dynbuf_init(&l->pending, FLUSH_BYTES * 2);
}

static int add_hex(struct dynbuf *b, const char *data, size_t len)
{
        static const char hex[] = "0123456789abcdef";
        int r = 0;
        for (size_t k = 0; k < len && r == 0; k++) {
                unsigned char byte = (unsigned char)data[k];
                char pair[2] = { hex[byte >> 4], hex[byte & 15] };
                r |= dynbuf_add(b, pair, 2);
        }
        return r;
}

/* Text array literal of the streams, bytea array literal of the chunks in
 * hex: {"\\x6869","\\x0a"}. */
static int build_arrays(const struct livelog *l, char **ret_streams, char **ret_chunks)
{
        struct dynbuf s, c;
        dynbuf_init(&s, 4096);
        dynbuf_init(&c, (size_t)FLUSH_BYTES * 5 + 4096);
        int r = dynbuf_addstr(&s, "{") | dynbuf_addstr(&c, "{");
        size_t off = 0;
        for (size_t i = 0; i < l->n_chunks && r == 0; i++) {
                r |= dynbuf_printf(&s, "%s%d", i ? "," : "", l->chunk_stream[i]);
                r |= dynbuf_addstr(&c, i ? ",\"\\\\x" : "\"\\\\x");
                r |= add_hex(&c, l->pending.data + off, l->chunk_len[i]);
                r |= dynbuf_addstr(&c, "\"");
                off += l->chunk_len[i];
        }
        r |= dynbuf_addstr(&s, "}") | dynbuf_addstr(&c, "}");
        if (r != 0) {
                dynbuf_done(&s);
                dynbuf_done(&c);
                return -1;
        }
        *ret_streams = dynbuf_steal(&s);
        *ret_chunks = dynbuf_steal(&c);
        return 0;
}

static void reset_pending(struct livelog *l)
{
        dynbuf_reset(&l->pending);
        l->n_chunks = 0;
        l->first_pending_ms = 0;
}

static void drop_pending(struct livelog *l)
{
        l->dropped += l->pending.len;
        reset_pending(l);
}

int livelog_batch_store(PGconn *conn, const struct livelog_batch *b, struct bc_error *err)
{
        char attempt[16], seq[16];
        snprintf(attempt, sizeof(attempt), "%d", b->attempt);
        snprintf(seq, sizeof(seq), "%d", b->first_seq);
        const char *p[] = { b->job_id, attempt, seq, b->streams, b->chunks };
        _cleanup_pgresult_ PGresult *res = db_exec_hot(
                conn,
                "select boxcar.append_logs($1::uuid, $2::int, $3::int, "
                "$4::smallint[], $5::bytea[])",
                5, p, err);
        return res ? 0 : -EIO;
}

void livelog_flush(struct livelog *l)
{
        if (!l->n_chunks)
                return;
        _cleanup_free_ char *streams = NULL, *chunks = NULL;
        struct bc_error err = BC_ERROR_INIT;
        bool stored = false;
        if (l->append && build_arrays(l, &streams, &chunks) == 0) {
                struct livelog_batch b = { .job_id = l->job_id,
                                           .attempt = l->attempt,
                                           .first_seq = l->next_seq,
                                           .streams = streams,
                                           .chunks = chunks };
                stored = l->append(l->append_ctx, &b, &err) >= 0;
        }
        bc_error_clear(&err);
        if (stored) {
                l->next_seq += (int)l->n_chunks;
                l->stored += l->pending.len;
                reset_pending(l);
        } else if (l->pending.len < FLUSH_BYTES && l->n_chunks < LIVELOG_MAX_CHUNKS) {
                l->retry_ms = bc_mono_ms() + RETRY_MS;
        } else {
                drop_pending(l);
        }
}

static void flush_masks(struct livelog *l);

char *livelog_take(struct livelog *l)
{
        flush_masks(l);
        if (!l->n_chunks)
                return NULL;
        struct dynbuf b;
        dynbuf_init(&b, (size_t)FLUSH_BYTES * 5 + 4096);
        int r = dynbuf_printf(&b, "{\"seq\": %d, \"chunks\": [", l->next_seq);
        size_t off = 0;
        for (size_t i = 0; i < l->n_chunks && r == 0; i++) {
                r |= dynbuf_printf(&b, "%s[%d, \"", i ? ", " : "", l->chunk_stream[i]);
                r |= add_hex(&b, l->pending.data + off, l->chunk_len[i]);
                r |= dynbuf_addstr(&b, "\"]");
                off += l->chunk_len[i];
        }
        r |= dynbuf_addstr(&b, "]}");
        if (r != 0) {
                dynbuf_done(&b);
                livelog_flush(l);
                return NULL;
        }
        l->next_seq += (int)l->n_chunks;
        l->stored += l->pending.len;
        reset_pending(l);
        return dynbuf_steal(&b);
}

static void add_chunk(struct livelog *l, int stream, const char *data, size_t len)
{
        if (l->n_chunks == LIVELOG_MAX_CHUNKS || l->pending.len + len > FLUSH_BYTES * 2)
                livelog_flush(l);
        /* Kept after a failed flush, and no room for more. */
        if (l->n_chunks == LIVELOG_MAX_CHUNKS || l->pending.len + len > FLUSH_BYTES * 2)
                drop_pending(l);
        /* Consecutive writes to one stream share a chunk. */
        if (l->n_chunks && l->chunk_stream[l->n_chunks - 1] == stream) {
                dynbuf_add(&l->pending, data, len);
                l->chunk_len[l->n_chunks - 1] += len;
        } else {
                dynbuf_add(&l->pending, data, len);
                l->chunk_stream[l->n_chunks] = (short)stream;
                l->chunk_len[l->n_chunks++] = len;
        }
        if (!l->first_pending_ms)
                l->first_pending_ms = bc_mono_ms();
}

static void store_write(struct livelog *l, int stream, const char *data, size_t len)
{
        if (l->cap == 0)
                return; /* live logs turned off */
        if (stream == 1 || stream == 2) {
                uint64_t room = l->stored + l->pending.len < l->cap
                                        ? l->cap - l->stored - l->pending.len
                                        : 0;
                size_t take = len < room ? len : (size_t)room;
                while (take > 0) {
                        size_t part = take > FLUSH_BYTES ? FLUSH_BYTES : take;
                        add_chunk(l, stream, data, part);
                        data += part;
                        take -= part;
                        len -= part;
                        if (l->pending.len >= FLUSH_BYTES)
                                livelog_flush(l);
                }
                if (len > 0 && !l->capped) {
                        l->capped = true;
                        static const char marker[] =
                                "\n[boxcar: log limit reached; the rest "
                                "of the output is only in the result's tail]\n";
                        add_chunk(l, 2, marker, sizeof(marker) - 1);
                }
                l->dropped += len;
        }
        uint64_t now = bc_mono_ms();
        if (l->n_chunks && (l->pending.len >= FLUSH_BYTES ||
                            (now - l->first_pending_ms >= FLUSH_MS && now >= l->retry_ms)))
                livelog_flush(l);
}

struct mask_sink {
        struct livelog *l;
        int stream;
};

static int mask_emit(void *ctx, const char *p, size_t n)
{
        struct mask_sink *s = ctx;
        store_write(s->l, s->stream, p, n);
        return 0;
}

void livelog_write(struct livelog *l, int stream, const char *data, size_t len)
{
        struct secret_mask *m = stream == 1 || stream == 2 ? l->mask[stream - 1] : NULL;
        if (!m || secret_mask_empty(m)) {
                store_write(l, stream, data, len);
                return;
        }
        struct mask_sink s = { l, stream };
        secret_mask_write(m, data, len, mask_emit, &s);
        store_write(l, 0, NULL, 0); /* the timed flush */
}

/* What the masks hold back (a possible start of a secret) goes out,
 * masked, before the last batch. */
static void flush_masks(struct livelog *l)
{
        for (int i = 0; i < 2; i++)
                if (l->mask[i]) {
                        struct mask_sink s = { l, i + 1 };
                        secret_mask_flush(l->mask[i], mask_emit, &s);
                }
}

void livelog_set_masks(struct livelog *l, struct secret_mask *out, struct secret_mask *err)
{
        l->mask[0] = out;
        l->mask[1] = err;
}

void livelog_done(struct livelog *l)
{
        flush_masks(l);
        livelog_flush(l);
        drop_pending(l);
        dynbuf_done(&l->pending);
}
