#include "worker/webhook/webhook_post.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "common/utf8.h"
#include "worker/webhook/webhook_post-internal.h"
#include "version.h"

/* Caps on header values we send: they come from our own code, but a bad
 * one must fail loudly rather than produce a malformed request. */
#define HEADER_VALUE_MAX 1024

BC_DEFINE_CLEANUP(CURL *, curl_easy_cleanup)
BC_DEFINE_CLEANUP(struct curl_slist *, curl_slist_free_all)
BC_DEFINE_CLEANUP(CURLU *, curl_url_cleanup)
BC_DEFINE_CLEANUP(char *, curl_free)

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result;

static void global_init(void)
{
        global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void webhook_response_done(struct webhook_response *r)
{
        if (!r)
                return;
        free(r->error);
        *r = (struct webhook_response){ .status = 0, .retry_after_s = -1 };
}

/* ---- Retry-After ---------------------------------------------------- */

double webhook_parse_retry_after(const char *value, long long now)
{
        if (!value)
                return -1;
        while (*value == ' ' || *value == '\t')
                value++;
        size_t len = strlen(value);
        while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
                len--;
        if (len == 0)
                return -1;
        if (isdigit((unsigned char)value[0])) {
                double secs = 0;
                for (size_t i = 0; i < len; i++) {
                        if (!isdigit((unsigned char)value[i]))
                                return -1;
                        /* Saturate instead of overflowing on absurd values. */
                        if (secs < WEBHOOK_RETRY_AFTER_MAX_S)
                                secs = secs * 10 + (value[i] - '0');
                }
                return secs < WEBHOOK_RETRY_AFTER_MAX_S ? secs : WEBHOOK_RETRY_AFTER_MAX_S;
        }
        /* Every HTTP-date form starts with a day name.  Requiring one keeps
         * curl_getdate's lenient parser from reading "5s" or "soon" as a
         * date. */
        if (!isalpha((unsigned char)value[0]) || len > 64)
                return -1;
        char buf[65];
        memcpy(buf, value, len);
        buf[len] = '\0';
        time_t t = curl_getdate(buf, NULL);
        if (t == (time_t)-1)
                return -1;
        double d = (double)t - (double)now;
        if (d < 0)
                return 0;
        return d < WEBHOOK_RETRY_AFTER_MAX_S ? d : WEBHOOK_RETRY_AFTER_MAX_S;
}

/* ---- error text --------------------------------------------------------- */

char *webhook_body_quote(const char *body, size_t len, size_t max)
{
        size_t n = len < max ? len : max;
        /* Back off to a character boundary rather than quote half of one. */
        for (int i = 0; i < 3 && n > 0 && n < len && ((unsigned char)body[n] & 0xc0) == 0x80; i++)
                n--;
        char *s = utf8_sanitize(body ? body : "", n);
        if (!s)
                return NULL;
        /* One line for the logs: controls (newlines, escapes for a terminal)
         * become spaces and whitespace runs collapse. */
        size_t o = 0;
        bool space = true;
        for (size_t i = 0; s[i]; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c < 0x20 || c == 0x7f || c == ' ') {
                        if (!space)
                                s[o++] = ' ';
                        space = true;
                } else {
                        s[o++] = (char)c;
                        space = false;
                }
        }
        while (o > 0 && s[o - 1] == ' ')
                o--;
        s[o] = '\0';
        return s;
}

static char *transport_error(CURL *c, CURLcode cc, double timeout_s)
{
        char *msg = NULL;
        int r = -1;
        long os_errno = 0;
        char ebuf[128];
        switch (cc) {
        case CURLE_OPERATION_TIMEDOUT: {
                curl_off_t connect_us = 0;
                curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
                r = asprintf(&msg, "timed out after %gs%s", timeout_s,
                             connect_us > 0 ? "" : " (while connecting)");
                break;
        }
        case CURLE_COULDNT_CONNECT:
                curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
                if (os_errno == ECONNREFUSED)
                        r = asprintf(&msg, "connection refused");
                else if (os_errno > 0)
                        r = asprintf(&msg, "could not connect: %s",
                                     strerror_r((int)os_errno, ebuf, sizeof(ebuf)));
                else
                        r = asprintf(&msg, "could not connect");
                break;
        case CURLE_COULDNT_RESOLVE_HOST:
                r = asprintf(&msg, "could not resolve host");
                break;
        case CURLE_UNSUPPORTED_PROTOCOL:
                r = asprintf(&msg, "unsupported URL scheme (only http and https)");
                break;
        case CURLE_URL_MALFORMAT:
                r = asprintf(&msg, "malformed URL");
                break;
        case CURLE_GOT_NOTHING:
                r = asprintf(&msg, "empty reply from server");
                break;
        default:
                /* curl_easy_strerror is a fixed text per code; the error
                 * buffer is avoided because it may quote the host or URL. */
                r = asprintf(&msg, "%s", curl_easy_strerror(cc));
                break;
        }
        return r < 0 ? NULL : msg;
}

/* ---- secrets of the URL echoed back -------------------------------------- */

/* Shorter strings are too common to be secrets and would shred the text. */
#define REDACT_MIN_LEN 3
#define REDACT_MAX_SECRETS 32

struct secret_list {
        char *v[REDACT_MAX_SECRETS];
        size_t n;
};

static void secret_list_done(struct secret_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        l->n = 0;
}

static void secret_add(struct secret_list *l, const char *v, size_t len)
{
        if (len < REDACT_MIN_LEN || l->n >= REDACT_MAX_SECRETS)
                return;
        char *copy = strndup(v, len);
        if (copy)
                l->v[l->n++] = copy;
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        c = (char)(c | 0x20);
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* v as given and percent-decoded ('+' as space too): a server may echo
 * either form. */
static void secret_add_both(struct secret_list *l, const char *v, size_t len)
{
        secret_add(l, v, len);
        _cleanup_free_ char *d = malloc(len + 1);
        if (!d)
                return;
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                if (v[i] == '%' && i + 2 < len && hex_value(v[i + 1]) >= 0 &&
                    hex_value(v[i + 2]) >= 0) {
                        d[o++] = (char)(hex_value(v[i + 1]) * 16 + hex_value(v[i + 2]));
                        i += 2;
                } else {
                        d[o++] = v[i] == '+' ? ' ' : v[i];
                }
        }
        if (o != len || memcmp(d, v, len) != 0)
                secret_add(l, d, o);
}

/* The URL's user, password, whole query and each query value. */
static void collect_secrets(const char *url, struct secret_list *l)
{
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
        if (!u || !url ||
            curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
                return;
        static const CURLUPart parts[] = { CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_QUERY };
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                _cleanup_(curl_freep) char *v = NULL;
                if (curl_url_get(u, parts[i], &v, 0) != CURLUE_OK || !v)
                        continue;
                secret_add_both(l, v, strlen(v));
                if (parts[i] != CURLUPART_QUERY)
                        continue;
                for (const char *p = v; *p;) {
                        size_t n = strcspn(p, "&");
                        const char *eq = memchr(p, '=', n);
                        if (eq)
                                secret_add_both(l, eq + 1, n - (size_t)(eq + 1 - p));
                        p += n + (p[n] == '&');
                }
        }
}

static int by_length_desc(const void *a, const void *b)
{
        size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
        return la < lb ? 1 : la > lb ? -1 : 0;
}

char *webhook_redact_url_secrets(const char *text, size_t len, const char *url, size_t *ret_len)
{
        struct secret_list l = { .n = 0 };
        collect_secrets(url, &l);
        /* Longest first, so a secret containing a shorter one goes whole. */
        qsort(l.v, l.n, sizeof(l.v[0]), by_length_desc);
        char *out = malloc(len * 3 + 1); /* "***" for a 3-byte secret at worst */
        if (!out) {
                secret_list_done(&l);
                return NULL;
        }
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                size_t hit = 0;
                for (size_t k = 0; k < l.n && !hit; k++) {
                        size_t n = strlen(l.v[k]);
                        if (n <= len - i && memcmp(text + i, l.v[k], n) == 0)
                                hit = n;
                }
                if (hit) {
                        memcpy(out + o, "***", 3);
                        o += 3;
                        i += hit;
                } else {
                        out[o++] = text[i++];
                }
        }
        out[o] = '\0';
        secret_list_done(&l);
        *ret_len = o;
        return out;
}

static char *status_error(long status, const char *body, size_t len, const char *url)
{
        char *msg = NULL;
        int r;
        if (status >= 300 && status < 400) {
                r = asprintf(&msg, "HTTP %ld: redirect not followed", status);
                return r < 0 ? NULL : msg;
        }
        size_t clean_len = 0;
        _cleanup_free_ char *clean = webhook_redact_url_secrets(body, len, url, &clean_len);
        if (!clean)
                return NULL;
        _cleanup_free_ char *quote = webhook_body_quote(clean, clean_len,
                                                        WEBHOOK_ERROR_BODY_QUOTE);
        if (quote && *quote)
                r = asprintf(&msg, "HTTP %ld: %s", status, quote);
        else
                r = asprintf(&msg, "HTTP %ld", status);
        return r < 0 ? NULL : msg;
}

/* ---- the request -------------------------------------------------------- */

struct body_sink {
        char data[WEBHOOK_RESPONSE_CAP];
        size_t len;
        bool full;
};

/* Keeps the first WEBHOOK_RESPONSE_CAP bytes and then ends the transfer
 * (returning short makes libcurl stop with CURLE_WRITE_ERROR, which the
 * caller recognises by sink->full): nothing a receiver sends can make us
 * read on until the timeout. */
static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct body_sink *sink = userdata;
        size_t n = size * nmemb;
        size_t room = sizeof(sink->data) - sink->len;
        size_t take = n < room ? n : room;
        memcpy(sink->data + sink->len, ptr, take);
        sink->len += take;
        if (take < n) {
                sink->full = true;
                return take;
        }
        return n;
}

/* Printable ASCII and spaces only: a CR or LF in a value would let it
 * add headers of its own. */
static bool header_value_ok(const char *v)
{
        size_t n = v ? strlen(v) : 0;
        if (n == 0 || n > HEADER_VALUE_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] >= 0x7f)
                        return false;
        return true;
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "%s: %s", name, value) < 0)
                return -ENOMEM;
        struct curl_slist *l = curl_slist_append(*list, line);
        if (!l)
                return -ENOMEM;
        *list = l;
        return 0;
}

static int build_headers(const struct webhook_request *req, struct curl_slist **ret,
                         struct bc_error *err)
{
        const char *ua = req->user_agent ? req->user_agent : "boxcar/" BOXCAR_VERSION;
        if (!header_value_ok(req->msg_id) || !header_value_ok(req->signature) ||
            !header_value_ok(ua))
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook: id, signature or user agent empty, too long or "
                                    "not printable");
        char ts[32];
        snprintf(ts, sizeof(ts), "%lld", req->timestamp);
        _cleanup_(curl_slist_free_allp) struct curl_slist *h = NULL;
        int r = add_header(&h, "Content-Type", "application/json");
        r = r ? r : add_header(&h, "webhook-id", req->msg_id);
        r = r ? r : add_header(&h, "webhook-timestamp", ts);
        r = r ? r : add_header(&h, "webhook-signature", req->signature);
        r = r ? r : add_header(&h, "User-Agent", ua);
        /* No "Expect: 100-continue" round trip for large bodies: many
         * receivers never answer it and we would stall a second. */
        r = r ? r : add_header(&h, "Expect", "");
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, -r, "webhook: out of memory");
        *ret = steal_pointer(&h);
        return 0;
}

static int setup_handle(CURL *c, const struct webhook_request *req, double timeout_s,
                        struct curl_slist *headers, struct body_sink *sink)
{
        long timeout_ms = (long)(timeout_s * 1000);
        if (timeout_ms < 1)
                timeout_ms = 1;
        CURLcode cc = CURLE_OK;
#define SET(opt, val) (cc = cc != CURLE_OK ? cc : curl_easy_setopt(c, opt, val))
        SET(CURLOPT_URL, req->url);
        /* Only web URLs, and a receiver's redirect is never followed: a
         * webhook URL must not become a way to reach file://, gopher:// or
         * an internal host chosen by whoever answers. */
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        /* Worker threads must not get SIGALRM from the resolver. */
        SET(CURLOPT_NOSIGNAL, 1L);
        /* A kept connection is not kept forever: the receiver's DNS name
         * is looked up again at least this often. */
        SET(CURLOPT_MAXLIFETIME_CONN, 60L);
        SET(CURLOPT_TIMEOUT_MS, timeout_ms);
        SET(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDS, req->body ? req->body : "");
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(req->body ? req->body_len : 0));
        SET(CURLOPT_HTTPHEADER, headers);
        SET(CURLOPT_WRITEFUNCTION, sink_write);
        SET(CURLOPT_WRITEDATA, sink);
#undef SET
        return cc == CURLE_OK ? 0 : -EINVAL;
}

static double retry_after_of(CURL *c)
{
        struct curl_header *h = NULL;
        if (curl_easy_header(c, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h)
                return -1;
        return webhook_parse_retry_after(h->value, (long long)time(NULL));
}

/* Turns the finished transfer into a response. */
static int outcome(CURL *c, CURLcode cc, const struct body_sink *sink, const char *url,
                   double timeout_s, struct webhook_response *resp)
{
        /* Stopping at the body cap is our choice, not a failure. */
        if (cc == CURLE_WRITE_ERROR && sink->full)
                cc = CURLE_OK;
        resp->retry_after_s = retry_after_of(c);
        if (cc != CURLE_OK) {
                resp->timed_out = cc == CURLE_OPERATION_TIMEDOUT;
                resp->error = transport_error(c, cc, timeout_s);
                return resp->error ? 0 : -ENOMEM;
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
        if (resp->status >= 200 && resp->status < 300)
                return 0;
        resp->error = status_error(resp->status, sink->data, sink->len, url);
        return resp->error ? 0 : -ENOMEM;
}

/* A connection cache of its own: libcurl keeps the easy handle's
 * connections open between transfers, so a receiver's connection (and its
 * TLS session) serves the next delivery instead of a new handshake, and a
 * receiver's server sees one long connection instead of one per event. */
struct webhook_client {
        CURL *curl;
};

int webhook_client_new(struct webhook_client **ret, struct bc_error *err)
{
        pthread_once(&global_once, global_init);
        if (global_result != CURLE_OK)
                return bc_error_set(err, BC_INTERNAL, EIO, "webhook: curl_global_init: %s",
                                    curl_easy_strerror(global_result));
        _cleanup_free_ struct webhook_client *c = calloc(1, sizeof(*c));
        if (!c)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook: out of memory");
        c->curl = curl_easy_init();
        if (!c->curl)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook: curl_easy_init failed");
        *ret = steal_pointer(&c);
        return 0;
}

void webhook_client_free(struct webhook_client *c)
{
        if (!c)
                return;
        curl_easy_cleanup(c->curl);
        free(c);
}

static int post_on(CURL *c, const struct webhook_request *req, struct webhook_response *ret,
                   struct bc_error *err)
{
        double timeout_s = req->timeout_s > 0 ? req->timeout_s : WEBHOOK_DEFAULT_TIMEOUT_S;
        /* Every option comes from this request; the connections stay. */
        curl_easy_reset(c);
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        int r = build_headers(req, &headers, err);
        if (r < 0)
                return r;
        _cleanup_free_ struct body_sink *sink = calloc(1, sizeof(*sink));
        if (!sink)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook: out of memory");
        if (setup_handle(c, req, timeout_s, headers, sink) < 0)
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook: libcurl refused an option (built without "
                                    "http/https?)");

        struct netguard_curl guard = { .guard = req->guard };
        if (req->guard)
                netguard_curl_attach(c, &guard);
        CURLcode cc = curl_easy_perform(c);
        struct webhook_response resp = { .status = 0, .retry_after_s = -1 };
        if (cc != CURLE_OK && guard.refused) {
                resp.error = netguard_curl_message(&guard);
                r = resp.error ? 0 : -ENOMEM;
        } else {
                r = outcome(c, cc, sink, req->url, timeout_s, &resp);
        }
        /* The handle outlives headers and sink: it must not point at them. */
        curl_easy_reset(c);
        if (r < 0) {
                webhook_response_done(&resp);
                return bc_error_set(err, BC_INTERNAL, -r, "webhook: out of memory");
        }
        *ret = resp;
        return 0;
}

int webhook_client_post(struct webhook_client *client, const struct webhook_request *req,
                        struct webhook_response *ret, struct bc_error *err)
{
        if (!client || !req || !req->url)
                return bc_error_set(err, BC_INTERNAL, EINVAL, "webhook: no client or URL");
        return post_on(client->curl, req, ret, err);
}

int webhook_post(const struct webhook_request *req, struct webhook_response *ret,
                 struct bc_error *err)
{
        if (!req || !req->url)
                return bc_error_set(err, BC_INTERNAL, EINVAL, "webhook: no URL");
        struct webhook_client *client = NULL;
        int r = webhook_client_new(&client, err);
        if (r < 0)
                return r;
        r = post_on(client->curl, req, ret, err);
        webhook_client_free(client);
        return r;
}

/* ---- URLs in logs --------------------------------------------------------- */

char *webhook_url_for_log(const char *url)
{
        static const char invalid[] = "<invalid URL>";
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
        if (!u)
                return NULL;
        if (!url || curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
                return strdup(invalid);
        _cleanup_(curl_freep) char *scheme = NULL;
        _cleanup_(curl_freep) char *host = NULL;
        _cleanup_(curl_freep) char *port = NULL;
        _cleanup_(curl_freep) char *path = NULL;
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
                return strdup(invalid);
        /* The port only when the URL names one; the path is "/" at least. */
        curl_url_get(u, CURLUPART_PORT, &port, 0);
        curl_url_get(u, CURLUPART_PATH, &path, 0);
        char *out = NULL;
        if (asprintf(&out, "%s://%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
                     path ? path : "/") < 0)
                return NULL;
        return out;
}

/* "scheme://host:port" of url, the port made explicit, or NULL. */
static char *origin_of(const char *url)
{
        _cleanup_(curl_url_cleanupp) CURLU *u = curl_url();
        if (!u || !url || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
                return NULL;
        _cleanup_(curl_freep) char *scheme = NULL;
        _cleanup_(curl_freep) char *host = NULL;
        _cleanup_(curl_freep) char *port = NULL;
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
                return NULL;
        char *out = NULL;
        if (asprintf(&out, "%s://%s:%s", scheme, host, port) < 0)
                return NULL;
        for (char *p = out; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        return out;
}

bool webhook_same_origin(const char *a, const char *b)
{
        _cleanup_free_ char *oa = origin_of(a);
        _cleanup_free_ char *ob = origin_of(b);
        return oa && ob && strcmp(oa, ob) == 0;
}
