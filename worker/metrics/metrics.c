#include "worker/metrics/metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/utf8.h"

#define HASH_SIZE 128u
/* A full registry (64 families × 1000 series × 34 lines) stays far below. */
#define RENDER_CAP (256u << 20)
#define DROPPED_NAME "boxcar_metrics_series_dropped_total"

const double metrics_buckets_seconds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,    2.5,
                                           5,     10,   30,    60,   120, 300,  900, 1800, 3600 };
const size_t metrics_n_buckets_seconds = ELEMENTSOF(metrics_buckets_seconds);

struct series {
        struct series *hnext; /* hash chain */
        struct series *next;  /* creation order */
        char *key;            /* the raw label values, each NUL-terminated */
        size_t key_len;
        char *labels; /* rendered: a="x",b="y" (escaped); "" without labels */
        double value; /* counter or gauge */
        double sum;   /* histogram */
        uint64_t count;
        uint64_t buckets[]; /* histogram: per bucket, not cumulative; last is +Inf */
};

struct family {
        char *name;
        char *help; /* already escaped */
        enum metrics_type type;
        size_t n_labels;
        char *label_names[METRICS_MAX_LABELS];
        size_t n_buckets;
        double bounds[METRICS_MAX_BUCKETS];
        char le[METRICS_MAX_BUCKETS][32];
        unsigned max_series;
        atomic_uint_fast64_t dropped;

        pthread_mutex_t lock; /* guards everything below */
        unsigned n_series;
        struct series *table[HASH_SIZE];
        struct series *first, **last;
};

struct metrics {
        pthread_mutex_t register_lock;
        struct family *families[METRICS_MAX_FAMILIES];
        /* Written with release after the family is complete, read with
         * acquire: lookups need no lock, and a registered family never
         * moves or goes away before metrics_free(). */
        atomic_size_t n_families;
};

/* ---- text helpers ---- */

char *metrics_format_double(double v, char *buf, size_t n)
{
        if (isnan(v)) {
                snprintf(buf, n, "NaN");
        } else if (isinf(v)) {
                snprintf(buf, n, "%s", v > 0 ? "+Inf" : "-Inf");
        } else if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
                snprintf(buf, n, "%.0f", v == 0 ? 0.0 : v); /* no "-0" */
        } else {
                for (int prec = 15; prec <= 17; prec++) {
                        snprintf(buf, n, "%.*g", prec, v);
                        if (strtod(buf, NULL) == v)
                                break;
                }
        }
        return buf;
}

/* Label values escape \, " and newline; HELP text escapes \ and newline. */
static int add_escaped(struct dynbuf *b, const char *s, bool quotes)
{
        int r = 0;
        for (const char *p = s; *p && r >= 0; p++) {
                if (*p == '\\')
                        r = dynbuf_add(b, "\\\\", 2);
                else if (*p == '\n')
                        r = dynbuf_add(b, "\\n", 2);
                else if (*p == '"' && quotes)
                        r = dynbuf_add(b, "\\\"", 2);
                else
                        r = dynbuf_add(b, p, 1);
        }
        return r;
}

static bool valid_name(const char *s, bool colons)
{
        if (!s || !*s)
                return false;
        for (const char *p = s; *p; p++) {
                bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                             (colons && *p == ':');
                if (!alpha && (p == s || !(*p >= '0' && *p <= '9')))
                        return false;
        }
        return true;
}

static bool valid_utf8(const char *s)
{
        _cleanup_free_ char *clean = utf8_sanitize(s, strlen(s));
        return clean && strcmp(clean, s) == 0;
}

/* ---- registration ---- */

static void free_all_series(struct family *f)
{
        for (struct series *s = f->first, *next; s; s = next) {
                next = s->next;
                free(s->key);
                free(s->labels);
                free(s);
        }
        memset(f->table, 0, sizeof(f->table));
        f->first = NULL;
        f->last = &f->first;
        f->n_series = 0;
}

static void family_free(struct family *f)
{
        if (!f)
                return;
        free_all_series(f);
        for (size_t i = 0; i < METRICS_MAX_LABELS; i++)
                free(f->label_names[i]);
        pthread_mutex_destroy(&f->lock);
        free(f->name);
        free(f->help);
        free(f);
}
BC_DEFINE_CLEANUP(struct family *, family_free)

static struct family *find_family(struct metrics *m, const char *name)
{
        size_t n = atomic_load_explicit(&m->n_families, memory_order_acquire);
        for (size_t i = 0; i < n; i++)
                if (strcmp(m->families[i]->name, name) == 0)
                        return m->families[i];
        return NULL;
}

static int check_labels(const struct metrics_desc *d, size_t *ret_n, struct bc_error *err)
{
        size_t n = 0;
        for (; d->labels && d->labels[n]; n++) {
                const char *l = d->labels[n];
                if (n == METRICS_MAX_LABELS)
                        return bc_error_set(err, BC_INTERNAL, E2BIG,
                                            "metric %s: more than %d labels", d->name,
                                            METRICS_MAX_LABELS);
                if (!valid_name(l, false) || strncmp(l, "__", 2) == 0 ||
                    (d->type == METRICS_HISTOGRAM && strcmp(l, "le") == 0))
                        return bc_error_set(err, BC_INTERNAL, EINVAL,
                                            "metric %s: '%s' is not a valid label name", d->name,
                                            l);
                for (size_t j = 0; j < n; j++)
                        if (strcmp(d->labels[j], l) == 0)
                                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                                    "metric %s: label '%s' given twice", d->name,
                                                    l);
        }
        *ret_n = n;
        return 0;
}

static int check_buckets(const struct metrics_desc *d, struct bc_error *err)
{
        if (d->type != METRICS_HISTOGRAM)
                return d->n_buckets
                               ? bc_error_set(err, BC_INTERNAL, EINVAL,
                                              "metric %s: buckets on a non-histogram", d->name)
                               : 0;
        if (!d->buckets || d->n_buckets == 0 || d->n_buckets > METRICS_MAX_BUCKETS)
                return bc_error_set(err, BC_INTERNAL, EINVAL, "metric %s: needs 1 to %d buckets",
                                    d->name, METRICS_MAX_BUCKETS);
        for (size_t i = 0; i < d->n_buckets; i++)
                if (!isfinite(d->buckets[i]) || (i > 0 && d->buckets[i] <= d->buckets[i - 1]))
                        return bc_error_set(err, BC_INTERNAL, EINVAL,
                                            "metric %s: buckets must be finite and strictly "
                                            "increasing",
                                            d->name);
        return 0;
}

static int family_new(const struct metrics_desc *d, size_t n_labels, struct family **ret)
{
        _cleanup_(family_freep) struct family *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        pthread_mutex_init(&f->lock, NULL);
        f->last = &f->first;
        f->type = d->type;
        f->max_series = d->max_series ? d->max_series : METRICS_DEFAULT_MAX_SERIES;
        f->name = strdup(d->name);
        struct dynbuf help;
        dynbuf_init(&help, 64 * 1024);
        int r = add_escaped(&help, d->help ? d->help : "", false);
        if (r < 0) {
                dynbuf_done(&help);
                return r;
        }
        f->help = dynbuf_steal(&help);
        if (!f->name || !f->help)
                return -ENOMEM;
        f->n_labels = n_labels;
        for (size_t i = 0; i < n_labels; i++) {
                f->label_names[i] = strdup(d->labels[i]);
                if (!f->label_names[i])
                        return -ENOMEM;
        }
        f->n_buckets = d->type == METRICS_HISTOGRAM ? d->n_buckets : 0;
        for (size_t i = 0; i < f->n_buckets; i++) {
                f->bounds[i] = d->buckets[i];
                metrics_format_double(d->buckets[i], f->le[i], sizeof(f->le[i]));
        }
        *ret = steal_pointer(&f);
        return 0;
}

static int get_series(struct family *f, const char *const *values, struct series **ret);

int metrics_register(struct metrics *m, const struct metrics_desc *d, struct bc_error *err)
{
        if (!valid_name(d->name, true))
                return bc_error_set(err, BC_INTERNAL, EINVAL, "'%s' is not a valid metric name",
                                    d->name ? d->name : "(null)");
        size_t n_labels = 0;
        int r = check_labels(d, &n_labels, err);
        if (r >= 0)
                r = check_buckets(d, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->register_lock);
        size_t n = atomic_load_explicit(&m->n_families, memory_order_relaxed);
        _cleanup_(family_freep) struct family *f = NULL;
        if (find_family(m, d->name) || strcmp(d->name, DROPPED_NAME) == 0) {
                r = bc_error_set(err, BC_INTERNAL, EEXIST, "metric %s: registered twice", d->name);
        } else if (n == METRICS_MAX_FAMILIES) {
                r = bc_error_set(err, BC_INTERNAL, E2BIG, "metric %s: more than %d families",
                                 d->name, METRICS_MAX_FAMILIES);
        } else {
                r = family_new(d, n_labels, &f);
                /* Unlabelled: one series, rendered as 0 from the start. */
                struct series *unused;
                if (r >= 0 && n_labels == 0)
                        r = get_series(f, NULL, &unused);
                if (r < 0)
                        bc_error_set(err, BC_INTERNAL, -r, "metric %s: %s", d->name,
                                     r == -E2BIG ? "help text too long" : "out of memory");
        }
        if (r >= 0) {
                m->families[n] = steal_pointer(&f);
                atomic_store_explicit(&m->n_families, n + 1, memory_order_release);
        }
        pthread_mutex_unlock(&m->register_lock);
        return r;
}

int metrics_register_all(struct metrics *m, const struct metrics_desc *d, size_t n,
                         struct bc_error *err)
{
        for (size_t i = 0; i < n; i++) {
                int r = metrics_register(m, &d[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int metrics_new(struct metrics **ret, struct bc_error *err)
{
        struct metrics *m = calloc(1, sizeof(*m));
        if (!m)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "metrics: out of memory");
        pthread_mutex_init(&m->register_lock, NULL);
        atomic_init(&m->n_families, 0);
        *ret = m;
        return 0;
}

void metrics_free(struct metrics *m)
{
        if (!m)
                return;
        size_t n = atomic_load(&m->n_families);
        for (size_t i = 0; i < n; i++)
                family_free(m->families[i]);
        pthread_mutex_destroy(&m->register_lock);
        free(m);
}

/* ---- series lookup (family lock held) ---- */

static uint32_t hash_values(const struct family *f, const char *const *values)
{
        uint32_t h = 2166136261u; /* FNV-1a over the values and their NULs */
        for (size_t i = 0; i < f->n_labels; i++) {
                const char *v = values[i] ? values[i] : "";
                for (const unsigned char *p = (const unsigned char *)v;; p++) {
                        h = (h ^ *p) * 16777619u;
                        if (!*p)
                                break;
                }
        }
        return h;
}

static bool key_equal(const struct family *f, const struct series *s, const char *const *values)
{
        const char *k = s->key;
        for (size_t i = 0; i < f->n_labels; i++) {
                const char *v = values[i] ? values[i] : "";
                size_t len = strlen(v);
                if ((size_t)(k - s->key) + len + 1 > s->key_len || memcmp(k, v, len + 1) != 0)
                        return false;
                k += len + 1;
        }
        return true;
}

static int series_new(struct family *f, const char *const *values, struct series **ret)
{
        size_t extra = f->type == METRICS_HISTOGRAM ? (f->n_buckets + 1) * sizeof(uint64_t) : 0;
        struct series *s = calloc(1, sizeof(*s) + extra);
        if (!s)
                return -ENOMEM;
        struct dynbuf key, labels;
        dynbuf_init(&key, METRICS_MAX_LABELS * (METRICS_MAX_VALUE_LEN + 1));
        dynbuf_init(&labels, 64 * 1024);
        int r = 0;
        for (size_t i = 0; i < f->n_labels && r >= 0; i++) {
                const char *v = values[i] ? values[i] : "";
                /* Checked here, not on every update: an invalid value never
                 * matches a stored key, so it always ends up here. */
                if (strlen(v) > METRICS_MAX_VALUE_LEN || !valid_utf8(v)) {
                        r = -EINVAL;
                        break;
                }
                r = dynbuf_add(&key, v, strlen(v) + 1);
                if (r >= 0)
                        r = dynbuf_printf(&labels, "%s%s=\"", i ? "," : "", f->label_names[i]);
                if (r >= 0)
                        r = add_escaped(&labels, v, true);
                if (r >= 0)
                        r = dynbuf_addstr(&labels, "\"");
        }
        if (r >= 0) {
                s->key_len = key.len;
                s->key = dynbuf_steal(&key);
                s->labels = dynbuf_steal(&labels);
                if (!s->key || !s->labels)
                        r = -ENOMEM;
        }
        dynbuf_done(&key);
        dynbuf_done(&labels);
        if (r < 0) {
                free(s->key);
                free(s->labels);
                free(s);
                return r == -E2BIG ? -EINVAL : r;
        }
        *ret = s;
        return 0;
}

static int get_series(struct family *f, const char *const *values, struct series **ret)
{
        static const char *const none[1] = { NULL };
        if (!values)
                values = none;
        if (f->n_labels > 0 && values == none)
                return -EINVAL;
        uint32_t h = hash_values(f, values) % HASH_SIZE;
        for (struct series *s = f->table[h]; s; s = s->hnext)
                if (key_equal(f, s, values)) {
                        *ret = s;
                        return 0;
                }
        if (f->n_series >= f->max_series) {
                atomic_fetch_add_explicit(&f->dropped, 1, memory_order_relaxed);
                return -E2BIG;
        }
        struct series *s;
        int r = series_new(f, values, &s);
        if (r < 0)
                return r;
        s->hnext = f->table[h];
        f->table[h] = s;
        *f->last = s;
        f->last = &s->next;
        f->n_series++;
        *ret = s;
        return 0;
}

/* ---- updates ---- */

enum op { OP_ADD, OP_SET, OP_OBSERVE };

static void apply(struct family *f, struct series *s, enum op op, double v)
{
        if (op == OP_ADD) {
                s->value += v;
        } else if (op == OP_SET) {
                s->value = v;
        } else {
                size_t i = 0;
                while (i < f->n_buckets && v > f->bounds[i])
                        i++;
                s->buckets[i]++;
                s->count++;
                s->sum += v;
        }
}

static int update(struct metrics *m, const char *family, enum metrics_type type,
                  const char *const *values, enum op op, double v)
{
        if (!m)
                return 0;
        if (isnan(v) || (type == METRICS_COUNTER && v < 0))
                return -EINVAL;
        struct family *f = find_family(m, family);
        if (!f)
                return -ENOENT;
        if (f->type != type)
                return -EINVAL;
        pthread_mutex_lock(&f->lock);
        struct series *s;
        int r = get_series(f, values, &s);
        if (r >= 0)
                apply(f, s, op, v);
        pthread_mutex_unlock(&f->lock);
        return r;
}

int metrics_counter_add(struct metrics *m, const char *family, const char *const *label_values,
                        double v)
{
        return update(m, family, METRICS_COUNTER, label_values, OP_ADD, v);
}

int metrics_gauge_set(struct metrics *m, const char *family, const char *const *label_values,
                      double v)
{
        return update(m, family, METRICS_GAUGE, label_values, OP_SET, v);
}

int metrics_gauge_add(struct metrics *m, const char *family, const char *const *label_values,
                      double v)
{
        return update(m, family, METRICS_GAUGE, label_values, OP_ADD, v);
}

int metrics_histogram_observe(struct metrics *m, const char *family,
                              const char *const *label_values, double v)
{
        return update(m, family, METRICS_HISTOGRAM, label_values, OP_OBSERVE, v);
}

int metrics_family_clear(struct metrics *m, const char *family)
{
        if (!m)
                return 0;
        struct family *f = find_family(m, family);
        if (!f)
                return -ENOENT;
        if (f->n_labels == 0)
                return -EINVAL;
        pthread_mutex_lock(&f->lock);
        free_all_series(f);
        pthread_mutex_unlock(&f->lock);
        return 0;
}

/* ---- exposition ---- */

static const char *type_name(enum metrics_type t)
{
        return t == METRICS_COUNTER ? "counter" : t == METRICS_GAUGE ? "gauge" : "histogram";
}

/* name{labels} value, or name value without labels; extra is one more
 * label (le="…") or NULL. */
static int add_sample(struct dynbuf *b, const char *name, const char *suffix, const char *labels,
                      const char *extra, double v)
{
        char num[32];
        metrics_format_double(v, num, sizeof(num));
        bool braces = *labels || extra;
        return dynbuf_printf(b, "%s%s%s%s%s%s%s %s\n", name, suffix, braces ? "{" : "", labels,
                             *labels && extra ? "," : "", extra ? extra : "", braces ? "}" : "",
                             num);
}

static int render_histogram(struct dynbuf *b, const struct family *f, const struct series *s)
{
        uint64_t cum = 0;
        char le[48];
        int r = 0;
        for (size_t i = 0; i <= f->n_buckets && r >= 0; i++) {
                cum += s->buckets[i];
                snprintf(le, sizeof(le), "le=\"%s\"", i < f->n_buckets ? f->le[i] : "+Inf");
                r = add_sample(b, f->name, "_bucket", s->labels, le, (double)cum);
        }
        if (r >= 0)
                r = add_sample(b, f->name, "_sum", s->labels, NULL, s->sum);
        if (r >= 0)
                r = add_sample(b, f->name, "_count", s->labels, NULL, (double)s->count);
        return r;
}

static int render_family(struct dynbuf *b, struct family *f)
{
        pthread_mutex_lock(&f->lock);
        int r = dynbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
                              type_name(f->type));
        for (const struct series *s = f->first; s && r >= 0; s = s->next)
                r = f->type == METRICS_HISTOGRAM
                            ? render_histogram(b, f, s)
                            : add_sample(b, f->name, "", s->labels, NULL, s->value);
        pthread_mutex_unlock(&f->lock);
        return r;
}

static int render_dropped(struct dynbuf *b, struct metrics *m, size_t n)
{
        int r = dynbuf_addstr(b, "# HELP " DROPPED_NAME " Updates dropped because their family "
                                 "reached its cap on label combinations.\n"
                                 "# TYPE " DROPPED_NAME " counter\n");
        for (size_t i = 0; i < n && r >= 0; i++) {
                uint64_t d = atomic_load_explicit(&m->families[i]->dropped, memory_order_relaxed);
                if (d)
                        r = dynbuf_printf(b, DROPPED_NAME "{family=\"%s\"} %llu\n",
                                          m->families[i]->name, (unsigned long long)d);
        }
        return r;
}

char *metrics_render(struct metrics *m, size_t *ret_len)
{
        struct dynbuf b;
        dynbuf_init(&b, RENDER_CAP);
        size_t n = m ? atomic_load_explicit(&m->n_families, memory_order_acquire) : 0;
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = render_family(&b, m->families[i]);
        if (r >= 0 && m)
                r = render_dropped(&b, m, n);
        if (r < 0) {
                dynbuf_done(&b);
                return NULL;
        }
        size_t len = b.len;
        char *text = dynbuf_steal(&b);
        if (text && ret_len)
                *ret_len = len;
        return text;
}
