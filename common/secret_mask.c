/* The secret masker: an Aho-Corasick automaton over the values, run byte
 * by byte over a window of held-back output.
 *
 * Why a byte may go out: the automaton's state is the longest suffix of
 * the stream that is a prefix of some value, so an occurrence not yet
 * complete can only start inside the last depth(state) bytes.  Everything
 * before them is decided: emitted as it is, or replaced where a run of
 * occurrences covers it.  Each state also knows the longest value that
 * ends there (its own or a fail link's): all shorter ones ending at the
 * same byte lie inside it, so that one occurrence per byte is enough to
 * build the union of what must be masked. */
#include "common/secret_mask.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROOT 0u
#define OUT_CAP 16384

struct edge {
        uint32_t child;
        unsigned char byte;
};

struct node {
        uint32_t fail;
        uint32_t depth;
        uint32_t out;     /* length of the longest value ending here, 0 if none */
        uint32_t edges;   /* first of its edges in secret_mask.edges, by byte */
        uint32_t n_edges; /* 0..256 */
};

/* Bytes [start, end) of the stream (absolute positions) are one "***".
 * announced: the "***" has gone out (the run started before the window);
 * the rest of its bytes are dropped as they leave. */
struct run {
        uint64_t start, end;
        bool announced;
};

struct secret_mask {
        struct node *nodes;
        size_t n_nodes;
        struct edge *edges;
        uint32_t root_next[256]; /* the root's transitions, resolved: hot */
        size_t max_len;

        /* One stream's state. */
        uint32_t state;
        uint64_t pos;        /* bytes fed so far */
        unsigned char *ring; /* the held bytes [pos - held, pos) */
        size_t ring_cap, ring_head, held;
        struct run *runs; /* disjoint, in order, a deque */
        size_t runs_cap, runs_head, runs_len;
        secret_mask_emit_fn emit;
        void *ctx;
        int err; /* emit's first error: nothing more goes out */
        size_t out_len;
        char out[OUT_CAP];
};

/* --- building ------------------------------------------------------------ */

/* The trie while values go in: children as sibling lists. */
struct trie {
        uint32_t *first_child, *next_sibling, *depth;
        unsigned char *byte;
        bool *terminal;
        size_t n;
};

typedef int (*pattern_fn)(void *ctx, const unsigned char *p, size_t n);

/* Calls fn on each byte string a value masks: the value, and each of a
 * multi-line value's lines (without a trailing "\r"), when long enough. */
static int for_each_pattern(const char *value, size_t len, pattern_fn fn, void *ctx)
{
        const unsigned char *v = (const unsigned char *)value;
        if (len < SECRET_MASK_MIN_LEN)
                return 0;
        int r = fn(ctx, v, len);
        if (r < 0 || !memchr(v, '\n', len))
                return r;
        size_t start = 0;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && v[i] != '\n')
                        continue;
                size_t n = i - start;
                if (n && v[start + n - 1] == '\r')
                        n--;
                if (n >= SECRET_MASK_MIN_LEN && n < len) {
                        r = fn(ctx, v + start, n);
                        if (r < 0)
                                return r;
                }
                start = i + 1;
        }
        return 0;
}

struct sizing {
        size_t total, max_len;
};

static int size_pattern(void *ctx, const unsigned char *p, size_t n)
{
        (void)p;
        struct sizing *s = ctx;
        s->total += n;
        if (n > s->max_len)
                s->max_len = n;
        return 0;
}

static int trie_insert(void *ctx, const unsigned char *p, size_t n)
{
        struct trie *t = ctx;
        uint32_t u = ROOT;
        for (size_t i = 0; i < n; i++) {
                uint32_t v = t->first_child[u];
                while (v && t->byte[v] != p[i])
                        v = t->next_sibling[v];
                if (!v) {
                        v = (uint32_t)t->n++;
                        t->byte[v] = p[i];
                        t->depth[v] = t->depth[u] + 1;
                        t->next_sibling[v] = t->first_child[u];
                        t->first_child[u] = v;
                }
                u = v;
        }
        t->terminal[u] = true;
        return 0;
}

static void trie_done(struct trie *t, size_t cap)
{
        if (t->byte)
                explicit_bzero(t->byte, cap);
        free(t->first_child);
        free(t->next_sibling);
        free(t->depth);
        free(t->byte);
        free(t->terminal);
}

static int edge_cmp(const void *a, const void *b)
{
        const struct edge *x = a, *y = b;
        return (int)x->byte - (int)y->byte;
}

static uint32_t child(const struct secret_mask *m, uint32_t s, unsigned char c)
{
        const struct edge *e = m->edges + m->nodes[s].edges;
        size_t lo = 0, hi = m->nodes[s].n_edges;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (e[mid].byte == c)
                        return e[mid].child;
                if (e[mid].byte < c)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return ROOT; /* the root is nobody's child: "none" */
}

static uint32_t step(const struct secret_mask *m, uint32_t s, unsigned char c)
{
        for (;;) {
                if (s == ROOT)
                        return m->root_next[c];
                uint32_t v = child(m, s, c);
                if (v != ROOT)
                        return v;
                s = m->nodes[s].fail;
        }
}

/* Copies the trie's edges into sorted arrays, then sets each node's fail
 * link and longest match in breadth-first order (a node's fail link is
 * shallower, so it is ready when the node is reached). */
static int build_automaton(struct secret_mask *m, const struct trie *t)
{
        m->n_nodes = t->n;
        m->nodes = calloc(t->n, sizeof(*m->nodes));
        m->edges = calloc(t->n, sizeof(*m->edges));
        uint32_t *queue = calloc(t->n, sizeof(*queue));
        if (!m->nodes || !m->edges || !queue) {
                free(queue);
                return -ENOMEM;
        }
        size_t off = 0;
        for (size_t u = 0; u < t->n; u++) {
                m->nodes[u].depth = t->depth[u];
                m->nodes[u].edges = (uint32_t)off;
                for (uint32_t v = t->first_child[u]; v; v = t->next_sibling[v])
                        m->edges[off++] = (struct edge){ .child = v, .byte = t->byte[v] };
                m->nodes[u].n_edges = (uint32_t)(off - m->nodes[u].edges);
                qsort(m->edges + m->nodes[u].edges, m->nodes[u].n_edges, sizeof(struct edge),
                      edge_cmp);
        }
        size_t head = 0, tail = 0;
        for (uint32_t i = 0; i < m->nodes[ROOT].n_edges; i++) {
                const struct edge *e = &m->edges[m->nodes[ROOT].edges + i];
                m->root_next[e->byte] = e->child;
                queue[tail++] = e->child;
        }
        while (head < tail) {
                uint32_t u = queue[head++];
                struct node *nu = &m->nodes[u];
                nu->out = t->terminal[u] ? nu->depth : m->nodes[nu->fail].out;
                for (uint32_t i = 0; i < nu->n_edges; i++) {
                        const struct edge *e = &m->edges[nu->edges + i];
                        m->nodes[e->child].fail = step(m, nu->fail, e->byte);
                        queue[tail++] = e->child;
                }
        }
        free(queue);
        return 0;
}

static int build(struct secret_mask *m, const char *const *values, const size_t *lens, size_t n)
{
        struct sizing size = { 0 };
        size_t values_total = 0;
        for (size_t i = 0; i < n; i++) {
                if (lens[i] < SECRET_MASK_MIN_LEN)
                        continue;
                if (lens[i] > SECRET_MASK_MAX_TOTAL - values_total)
                        return -E2BIG;
                values_total += lens[i];
                for_each_pattern(values[i], lens[i], size_pattern, &size);
        }
        /* Lines repeat their value's bytes: at most twice the values' total. */
        size_t cap = size.total + 1;
        struct trie t = { 0 };
        t.first_child = calloc(cap, sizeof(uint32_t));
        t.next_sibling = calloc(cap, sizeof(uint32_t));
        t.depth = calloc(cap, sizeof(uint32_t));
        t.byte = calloc(cap, 1);
        t.terminal = calloc(cap, sizeof(bool));
        t.n = 1;
        int r = -ENOMEM;
        if (t.first_child && t.next_sibling && t.depth && t.byte && t.terminal) {
                for (size_t i = 0; i < n; i++)
                        for_each_pattern(values[i], lens[i], trie_insert, &t);
                r = build_automaton(m, &t);
        }
        trie_done(&t, cap);
        m->max_len = size.max_len;
        return r;
}

struct secret_mask *secret_mask_new(const char *const *values, const size_t *lens, size_t n)
{
        struct secret_mask *m = calloc(1, sizeof(*m));
        if (!m) {
                errno = ENOMEM;
                return NULL;
        }
        int r = build(m, values, lens, n);
        if (r == 0 && m->max_len) {
                /* The window holds depth(state) <= max_len bytes, plus the
                 * one just fed; runs are disjoint and at least
                 * SECRET_MASK_MIN_LEN long, one may start before it. */
                m->ring_cap = m->max_len + 1;
                m->runs_cap = m->ring_cap / SECRET_MASK_MIN_LEN + 2;
                m->ring = malloc(m->ring_cap);
                m->runs = calloc(m->runs_cap, sizeof(*m->runs));
                if (!m->ring || !m->runs)
                        r = -ENOMEM;
        }
        if (r < 0) {
                secret_mask_free(m);
                errno = -r;
                return NULL;
        }
        return m;
}

void secret_mask_free(struct secret_mask *m)
{
        if (!m)
                return;
        if (m->edges)
                explicit_bzero(m->edges, m->n_nodes * sizeof(*m->edges));
        if (m->ring)
                explicit_bzero(m->ring, m->ring_cap);
        explicit_bzero(m->root_next, sizeof(m->root_next));
        explicit_bzero(m->out, sizeof(m->out));
        free(m->nodes);
        free(m->edges);
        free(m->ring);
        free(m->runs);
        free(m);
}

bool secret_mask_empty(const struct secret_mask *m)
{
        return !m || m->max_len == 0;
}

/* --- streaming ----------------------------------------------------------- */

static void out_drain(struct secret_mask *m)
{
        if (m->out_len && !m->err) {
                int r = m->emit(m->ctx, m->out, m->out_len);
                if (r < 0)
                        m->err = r;
        }
        m->out_len = 0;
}

static void out_put(struct secret_mask *m, const void *p, size_t n)
{
        if (m->err || !n)
                return;
        if (m->out_len + n > OUT_CAP)
                out_drain(m);
        if (n >= OUT_CAP) {
                int r = m->emit(m->ctx, p, n);
                if (r < 0)
                        m->err = r;
                return;
        }
        memcpy(m->out + m->out_len, p, n);
        m->out_len += n;
}

/* Takes n bytes off the front of the window, emitting them (keep) or not. */
static void ring_take(struct secret_mask *m, size_t n, bool keep)
{
        size_t first = m->ring_cap - m->ring_head;
        if (first > n)
                first = n;
        if (keep) {
                out_put(m, m->ring + m->ring_head, first);
                out_put(m, m->ring, n - first);
        }
        m->ring_head = (m->ring_head + n) % m->ring_cap;
        m->held -= n;
}

static struct run *run_at(struct secret_mask *m, size_t i)
{
        return &m->runs[(m->runs_head + i) % m->runs_cap];
}

/* Adds the occurrence [start, end), end being the byte just fed: it merges
 * with the runs it overlaps (only the last ones can). */
static void add_occurrence(struct secret_mask *m, uint64_t start, uint64_t end)
{
        bool announced = false;
        while (m->runs_len && run_at(m, m->runs_len - 1)->end > start) {
                struct run *last = run_at(m, m->runs_len - 1);
                if (last->start < start)
                        start = last->start;
                announced |= last->announced;
                m->runs_len--;
        }
        *run_at(m, m->runs_len++) = (struct run){ start, end, announced };
}

/* Emits the first n held bytes, decided: masked where a run covers them. */
static void release(struct secret_mask *m, size_t n)
{
        uint64_t front = m->pos - m->held, stop = front + n;
        while (front < stop) {
                struct run *r = m->runs_len ? run_at(m, 0) : NULL;
                if (!r || r->start >= stop) {
                        ring_take(m, (size_t)(stop - front), true);
                        return;
                }
                if (r->start > front) {
                        ring_take(m, (size_t)(r->start - front), true);
                        front = r->start;
                }
                if (!r->announced) {
                        out_put(m, SECRET_MASK_REPLACEMENT, strlen(SECRET_MASK_REPLACEMENT));
                        r->announced = true;
                }
                uint64_t to = r->end < stop ? r->end : stop;
                ring_take(m, (size_t)(to - front), false);
                front = to;
                if (r->end <= stop) {
                        m->runs_head = (m->runs_head + 1) % m->runs_cap;
                        m->runs_len--;
                }
        }
}

static void feed(struct secret_mask *m, unsigned char c)
{
        uint32_t s = step(m, m->state, c);
        m->state = s;
        m->ring[(m->ring_head + m->held) % m->ring_cap] = c;
        m->held++;
        m->pos++;
        if (m->nodes[s].out)
                add_occurrence(m, m->pos - m->nodes[s].out, m->pos);
        if (m->held > m->nodes[s].depth)
                release(m, m->held - m->nodes[s].depth);
}

int secret_mask_write(struct secret_mask *m, const char *p, size_t n, secret_mask_emit_fn emit,
                      void *ctx)
{
        if (secret_mask_empty(m))
                return n ? emit(ctx, p, n) : 0;
        if (m->err)
                return m->err;
        m->emit = emit;
        m->ctx = ctx;
        const unsigned char *u = (const unsigned char *)p;
        size_t i = 0;
        while (i < n && !m->err) {
                if (m->state == ROOT && m->held == 0) {
                        /* Nothing pending: bytes that start no value pass
                         * in one piece, the common case. */
                        size_t j = i;
                        while (j < n && m->root_next[u[j]] == ROOT)
                                j++;
                        out_put(m, p + i, j - i);
                        m->pos += j - i;
                        i = j;
                        if (i == n)
                                break;
                }
                feed(m, u[i++]);
        }
        out_drain(m);
        return m->err;
}

int secret_mask_flush(struct secret_mask *m, secret_mask_emit_fn emit, void *ctx)
{
        if (secret_mask_empty(m))
                return 0;
        m->emit = emit;
        m->ctx = ctx;
        release(m, m->held);
        out_drain(m);
        int r = m->err;
        m->err = 0;
        m->state = ROOT;
        m->held = 0;
        m->ring_head = 0;
        m->runs_len = 0;
        m->runs_head = 0;
        explicit_bzero(m->ring, m->ring_cap);
        return r;
}
