/* HTML for the dashboard: every value that came from the database or the
 * request goes through ui_esc (element text and quoted attributes alike)
 * or ui_urlenc (inside a URL), so a job's spec, log or error can never
 * become markup.  Responses carry a Content-Security-Policy that allows
 * only our own script and stylesheet: no inline script runs even if some
 * markup slipped through. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/uri.h"
#include "worker/http/ui-internal.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

const char *ui_jstr(const cJSON *o, const char *key, const char *dflt)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : dflt;
}

void ui_esc_n(struct dynbuf *b, const char *s, size_t n)
{
        size_t start = 0;
        for (size_t i = 0; i < n; i++) {
                const char *rep = NULL;
                switch (s[i]) {
                case '&':
                        rep = "&amp;";
                        break;
                case '<':
                        rep = "&lt;";
                        break;
                case '>':
                        rep = "&gt;";
                        break;
                case '"':
                        rep = "&quot;";
                        break;
                case '\'':
                        rep = "&#39;";
                        break;
                case '\0':
                        rep = "\xef\xbf\xbd";
                        break;
                default:
                        continue;
                }
                dynbuf_add(b, s + start, i - start);
                dynbuf_addstr(b, rep);
                start = i + 1;
        }
        dynbuf_add(b, s + start, n - start);
}

void ui_esc(struct dynbuf *b, const char *s)
{
        if (s)
                ui_esc_n(b, s, strlen(s));
}

/* RFC 3986's unreserved characters stay, all else is %XX: the encoding
 * S3's signatures use too. */
void ui_urlenc(struct dynbuf *b, const char *s)
{
        if (s)
                bc_uri_encode(b, s, 0);
}

static const struct {
        const char *path, *title;
} nav[] = {
        { "/", "Queues" },           { "/jobs", "Jobs" },         { "/workers", "Workers" },
        { "/sessions", "Sessions" }, { "/webhooks", "Webhooks" }, { "/schedules", "Schedules" },
};

void ui_page_begin(struct dynbuf *b, const struct ui *ui, const struct ui_req *r,
                   const char *title)
{
        dynbuf_addstr(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                         "<meta name=\"viewport\" content=\"width=device-width\"><title>boxcar: ");
        ui_esc(b, title);
        dynbuf_addstr(b, "</title><link rel=\"stylesheet\" href=\"/static/style.css\">"
                         "<script src=\"/static/app.js\" defer></script></head>\n<body><header>"
                         "<span class=\"brand\">boxcar</span><nav>");
        for (size_t i = 0; i < sizeof(nav) / sizeof(nav[0]); i++) {
                dynbuf_printf(b, "<a href=\"%s\"%s>%s</a>", nav[i].path,
                              strcmp(nav[i].title, title) == 0 ? " class=\"here\"" : "",
                              nav[i].title);
        }
        dynbuf_addstr(b, "</nav><span class=\"mode\">");
        dynbuf_addstr(b, ui->actions ? "actions enabled" : "read-only");
        dynbuf_addstr(b, " &middot; ");
        ui_esc(b, r->who);
        dynbuf_addstr(b, "</span>");
        if (r->auth == UI_AUTH_SESSION) {
                dynbuf_addstr(b, "<form method=\"post\" action=\"/logout\" class=\"inline\">"
                                 "<input type=\"hidden\" name=\"csrf\" value=\"");
                ui_esc(b, r->csrf);
                dynbuf_addstr(b, "\"><button>Log out</button></form>");
        }
        dynbuf_addstr(b, "</header>\n<main><h1>");
        ui_esc(b, title);
        dynbuf_addstr(b, "</h1>\n");
}

void ui_page_end(struct dynbuf *b)
{
        dynbuf_addstr(b, "</main></body></html>\n");
}

void ui_action_button(struct dynbuf *b, const struct ui *ui, const struct ui_req *r,
                      const char *action, const char *id, const char *label)
{
        dynbuf_printf(b,
                      "<form method=\"post\" class=\"inline\" action=\"/actions/%s\">"
                      "<input type=\"hidden\" name=\"csrf\" value=\"",
                      action);
        ui_esc(b, r->csrf);
        dynbuf_addstr(b, "\"><input type=\"hidden\" name=\"id\" value=\"");
        ui_esc(b, id);
        dynbuf_printf(b, "\"><button class=\"action\" data-action=\"%s\"", action);
        if (!ui->actions)
                dynbuf_addstr(b, " disabled title=\"read-only: start boxcar ui with --actions\"");
        dynbuf_addstr(b, ">");
        ui_esc(b, label);
        dynbuf_addstr(b, "</button></form>");
}

void ui_json_block(struct dynbuf *b, const char *json_text)
{
        _cleanup_(cJSON_Deletep) cJSON *j = json_text ? cJSON_Parse(json_text) : NULL;
        _cleanup_free_ char *pretty = j ? cJSON_Print(j) : NULL;
        const char *s = pretty ? pretty : json_text ? json_text : "null";
        size_t n = strlen(s);
        dynbuf_addstr(b, "<pre class=\"json\">");
        ui_esc_n(b, s, n > UI_JSON_SHOWN_MAX ? UI_JSON_SHOWN_MAX : n);
        if (n > UI_JSON_SHOWN_MAX)
                dynbuf_printf(b, "\n… (%zu more bytes not shown)", n - UI_JSON_SHOWN_MAX);
        dynbuf_addstr(b, "</pre>\n");
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

bool ui_is_uuid(const char *s)
{
        if (!s || strlen(s) != 36)
                return false;
        for (size_t i = 0; i < 36; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                if (dash ? s[i] != '-' : hexval(s[i]) < 0)
                        return false;
        }
        return true;
}

bool ui_form_next(const struct dynbuf *body, const char *name, size_t *pos, char *out, size_t size)
{
        size_t nlen = strlen(name);
        const char *end = body->data + body->len;
        const char *p = body->data && *pos < body->len ? body->data + *pos : NULL;
        while (p && p < end) {
                const char *amp = memchr(p, '&', (size_t)(end - p));
                const char *fend = amp ? amp : end;
                if ((size_t)(fend - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
                        size_t o = 0;
                        for (const char *q = p + nlen + 1; q < fend && o + 1 < size; q++) {
                                if (*q == '+') {
                                        out[o++] = ' ';
                                } else if (*q == '%' && fend - q >= 3 && hexval(q[1]) >= 0 &&
                                           hexval(q[2]) >= 0) {
                                        out[o++] = (char)(hexval(q[1]) * 16 + hexval(q[2]));
                                        q += 2;
                                } else {
                                        out[o++] = *q;
                                }
                        }
                        out[o] = '\0';
                        *pos = (size_t)(fend - body->data) + 1;
                        return true;
                }
                p = amp ? amp + 1 : NULL;
        }
        *pos = body->len;
        return false;
}

bool ui_form_value(const struct dynbuf *body, const char *name, char *out, size_t size)
{
        size_t pos = 0;
        return ui_form_next(body, name, &pos, out, size);
}

/* ---- responses ---- */

static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self'; connect-src 'self'; form-action 'self'; "
                          "frame-ancestors 'none'; base-uri 'none'";

enum MHD_Result ui_send(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                        size_t len, enum MHD_ResponseMemoryMode mode, const char *set_cookie)
{
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
        if (!resp) {
                if (mode == MHD_RESPMEM_MUST_FREE)
                        free(body);
                return MHD_NO;
        }
        static const char *const fixed[][2] = {
                { MHD_HTTP_HEADER_CACHE_CONTROL, "no-store" }, { "Content-Security-Policy", NULL },
                { "X-Content-Type-Options", "nosniff" },       { "X-Frame-Options", "DENY" },
                { "Referrer-Policy", "same-origin" },
        };
        enum MHD_Result r = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        for (size_t i = 0; r == MHD_YES && i < sizeof(fixed) / sizeof(fixed[0]); i++)
                r = MHD_add_response_header(resp, fixed[i][0], fixed[i][1] ? fixed[i][1] : csp);
        /* Only a request without credentials is challenged: a challenge
         * on the login form's answer would make a browser prompt. */
        if (r == MHD_YES && set_cookie == UI_CHALLENGE)
                r = MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                            "Basic realm=\"boxcar\", charset=\"UTF-8\"");
        else if (r == MHD_YES && set_cookie)
                r = MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, set_cookie);
        if (r == MHD_YES)
                r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

const char UI_CHALLENGE[] = "challenge";

enum MHD_Result ui_send_page(struct MHD_Connection *c, unsigned status, struct dynbuf *b)
{
        size_t len = b->len;
        char *body = dynbuf_steal(b);
        if (!body)
                return MHD_NO;
        return ui_send(c, status, "text/html; charset=utf-8", body, len, MHD_RESPMEM_MUST_FREE,
                       NULL);
}

enum MHD_Result ui_send_text(struct MHD_Connection *c, unsigned status, const char *text)
{
        return ui_send(c, status, "text/plain; charset=utf-8", (char *)text, strlen(text),
                       MHD_RESPMEM_PERSISTENT, NULL);
}

enum MHD_Result ui_redirect(struct MHD_Connection *c, const char *location, const char *set_cookie)
{
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"",
                                                                    MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return MHD_NO;
        enum MHD_Result r = MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
        if (r == MHD_YES)
                r = MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        if (r == MHD_YES && set_cookie)
                r = MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, set_cookie);
        if (r == MHD_YES)
                r = MHD_queue_response(c, MHD_HTTP_SEE_OTHER, resp);
        MHD_destroy_response(resp);
        return r;
}

enum MHD_Result ui_error_page(struct ui *ui, struct ui_req *r, unsigned status,
                              const char *message)
{
        struct dynbuf b;
        dynbuf_init(&b, UI_PAGE_MAX);
        ui_page_begin(&b, ui, r, "Error");
        dynbuf_addstr(&b, "<p class=\"error\">");
        ui_esc(&b, message);
        dynbuf_addstr(&b, "</p>");
        ui_page_end(&b);
        return ui_send_page(r->c, status, &b);
}

enum MHD_Result ui_login_page(struct MHD_Connection *c, unsigned status, const char *message)
{
        struct dynbuf b;
        dynbuf_init(&b, 64 * 1024);
        dynbuf_addstr(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                          "<title>boxcar: log in</title>"
                          "<link rel=\"stylesheet\" href=\"/static/style.css\"></head>\n<body>"
                          "<main class=\"login\"><h1>boxcar</h1>");
        if (message) {
                dynbuf_addstr(&b, "<p class=\"error\">");
                ui_esc(&b, message);
                dynbuf_addstr(&b, "</p>");
        }
        dynbuf_addstr(&b, "<form method=\"post\" action=\"/login\"><label>Token "
                          "<input type=\"password\" name=\"token\" id=\"token\" "
                          "autocomplete=\"current-password\" required></label> "
                          "<button id=\"login\">Log in</button></form></main></body></html>\n");
        return ui_send_page(c, status, &b);
}
