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
#include <time.h>

#include "common/dynbuf.h"
#include "common/error.h"

#define UI_TOKEN_MIN 16
#define UI_SESSIONS_MAX 256
#define UI_SESSION_TTL_S (12 * 3600)
#define UI_BODY_MAX 8192
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

/* ---- pages ---- */
enum MHD_Result ui_page_queues(struct ui *ui, struct ui_req *r);
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
