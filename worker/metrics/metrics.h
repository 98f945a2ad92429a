/* A small Prometheus metrics registry: counters, gauges and histograms
 * with label sets, rendered in the text exposition format 0.0.4.
 *
 * Families are registered once, at startup, from a table of
 * struct metrics_desc; after that any thread may update them.  Each
 * family has its own mutex held only for a hash lookup and an add, so
 * job slots updating different families never contend, and slots
 * updating the same one hold it for well under a microsecond.
 *
 * Label values come from users (queue names), so each family holds at
 * most max_series label combinations; an update that would create one
 * more is dropped and counted in boxcar_metrics_series_dropped_total
 * {family="…"}, which is always rendered last.
 *
 * Every update function accepts m == NULL and then does nothing, so code
 * can update metrics unconditionally when --metrics-addr is off.
 * Nothing here logs. */
#ifndef BC_WORKER_METRICS_METRICS_H
#define BC_WORKER_METRICS_METRICS_H

#include <stddef.h>

#include "common/error.h"

struct metrics;

enum metrics_type {
        METRICS_COUNTER,
        METRICS_GAUGE,
        METRICS_HISTOGRAM,
};

/* Most families one registry holds, most labels one family has, longest
 * label value kept (bytes; a longer value is an error, not truncated,
 * so two long names never fold into one series). */
#define METRICS_MAX_FAMILIES 64
#define METRICS_MAX_LABELS 8
#define METRICS_MAX_BUCKETS 32
#define METRICS_MAX_VALUE_LEN 256
#define METRICS_DEFAULT_MAX_SERIES 1000

struct metrics_desc {
        const char *name; /* [a-zA-Z_:][a-zA-Z0-9_:]* */
        const char *help; /* one line; \ and newlines are escaped */
        enum metrics_type type;
        const char *const *labels; /* NULL-terminated names; NULL for none.
                                     * [a-zA-Z_][a-zA-Z0-9_]*, not "__…",
                                     * not "le" for histograms */
        const double *buckets;     /* histograms: strictly increasing finite
                                     * upper bounds; +Inf is implied */
        size_t n_buckets;          /* 1..METRICS_MAX_BUCKETS for histograms */
        unsigned max_series;       /* 0: METRICS_DEFAULT_MAX_SERIES */
};

/* Default buckets for job durations and pickup latency, in seconds:
 * 5 ms … 1 h. */
extern const double metrics_buckets_seconds[];
extern const size_t metrics_n_buckets_seconds;

/* Creates an empty registry.  Returns 0 or -ENOMEM.  Free with
 * metrics_free(). */
int metrics_new(struct metrics **ret, struct bc_error *err);

/* NULL-safe.  No other thread may use m any more (stop the HTTP server
 * first). */
void metrics_free(struct metrics *m);

/* Registers a family; everything in d is copied.  A family without
 * labels renders its one series (0) at once; a labelled one renders a
 * series once it was first updated.  Returns 0, -EINVAL (bad name, label,
 * buckets; err says which), -EEXIST, -E2BIG (too many families or
 * labels) or -ENOMEM.  Safe to call while other threads update the
 * registry, but meant for startup. */
int metrics_register(struct metrics *m, const struct metrics_desc *d, struct bc_error *err);

/* Registers every entry of a table, stopping at the first failure. */
int metrics_register_all(struct metrics *m, const struct metrics_desc *d, size_t n,
                         struct bc_error *err);

/* Updates.  label_values holds exactly as many strings as the family has
 * labels, in the order of desc.labels (NULL entries read as ""); it may
 * be NULL for a family without labels.  The strings are copied when a
 * series is first created.
 *
 * Returns 0; -ENOENT for an unknown family; -EINVAL for a family of
 * another type, missing label_values, a label value longer than
 * METRICS_MAX_VALUE_LEN or not valid UTF-8, a NaN, or a negative counter
 * increment; -E2BIG when the family is at its series cap (counted in
 * boxcar_metrics_series_dropped_total); -ENOMEM.  Callers on a hot path
 * usually ignore the result: a metric is never worth failing a job. */
int metrics_counter_add(struct metrics *m, const char *family, const char *const *label_values,
                        double v);
int metrics_gauge_set(struct metrics *m, const char *family, const char *const *label_values,
                      double v);
int metrics_gauge_add(struct metrics *m, const char *family, const char *const *label_values,
                      double v);
int metrics_histogram_observe(struct metrics *m, const char *family,
                              const char *const *label_values, double v);

/* Drops every series of a labelled family (a gauge family refreshed as a
 * whole, such as queue depth per queue, where queues come and go).
 * Returns 0, -ENOENT or -EINVAL (a family without labels). */
int metrics_family_clear(struct metrics *m, const char *family);

/* The whole registry in the text exposition format 0.0.4 (serve it as
 * "text/plain; version=0.0.4; charset=utf-8"): families in registration
 * order, series in creation order.  Returns a NUL-terminated heap string
 * the caller frees, its length in *ret_len when ret_len is not NULL; NULL
 * on ENOMEM.  Each family's lock is held while that family is written.
 * m == NULL renders "". */
char *metrics_render(struct metrics *m, size_t *ret_len);

/* Writes v into buf (size n) as the exposition format wants floats:
 * "+Inf", "-Inf", "NaN", integers below 1e15 in plain digits, else the
 * shortest %g text that reads back as v.  Returns buf; n >= 32 always
 * suffices. */
char *metrics_format_double(double v, char *buf, size_t n);

#endif
