/* The session agent's frames (session_wire.h): writers that append to a
 * capped buffer and leave a whole frame or none, readers that never step
 * past a payload, the messages' encoders and decoders (the stream's
 * framing is session_wire_stream.c).  Both the worker and the agent link
 * this file; the agent is static, so it uses nothing but libc and dynbuf. */
#include "common/session_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Strings in one payload: each takes at least its NUL, so a count above
 * the bytes left is malformed before anything is allocated for it. */
#define SW_STRV_MAX (1u << 20)

static int put(struct dynbuf *out, const void *data, size_t len)
{
        int r = dynbuf_add(out, data, len);
        /* The buffer's cap is the caller's frame limit. */
        return r == -E2BIG ? -EMSGSIZE : r;
}

int sw_frame_begin(struct dynbuf *out, enum sw_type type, uint32_t seq, size_t *ret_start)
{
        struct sw_header h = { .len = 0, .type = (uint8_t)type, .seq = seq };
        size_t start = out->len;
        int r = put(out, &h, sizeof(h));
        if (r < 0)
                return r;
        *ret_start = start;
        return 0;
}

int sw_frame_end(struct dynbuf *out, size_t start)
{
        size_t len = out->len - start - sizeof(struct sw_header);
        if (len > SW_PAYLOAD_MAX) {
                /* Nothing of a frame the peer would refuse stays behind. */
                out->len = start;
                out->data[start] = '\0';
                return -EMSGSIZE;
        }
        uint32_t l = (uint32_t)len;
        memcpy(out->data + start + offsetof(struct sw_header, len), &l, sizeof(l));
        return 0;
}

int sw_put_u8(struct dynbuf *out, uint8_t v)
{
        return put(out, &v, sizeof(v));
}

int sw_put_u32(struct dynbuf *out, uint32_t v)
{
        return put(out, &v, sizeof(v));
}

int sw_put_i32(struct dynbuf *out, int32_t v)
{
        return put(out, &v, sizeof(v));
}

int sw_put_u64(struct dynbuf *out, uint64_t v)
{
        return put(out, &v, sizeof(v));
}

int sw_put_i64(struct dynbuf *out, int64_t v)
{
        return put(out, &v, sizeof(v));
}

int sw_put_str(struct dynbuf *out, const char *s)
{
        if (!s)
                s = "";
        return put(out, s, strlen(s) + 1);
}

int sw_put_blob(struct dynbuf *out, const void *data, uint32_t len)
{
        int r = sw_put_u32(out, len);
        if (r < 0)
                return r;
        return put(out, data, len);
}

int sw_put_strv(struct dynbuf *out, char *const *v)
{
        uint32_t n = 0;
        while (v && v[n])
                n++;
        int r = sw_put_u32(out, n);
        for (uint32_t i = 0; r == 0 && i < n; i++)
                r = sw_put_str(out, v[i]);
        return r;
}

/* Ends the frame begun at start, or takes it back out of out when one of
 * its fields failed (r < 0): an encoder leaves a whole frame or none. */
static int frame_finish(struct dynbuf *out, size_t start, int r)
{
        if (r == 0)
                return sw_frame_end(out, start);
        out->len = start;
        if (out->data)
                out->data[start] = '\0';
        return r;
}

int sw_encode_run(struct dynbuf *out, uint32_t seq, const struct sw_run *x)
{
        size_t start;
        int r = sw_frame_begin(out, SW_RUN, seq, &start);
        if (r < 0)
                return r;
        r = sw_put_strv(out, x->argv);
        if (r == 0)
                r = sw_put_strv(out, x->env);
        if (r == 0)
                r = sw_put_str(out, x->cwd);
        if (r == 0)
                r = sw_put_blob(out, x->stdin_data, x->stdin_len);
        return frame_finish(out, start, r);
}

static int put_file_req(struct dynbuf *out, const struct sw_file_req *op)
{
        int r = sw_put_u8(out, op->op);
        if (r == 0)
                r = sw_put_u8(out, op->flags);
        if (r == 0)
                r = sw_put_str(out, op->path);
        if (r == 0)
                r = sw_put_str(out, op->to);
        if (r == 0)
                r = sw_put_blob(out, op->data, op->data_len);
        return r;
}

int sw_encode_files(struct dynbuf *out, uint32_t seq, const struct sw_files *f)
{
        size_t start;
        int r = sw_frame_begin(out, SW_FILES, seq, &start);
        if (r < 0)
                return r;
        r = sw_put_u32(out, f->max_read);
        if (r == 0)
                r = sw_put_u32(out, f->n);
        for (uint32_t i = 0; r == 0 && i < f->n; i++)
                r = put_file_req(out, &f->ops[i]);
        return frame_finish(out, start, r);
}

int sw_encode_code(struct dynbuf *out, uint32_t seq, const struct sw_code *c)
{
        size_t start;
        int r = sw_frame_begin(out, SW_CODE, seq, &start);
        if (r < 0)
                return r;
        r = sw_put_str(out, c->language);
        if (r == 0)
                r = sw_put_str(out, c->source);
        if (r == 0)
                r = sw_put_str(out, c->arguments);
        if (r == 0)
                r = sw_put_strv(out, c->env);
        if (r == 0)
                r = sw_put_str(out, c->cwd);
        return frame_finish(out, start, r);
}

int sw_encode_exit(struct dynbuf *out, uint32_t seq, const struct sw_exit *x)
{
        size_t start;
        int r = sw_frame_begin(out, SA_EXIT, seq, &start);
        if (r < 0)
                return r;
        r = sw_put_i32(out, x->wstatus);
        if (r == 0)
                r = sw_put_i32(out, x->exec_errno);
        if (r == 0)
                r = sw_put_u64(out, x->cpu_us);
        if (r == 0)
                r = sw_put_u64(out, x->max_rss_kb);
        return frame_finish(out, start, r);
}

static int put_entry(struct dynbuf *out, const struct sw_entry *e)
{
        int r = sw_put_u8(out, (uint8_t)e->type);
        if (r == 0)
                r = sw_put_u32(out, e->mode);
        if (r == 0)
                r = sw_put_u64(out, e->size);
        if (r == 0)
                r = sw_put_i64(out, e->mtime_ns);
        if (r == 0)
                r = sw_put_str(out, e->name);
        return r;
}

int sw_encode_file_result(struct dynbuf *out, uint32_t seq, const struct sw_file_result *x)
{
        size_t start;
        int r = sw_frame_begin(out, SA_FILE, seq, &start);
        if (r < 0)
                return r;
        r = sw_put_u32(out, x->index);
        if (r == 0)
                r = sw_put_i32(out, x->err);
        if (r == 0)
                r = sw_put_u8(out, x->truncated ? 1 : 0);
        if (r == 0)
                r = sw_put_u64(out, x->size);
        if (r == 0)
                r = sw_put_u32(out, x->n_entries);
        for (uint32_t i = 0; r == 0 && i < x->n_entries; i++)
                r = put_entry(out, &x->entries[i]);
        if (r == 0)
                r = sw_put_blob(out, x->data, x->data_len);
        return frame_finish(out, start, r);
}

int sw_encode_code_done(struct dynbuf *out, uint32_t seq, const struct sw_code_done *d)
{
        size_t start;
        int r = sw_frame_begin(out, SA_CODE_DONE, seq, &start);
        if (r < 0)
                return r;
        r = sw_put_u8(out, d->status);
        if (r == 0)
                r = sw_put_str(out, d->return_value);
        if (r == 0)
                r = sw_put_str(out, d->error);
        if (r == 0)
                r = sw_put_i32(out, d->wstatus);
        return frame_finish(out, start, r);
}

/* ---- readers ---------------------------------------------------------- */

static int get(struct sw_reader *r, void *ret, size_t len)
{
        if (r->left < len)
                return -EBADMSG;
        memcpy(ret, r->p, len);
        r->p += len;
        r->left -= len;
        return 0;
}

int sw_get_u8(struct sw_reader *r, uint8_t *ret)
{
        return get(r, ret, sizeof(*ret));
}

int sw_get_u32(struct sw_reader *r, uint32_t *ret)
{
        return get(r, ret, sizeof(*ret));
}

int sw_get_i32(struct sw_reader *r, int32_t *ret)
{
        return get(r, ret, sizeof(*ret));
}

int sw_get_u64(struct sw_reader *r, uint64_t *ret)
{
        return get(r, ret, sizeof(*ret));
}

int sw_get_i64(struct sw_reader *r, int64_t *ret)
{
        return get(r, ret, sizeof(*ret));
}

int sw_get_str(struct sw_reader *r, const char **ret)
{
        const char *nul = r->left ? memchr(r->p, '\0', r->left) : NULL;
        if (!nul)
                return -EBADMSG;
        size_t n = (size_t)(nul - r->p) + 1;
        *ret = r->p;
        r->p += n;
        r->left -= n;
        return 0;
}

int sw_get_blob(struct sw_reader *r, const char **ret, uint32_t *ret_len)
{
        struct sw_reader save = *r;
        uint32_t len;
        if (sw_get_u32(r, &len) < 0 || r->left < len) {
                *r = save;
                return -EBADMSG;
        }
        *ret = r->p;
        *ret_len = len;
        r->p += len;
        r->left -= len;
        return 0;
}

int sw_get_strv(struct sw_reader *r, uint32_t max, char ***ret)
{
        uint32_t n;
        int e = sw_get_u32(r, &n);
        if (e < 0)
                return e;
        if (n > max || n > SW_STRV_MAX || n > r->left)
                return -EBADMSG;
        char **v = calloc((size_t)n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                const char *s;
                e = sw_get_str(r, &s);
                if (e < 0) {
                        free(v);
                        return e;
                }
                v[i] = (char *)s;
        }
        *ret = v;
        return 0;
}

/* ---- decoders --------------------------------------------------------- */

/* A payload must end with its last field: bytes after it mean the two ends
 * disagree on the format. */
static int at_end(const struct sw_reader *r)
{
        return r->left == 0 ? 0 : -EBADMSG;
}

int sw_decode_run(const char *payload, size_t len, struct sw_run *ret)
{
        struct sw_reader r = { payload, len };
        char **argv = NULL, **env = NULL;
        const char *cwd = NULL, *in = NULL;
        uint32_t in_len = 0;
        int e = sw_get_strv(&r, SW_STRV_MAX, &argv);
        if (e == 0 && !argv[0])
                e = -EBADMSG; /* a command has at least its name */
        if (e == 0)
                e = sw_get_strv(&r, SW_STRV_MAX, &env);
        if (e == 0)
                e = sw_get_str(&r, &cwd);
        if (e == 0)
                e = sw_get_blob(&r, &in, &in_len);
        if (e == 0)
                e = at_end(&r);
        if (e < 0) {
                free(argv);
                free(env);
                return e;
        }
        *ret = (struct sw_run){ .argv = argv,
                                .env = env,
                                .cwd = cwd,
                                .stdin_data = in,
                                .stdin_len = in_len };
        return 0;
}

static int get_file_req(struct sw_reader *r, struct sw_file_req *op)
{
        int e = sw_get_u8(r, &op->op);
        if (e == 0)
                e = sw_get_u8(r, &op->flags);
        if (e == 0)
                e = sw_get_str(r, &op->path);
        if (e == 0)
                e = sw_get_str(r, &op->to);
        if (e == 0)
                e = sw_get_blob(r, &op->data, &op->data_len);
        if (e < 0)
                return e;
        if (op->op < SW_FILE_WRITE || op->op > SW_FILE_MOVE ||
            (op->flags & ~(SW_FILE_PARENTS | SW_FILE_RECURSIVE)))
                return -EBADMSG;
        return 0;
}

int sw_decode_files(const char *payload, size_t len, struct sw_files *ret)
{
        struct sw_reader r = { payload, len };
        uint32_t max_read, n;
        int e = sw_get_u32(&r, &max_read);
        if (e == 0)
                e = sw_get_u32(&r, &n);
        if (e < 0)
                return e;
        if (n > SW_FILES_MAX)
                return -EBADMSG;
        struct sw_file_req *ops = calloc(n ? n : 1, sizeof(*ops));
        if (!ops)
                return -ENOMEM;
        for (uint32_t i = 0; e == 0 && i < n; i++)
                e = get_file_req(&r, &ops[i]);
        if (e == 0)
                e = at_end(&r);
        if (e < 0) {
                free(ops);
                return e;
        }
        *ret = (struct sw_files){ .max_read = max_read, .n = n, .ops = ops };
        return 0;
}

int sw_decode_code(const char *payload, size_t len, struct sw_code *ret)
{
        struct sw_reader r = { payload, len };
        struct sw_code c = { 0 };
        int e = sw_get_str(&r, &c.language);
        if (e == 0)
                e = sw_get_str(&r, &c.source);
        if (e == 0)
                e = sw_get_str(&r, &c.arguments);
        if (e == 0)
                e = sw_get_strv(&r, SW_STRV_MAX, &c.env);
        if (e == 0)
                e = sw_get_str(&r, &c.cwd);
        if (e == 0)
                e = at_end(&r);
        if (e < 0) {
                free(c.env);
                return e;
        }
        *ret = c;
        return 0;
}

int sw_decode_exit(const char *payload, size_t len, struct sw_exit *ret)
{
        struct sw_reader r = { payload, len };
        struct sw_exit x;
        int e = sw_get_i32(&r, &x.wstatus);
        if (e == 0)
                e = sw_get_i32(&r, &x.exec_errno);
        if (e == 0)
                e = sw_get_u64(&r, &x.cpu_us);
        if (e == 0)
                e = sw_get_u64(&r, &x.max_rss_kb);
        if (e == 0)
                e = at_end(&r);
        if (e < 0)
                return e;
        *ret = x;
        return 0;
}

static int get_entry(struct sw_reader *r, struct sw_entry *x)
{
        uint8_t type;
        int e = sw_get_u8(r, &type);
        if (e == 0)
                e = sw_get_u32(r, &x->mode);
        if (e == 0)
                e = sw_get_u64(r, &x->size);
        if (e == 0)
                e = sw_get_i64(r, &x->mtime_ns);
        if (e == 0)
                e = sw_get_str(r, &x->name);
        if (e < 0)
                return e;
        if (!memchr("fdlo", type, 4))
                return -EBADMSG;
        x->type = (char)type;
        return 0;
}

int sw_decode_file_result(const char *payload, size_t len, struct sw_file_result *ret)
{
        struct sw_reader r = { payload, len };
        struct sw_file_result x = { 0 };
        uint8_t truncated;
        int e = sw_get_u32(&r, &x.index);
        if (e == 0)
                e = sw_get_i32(&r, &x.err);
        if (e == 0)
                e = sw_get_u8(&r, &truncated);
        if (e == 0)
                e = sw_get_u64(&r, &x.size);
        if (e == 0)
                e = sw_get_u32(&r, &x.n_entries);
        if (e < 0)
                return e;
        if (truncated > 1 || x.n_entries > SW_ENTRIES_MAX || x.n_entries > r.left)
                return -EBADMSG;
        x.truncated = truncated;
        x.entries = calloc(x.n_entries ? x.n_entries : 1, sizeof(*x.entries));
        if (!x.entries)
                return -ENOMEM;
        for (uint32_t i = 0; e == 0 && i < x.n_entries; i++)
                e = get_entry(&r, &x.entries[i]);
        if (e == 0)
                e = sw_get_blob(&r, &x.data, &x.data_len);
        if (e == 0)
                e = at_end(&r);
        if (e < 0) {
                free(x.entries);
                return e;
        }
        *ret = x;
        return 0;
}

int sw_decode_code_done(const char *payload, size_t len, struct sw_code_done *ret)
{
        struct sw_reader r = { payload, len };
        struct sw_code_done d;
        int e = sw_get_u8(&r, &d.status);
        if (e == 0)
                e = sw_get_str(&r, &d.return_value);
        if (e == 0)
                e = sw_get_str(&r, &d.error);
        if (e == 0)
                e = sw_get_i32(&r, &d.wstatus);
        if (e == 0)
                e = at_end(&r);
        if (e < 0)
                return e;
        if (d.status > SW_CODE_NO_INTERP)
                return -EBADMSG;
        *ret = d;
        return 0;
}
