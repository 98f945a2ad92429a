/* Who is asking, and may they change things.
 *
 * Credentials: the operator's token as `Authorization: Bearer TOKEN`, as
 * the password of basic auth (user --user), or once through the login
 * form, which opens a session: a random id in an HttpOnly, SameSite=Strict
 * cookie, kept in memory for 12 hours (a restart logs everyone out).
 *
 * CSRF: a browser sends cookies and cached basic-auth credentials with
 * requests another site makes it send, so every state-changing request
 * must (1) be a POST, (2) come from a page of ours by its Origin (or
 * Referer; Sec-Fetch-Site when given), and (3) carry the credential's CSRF
 * token in its form: HMAC-SHA256 under a key made at start over the
 * session id (or the basic-auth user, or "bearer"), which another site
 * cannot read. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "worker/http/ui-internal.h"

bool ui_auth_equal(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        /* Compares over b's length whatever a's, so the time says nothing
         * about how much of the secret matched. */
        unsigned char diff = la != lb;
        for (size_t i = 0; i < lb; i++)
                diff |= (unsigned char)(b[i] ^ (i < la ? a[i] : 0));
        return diff == 0;
}

static void hex(const unsigned char *in, size_t n, char *out)
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[in[i] >> 4];
                out[2 * i + 1] = digits[in[i] & 15];
        }
        out[2 * n] = '\0';
}

static void csrf_token(const struct ui *ui, const char *subject, char out[65])
{
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (!HMAC(EVP_sha256(), ui->key, sizeof(ui->key), (const unsigned char *)subject,
                  strlen(subject), mac, &len) ||
            len != 32) {
                /* Never matches a submitted token (hex only). */
                snprintf(out, 65, "unavailable");
                return;
        }
        hex(mac, 32, out);
}

static struct ui_session *find_session(struct ui *ui, const char *id)
{
        time_t now = time(NULL);
        if (!id || strlen(id) != 64)
                return NULL;
        for (size_t i = 0; i < UI_SESSIONS_MAX; i++) {
                struct ui_session *s = &ui->sessions[i];
                if (s->id[0] && s->expires > now && ui_auth_equal(id, s->id))
                        return s;
        }
        return NULL;
}

static bool check_basic(const struct ui *ui, const char *b64, struct ui_req *r)
{
        unsigned char dec[512];
        size_t n = strlen(b64);
        if (n == 0 || n > 4 * ((sizeof(dec) - 1) / 3))
                return false;
        int len = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)n);
        if (len < 0)
                return false;
        /* EVP_DecodeBlock counts the padding as zero bytes. */
        while (n > 0 && b64[n - 1] == '=' && len > 0) {
                n--;
                len--;
        }
        dec[len] = '\0';
        char *colon = strchr((char *)dec, ':');
        if (!colon)
                return false;
        *colon = '\0';
        bool user_ok = ui_auth_equal((char *)dec, ui->user);
        bool pass_ok = ui_auth_equal(colon + 1, ui->token);
        OPENSSL_cleanse(dec, sizeof(dec));
        if (!user_ok || !pass_ok)
                return false;
        snprintf(r->who, sizeof(r->who), "%s", ui->user);
        return true;
}

void ui_auth_identify(struct ui *ui, struct ui_req *r)
{
        r->auth = UI_AUTH_NONE;
        r->who[0] = '\0';
        r->csrf[0] = '\0';
        char subject[128];
        if (!ui->token) {
                r->auth = UI_AUTH_ANON;
                snprintf(r->who, sizeof(r->who), "anonymous");
                csrf_token(ui, "anonymous", r->csrf);
                return;
        }
        const char *h = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_AUTHORIZATION);
        if (h && strncasecmp(h, "Bearer ", 7) == 0 && ui_auth_equal(h + 7, ui->token)) {
                r->auth = UI_AUTH_BEARER;
                snprintf(r->who, sizeof(r->who), "token");
                csrf_token(ui, "bearer", r->csrf);
                return;
        }
        if (h && strncasecmp(h, "Basic ", 6) == 0 && check_basic(ui, h + 6, r)) {
                r->auth = UI_AUTH_BASIC;
                snprintf(subject, sizeof(subject), "basic:%s", ui->user);
                csrf_token(ui, subject, r->csrf);
                return;
        }
        const char *sid = MHD_lookup_connection_value(r->c, MHD_COOKIE_KIND, "boxcar_session");
        const struct ui_session *s = find_session(ui, sid);
        if (s) {
                r->auth = UI_AUTH_SESSION;
                r->session = s;
                snprintf(r->who, sizeof(r->who), "%s", ui->user);
                snprintf(subject, sizeof(subject), "session:%s", s->id);
                csrf_token(ui, subject, r->csrf);
        }
}

/* A Host header's port: 1 to 5 digits, no leading zero, equal to port. */
static bool host_port_is(const char *s, unsigned port)
{
        size_t n = strlen(s);
        if (n == 0 || n > 5 || s[0] == '0' || strspn(s, "0123456789") != n)
                return false;
        return strtoul(s, NULL, 10) == port;
}

bool ui_auth_loopback_host(const char *host, unsigned port)
{
        if (!host)
                return false;
        const char *end, *rest;
        if (host[0] == '[') {
                end = strchr(host, ']');
                if (!end)
                        return false;
                rest = ++end;
        } else {
                end = host + strcspn(host, ":");
                rest = end;
        }
        if (*rest && (*rest != ':' || !host_port_is(rest + 1, port)))
                return false;
        char name[64];
        size_t n = (size_t)(end - host);
        if (n == 0 || n >= sizeof(name))
                return false;
        memcpy(name, host, n);
        name[n] = '\0';
        if (strcasecmp(name, "localhost") == 0 || strcmp(name, "[::1]") == 0)
                return true;
        /* inet_pton takes only the four-part dotted-decimal form (no
         * "127.1", no octal), so "127.0.0.1.evil.example" is no address. */
        struct in_addr a;
        return inet_pton(AF_INET, name, &a) == 1 && ntohl(a.s_addr) >> 24 == 127;
}

/* The port the request came in on: the connection's local address. */
static bool local_port(const struct ui_req *r, unsigned *ret_port)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
                r->c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct sockaddr_storage ss = { 0 };
        socklen_t len = sizeof(ss);
        if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&ss, &len) < 0)
                return false;
        if (ss.ss_family == AF_INET)
                *ret_port = ntohs(((const struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
                *ret_port = ntohs(((const struct sockaddr_in6 *)&ss)->sin6_port);
        else
                return false;
        return true;
}

bool ui_auth_host_ok(const struct ui_req *r)
{
        unsigned port;
        if (!local_port(r, &port))
                return false;
        return ui_auth_loopback_host(
                MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST), port);
}

static bool same_origin(const struct ui_req *r, const char **ret_reason)
{
        const char *site = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "Sec-Fetch-Site");
        if (site && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0) {
                *ret_reason = "cross-site request refused (Sec-Fetch-Site)";
                return false;
        }
        const char *host = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND,
                                                       MHD_HTTP_HEADER_HOST);
        const char *origin = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "Origin");
        const char *referer = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_REFERER);
        const char *from = origin ? origin : referer;
        if (!from)
                return true; /* not a browser: the CSRF token decides */
        if (!host) {
                *ret_reason = "request without a Host header refused";
                return false;
        }
        size_t hl = strlen(host);
        for (int tls = 0; tls < 2; tls++) {
                const char *scheme = tls ? "https://" : "http://";
                size_t sl = strlen(scheme);
                if (strncmp(from, scheme, sl) == 0 && strncmp(from + sl, host, hl) == 0 &&
                    (from[sl + hl] == '\0' || (!origin && from[sl + hl] == '/')))
                        return true;
        }
        *ret_reason = "cross-origin request refused (Origin does not match Host)";
        return false;
}

bool ui_auth_csrf_ok(const struct ui_req *r, const char **ret_reason)
{
        if (strcmp(r->method, MHD_HTTP_METHOD_POST) != 0) {
                *ret_reason = "actions are POST only";
                return false;
        }
        if (!same_origin(r, ret_reason))
                return false;
        char sent[80];
        if (!ui_form_value(&r->body, "csrf", sent, sizeof(sent)) || !r->csrf[0] ||
            !ui_auth_equal(sent, r->csrf)) {
                *ret_reason = "missing or wrong CSRF token (reload the page)";
                return false;
        }
        return true;
}

static struct ui_session *new_session(struct ui *ui)
{
        time_t now = time(NULL);
        struct ui_session *slot = &ui->sessions[0];
        for (size_t i = 0; i < UI_SESSIONS_MAX; i++) {
                struct ui_session *s = &ui->sessions[i];
                if (!s->id[0] || s->expires <= now) {
                        slot = s;
                        break;
                }
                if (s->expires < slot->expires)
                        slot = s; /* full: the oldest gives way */
        }
        unsigned char raw[32];
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return NULL;
        hex(raw, sizeof(raw), slot->id);
        slot->expires = now + UI_SESSION_TTL_S;
        return slot;
}

enum MHD_Result ui_auth_login(struct ui *ui, struct ui_req *r)
{
        const char *reason = NULL;
        if (!same_origin(r, &reason))
                return ui_login_page(r->c, MHD_HTTP_FORBIDDEN, reason);
        if (!ui->token)
                return ui_redirect(r->c, "/", NULL);
        char token[512];
        bool ok = ui_form_value(&r->body, "token", token, sizeof(token)) &&
                  ui_auth_equal(token, ui->token);
        OPENSSL_cleanse(token, sizeof(token));
        if (!ok)
                return ui_login_page(r->c, MHD_HTTP_UNAUTHORIZED, "wrong token");
        const struct ui_session *s = new_session(ui);
        if (!s)
                return ui_send_text(r->c, MHD_HTTP_INTERNAL_SERVER_ERROR, "no randomness\n");
        char cookie[200];
        snprintf(cookie, sizeof(cookie),
                 "boxcar_session=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s", s->id,
                 UI_SESSION_TTL_S, ui->secure_cookie ? "; Secure" : "");
        return ui_redirect(r->c, "/", cookie);
}

enum MHD_Result ui_auth_logout(struct ui *ui, struct ui_req *r)
{
        const char *reason = NULL;
        if (!ui_auth_csrf_ok(r, &reason))
                return ui_error_page(ui, r, MHD_HTTP_FORBIDDEN, reason);
        if (r->session) {
                struct ui_session *s = (struct ui_session *)r->session;
                memset(s, 0, sizeof(*s));
        }
        return ui_redirect(r->c, "/login",
                           "boxcar_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
}
