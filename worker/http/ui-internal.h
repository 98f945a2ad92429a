/* The web dashboard's parts (`boxcar ui`), private to worker/http/:
 *
 *   ui.c          the server's life (ui.h: its options come from
 *                 worker/cli/cmd_ui.c), request dispatch
 *   ui_auth.c     who is asking (token, session cookie, basic auth), login
 *                 sessions, CSRF tokens and the Origin check
 *   ui_html.c     escaping, the page shell, responses with security headers
 *   ui_pages.c    queues, workers, sessions, webhook deliveries and schedules
 *   ui_jobs.c     the job list, a job's page and its live log
 *   ui_actions.c  cancel, retry, drain, end a session, redrive (POST only)
 *   ui_bulk.c     retry or cancel many jobs: those ticked, or all matching
 *                 the list's filter (capped)
 *   ui_queue.c    one queue's page: its charts
 *   ui_time.c     relative times, durations, short ids
 *   ui_svg.c      inline SVG: scales, bars, text, legends
 *   ui_chart.c    a queue's charts over the last hour and day
 *   ui_timeline.c a job's life as one bar of phases, per attempt
 *   ui_assets.c   the stylesheet and the script, served from the binary
 *
 * Every request is handled on the server's one thread, so the database
 * connection and the session table need no lock. */
#ifndef BC_WORKER_HTTP_UI_INTERNAL_H
#define BC_WORKER_HTTP_UI_INTERNAL_H

#include <libpq-fe.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/dynbuf.h"
#include "common/error.h"

#define UI_TOKEN_MIN 16
#define UI_SESSIONS_MAX 256
#define UI_SESSION_TTL_S (12 * 3600)
/* Room for a bulk action's ticked ids (40 bytes each). */
#define UI_BODY_MAX (64 * 1024)
/* The most jobs one bulk action touches. */
#define UI_BULK_MAX 200
#define UI_PAGE_MAX (16u << 20)
/* A job's spec, result or event shown on a page is cut here. */
#define UI_JSON_SHOWN_MAX (256u << 10)

struct ui_session {
        char id[65]; /* hex of 32 random bytes; "" when free */
        time_t expires;
};

struct ui {
        /* configuration */
        const char *db_url;
        char *token;      /* NULL with --no-auth */
        const char *user; /* basic auth user name */
        bool actions;     /* cancel, retry, drain, end a session, redrive allowed */
        bool secure_cookie;
        bool loopback; /* bound to a loopback address */
        /* state */
        PGconn *conn;
        unsigned char key[32]; /* signs CSRF tokens; new at every start */
        struct ui_session sessions[UI_SESSIONS_MAX];
};

enum ui_auth_kind { UI_AUTH_NONE, UI_AUTH_ANON, UI_AUTH_BEARER, UI_AUTH_BASIC, UI_AUTH_SESSION };

struct ui_req {
        struct MHD_Connection *c;
        const char *method, *url;
        struct dynbuf body; /* form body of a POST, capped at UI_BODY_MAX */
        bool body_too_big;
        enum ui_auth_kind auth;
        char who[80];  /* names the operator in audit events */
        char csrf[65]; /* the CSRF token of this credential */
        const struct ui_session *session;
};

/* ---- ui.c ---- */
/* The database connection, reconnected when it was lost; NULL with err.
 * The pages query it through worker/db/api.h. */
PGconn *ui_db(struct ui *ui, struct bc_error *err);
/* A page whose query failed: an error page of status with err's message;
 * clears err. */
enum MHD_Result ui_fail(struct ui *ui, struct ui_req *r, unsigned status, struct bc_error *err);

/* ---- ui_auth.c ---- */
/* Fills r->auth, r->who and r->csrf from the request's credentials;
 * UI_AUTH_NONE when there are none or they are wrong. */
void ui_auth_identify(struct ui *ui, struct ui_req *r);
/* True when a request in --no-auth mode names a loopback Host (a page
 * reached through DNS rebinding names the attacker's host): see
 * ui_auth_loopback_host, with the port the request came in on. */
bool ui_auth_host_ok(const struct ui_req *r);
/* True when host (a Host header's value, NULL for none) is exactly
 * "localhost" (any case), "[::1]" or a dotted-quad 127.x.y.z address,
 * alone or with ":port".  Names that merely start like one
 * ("127.0.0.1.evil.example", "localhost.evil.example") are not loopback:
 * anyone can point them anywhere. */
bool ui_auth_loopback_host(const char *host, unsigned port);
/* POST /login (token in the form) and POST /logout. */
enum MHD_Result ui_auth_login(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_auth_logout(struct ui *ui, struct ui_req *r);
/* For a state-changing request: the Origin (else Referer) names this
 * host, and the form's csrf field is this credential's token.  Sets a
 * reason on refusal. */
bool ui_auth_csrf_ok(const struct ui_req *r, const char **ret_reason);
/* Constant-time string comparison. */
bool ui_auth_equal(const char *a, const char *b);

/* ---- ui_html.c ---- */
void ui_esc(struct dynbuf *b, const char *s);
void ui_esc_n(struct dynbuf *b, const char *s, size_t n);
void ui_urlenc(struct dynbuf *b, const char *s);
/* The page's head, header and navigation; ui_page_end closes it. */
void ui_page_begin(struct dynbuf *b, const struct ui *ui, const struct ui_req *r,
                   const char *title);
void ui_page_end(struct dynbuf *b);
/* A POST button for an action (a form to /actions/ACTION with the CSRF
 * token and id): disabled, with the reason, when actions are off. */
void ui_action_button(struct dynbuf *b, const struct ui *ui, const struct ui_req *r,
                      const char *action, const char *id, const char *label);
/* Pretty-prints a JSON text, escaped, in a <pre>, cut at UI_JSON_SHOWN_MAX. */
void ui_json_block(struct dynbuf *b, const char *json_text);
/* o's string member key, else dflt. */
struct cJSON;
const char *ui_jstr(const struct cJSON *o, const char *key, const char *dflt);
/* True when s is a UUID in its text form (36 characters). */
bool ui_is_uuid(const char *s);
/* A form field of an urlencoded body, decoded into out (cut at size). */
bool ui_form_value(const struct dynbuf *body, const char *name, char *out, size_t size);
/* The next value of a repeated field (a checkbox list) from *pos on (0 at
 * first), decoded into out (cut at size); false after the last. */
bool ui_form_next(const struct dynbuf *body, const char *name, size_t *pos, char *out,
                  size_t size);

/* Sends body with the security headers; set_cookie is a Set-Cookie value,
 * NULL, or UI_CHALLENGE for a 401 that asks for basic auth. */
extern const char UI_CHALLENGE[];
enum MHD_Result ui_send(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                        size_t len, enum MHD_ResponseMemoryMode mode, const char *set_cookie);
enum MHD_Result ui_send_page(struct MHD_Connection *c, unsigned status, struct dynbuf *b);
enum MHD_Result ui_send_text(struct MHD_Connection *c, unsigned status, const char *text);
/* 303 See Other to a path of ours. */
enum MHD_Result ui_redirect(struct MHD_Connection *c, const char *location,
                            const char *set_cookie);
/* An error page (message escaped). */
enum MHD_Result ui_error_page(struct ui *ui, struct ui_req *r, unsigned status,
                              const char *message);
/* The login form, with an optional message. */
enum MHD_Result ui_login_page(struct MHD_Connection *c, unsigned status, const char *message);

/* ---- ui_time.c ---- */
/* A timestamptz as PostgreSQL writes it ("2026-01-02T03:04:05.123456+00:00",
 * a space for the T, any offset, 'Z' or none for UTC, 0 to 6 fraction
 * digits) as epoch microseconds; false when s is not one. */
bool ui_time_parse(const char *s, int64_t *ret_us);
int64_t ui_now_us(void);
/* "850 ms", "1.2 s", "42 s", "3 min 20 s", "2 h 5 min", "3 d 4 h"; "-" for
 * a negative or non-finite value. */
void ui_fmt_duration(char *out, size_t size, double seconds);
/* now - then, in one unit rounded down: "just now", "42 s ago", "3 min
 * ago", "2 h ago", "4 d ago"; a negative delta is "in 3 min". */
void ui_fmt_ago(char *out, size_t size, int64_t delta_us);
/* <time> with the relative time, the full timestamp in its title; "-" for
 * NULL or "", and the text as it is (escaped) when it is no timestamp. */
void ui_time_html(struct dynbuf *b, const char *ts, int64_t now_us);
/* The time from one timestamp to another ("1.2 s"), both in a title. */
void ui_duration_html(struct dynbuf *b, const char *from, const char *to);
/* An id's first 8 characters, the whole in the title; a link to
 * href_prefix + id (URL-encoded) unless href_prefix is NULL. */
void ui_short_id_html(struct dynbuf *b, const char *href_prefix, const char *id);

/* ---- ui_svg.c ---- */
/* The smallest of 1, 2, 4, 5 times a power of ten at or above v (1 for
 * v <= 0 or not finite): a chart's top. */
double ui_svg_nice_max(double v);
/* v in 0..max mapped to 0..px, clamped; 0 for v <= 0, a NaN or max <= 0. */
double ui_svg_scale(double v, double max, double px);
/* <svg> with a viewBox of w x h, an id, a class and an aria-label. */
void ui_svg_begin(struct dynbuf *b, const char *id, const char *cls, int w, int h,
                  const char *label);
void ui_svg_end(struct dynbuf *b);
/* fill and stroke are our constants, never data; title and text are
 * escaped. */
void ui_svg_rect(struct dynbuf *b, double x, double y, double w, double h, const char *fill,
                 const char *title);
void ui_svg_text(struct dynbuf *b, double x, double y, const char *anchor, const char *fill,
                 const char *text);
void ui_svg_line(struct dynbuf *b, double x1, double y1, double x2, double y2, const char *stroke);
void ui_svg_legend(struct dynbuf *b, double x, double y, const char *const *labels,
                   const char *const *fills, size_t n);

/* ---- ui_chart.c ---- */
struct ui_chart_bucket {
        int64_t start_us, end_us;
        long succeeded, failed;
        double wait_p50, wait_p95, run_p50, run_p95; /* seconds; NAN: no job ran */
};
struct api_json_rows;
/* boxcar.queue_chart's rows (api_queue_chart) into out; returns how many. */
size_t ui_chart_buckets(const struct api_json_rows *rows, struct ui_chart_bucket *out, size_t max);
/* Stacked bars of succeeded and failed jobs per bucket. */
void ui_chart_counts(struct dynbuf *b, const char *id, const char *label,
                     const struct ui_chart_bucket *bk, size_t n);
/* Wait (run false) or run times per bucket: p95 and median. */
void ui_chart_latency(struct dynbuf *b, const char *id, const char *label,
                      const struct ui_chart_bucket *bk, size_t n, bool run);

/* The last hour in a table cell: small bars, no axes. */
void ui_chart_spark(struct dynbuf *b, const char *label, const struct ui_chart_bucket *bk,
                    size_t n);

/* ---- ui_timeline.c ---- */
enum ui_phase { UI_PHASE_WAITING, UI_PHASE_SETUP, UI_PHASE_RUNNING, UI_PHASE_UPLOAD };
struct ui_tl_event {
        const char *kind;
        int attempt;
        int64_t at_us;
};
struct ui_tl_seg {
        enum ui_phase phase;
        int attempt;
        int64_t from_us, to_us;
};
const char *ui_phase_name(enum ui_phase p);
/* The segments of a job's life from its events (oldest first), from
 * created_us; a phase still open at the end closes at end_us (now, or
 * the job's end).  Returns how many were written (at most max). */
size_t ui_timeline_build(const struct ui_tl_event *ev, size_t n, int64_t created_us,
                         int64_t end_us, struct ui_tl_seg *out, size_t max);
void ui_timeline_svg(struct dynbuf *b, const struct ui_tl_seg *s, size_t n);

/* ---- pages ---- */
enum MHD_Result ui_page_queues(struct ui *ui, struct ui_req *r);
/* GET /queue?name=NAME: the queue's charts. */
enum MHD_Result ui_page_queue(struct ui *ui, struct ui_req *r);
/* POST /actions/bulk: op=retry|cancel on the ticked ids, or (all=1) on the
 * jobs matching the form's queue, status and since, at most UI_BULK_MAX. */
enum MHD_Result ui_bulk(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_page_workers(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_page_sessions(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_page_webhooks(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_page_schedules(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_page_jobs(struct ui *ui, struct ui_req *r);
enum MHD_Result ui_page_job(struct ui *ui, struct ui_req *r, const char *id);
enum MHD_Result ui_api_log(struct ui *ui, struct ui_req *r, const char *id);
/* POST /actions/cancel|retry (form field id: a job), /actions/drain (a
 * worker), /actions/end-session (SCOPE/ID), /actions/redrive (a webhook
 * delivery): ui_action_path says whether url is one of them. */
bool ui_action_path(const char *url);
enum MHD_Result ui_action(struct ui *ui, struct ui_req *r);

/* ---- ui_assets.c ---- */
extern const char ui_style_css[];
extern const char ui_app_js[];

#endif
