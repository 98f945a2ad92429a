/* EKS IRSA and any OIDC federation: STS AssumeRoleWithWebIdentity, an
 * unsigned POST (the web identity token is the proof), answered in XML;
 * and the XML both STS actions answer with (creds_assume.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/io.h"
#include "storage/creds-internal.h"
#include "storage/sigv4.h"

#define WEB_TOKEN_MAX (64 * 1024)

/* STS answers are flat enough that a search by tag name is exact. */
char *creds_xml_text(const char *xml, const char *tag)
{
        char open[64], close[64];
        snprintf(open, sizeof(open), "<%s>", tag);
        snprintf(close, sizeof(close), "</%s>", tag);
        const char *s = strstr(xml, open);
        if (!s)
                return NULL;
        s += strlen(open);
        const char *e = strstr(s, close);
        if (!e)
                return NULL;
        char *out = malloc((size_t)(e - s) + 1);
        if (!out)
                return NULL;
        static const struct {
                const char *ent;
                char c;
        } ents[] = {
                { "&amp;", '&' },  { "&lt;", '<' },    { "&gt;", '>' },
                { "&quot;", '"' }, { "&apos;", '\'' },
        };
        size_t o = 0;
        while (s < e) {
                size_t i = 0;
                for (; *s == '&' && i < ELEMENTSOF(ents); i++)
                        if (strncmp(s, ents[i].ent, strlen(ents[i].ent)) == 0)
                                break;
                if (*s == '&' && i < ELEMENTSOF(ents)) {
                        out[o++] = ents[i].c;
                        s += strlen(ents[i].ent);
                } else {
                        out[o++] = *s++;
                }
        }
        out[o] = '\0';
        return out;
}

/* STS's error as "HTTP 403 (AccessDenied): <message>", the message kept to
 * printable ASCII and 200 bytes (it is the server's text, not ours). */
int creds_sts_error(const char *action, long status, const char *body, struct bc_error *err)
{
        _cleanup_free_ char *code = creds_xml_text(body, "Code");
        _cleanup_free_ char *msg = creds_xml_text(body, "Message");
        if (msg) {
                for (char *p = msg; *p; p++)
                        if (*p < 0x20 || *p > 0x7e)
                                *p = ' ';
                if (strlen(msg) > 200)
                        msg[200] = '\0';
        }
        return bc_error_set(err, BC_FETCH_FAILED, EACCES, "STS %s returned HTTP %ld%s%.64s%s%s%s",
                            action, status, code ? " (" : "", code ? code : "", code ? ")" : "",
                            msg ? ": " : "", msg ? msg : "");
}

static int form_body(const struct web_identity *w, const char *token, char **ret)
{
        char session[64];
        if (!w->session_name)
                snprintf(session, sizeof(session), "boxcar-%lld", (long long)time(NULL));
        const struct {
                const char *k, *v;
        } f[] = {
                { "Action", "AssumeRoleWithWebIdentity" },
                { "Version", "2011-06-15" },
                { "RoleArn", w->role_arn },
                { "RoleSessionName", w->session_name ? w->session_name : session },
                { "WebIdentityToken", token },
        };
        struct dynbuf b;
        dynbuf_init(&b, 2 * WEB_TOKEN_MAX + 4096);
        int r = 0;
        for (size_t i = 0; r == 0 && i < ELEMENTSOF(f); i++) {
                r = dynbuf_printf(&b, "%s%s=", i ? "&" : "", f[i].k);
                r = r ? r : sigv4_uri_encode(&b, f[i].v, 0);
        }
        *ret = r == 0 ? dynbuf_steal(&b) : NULL;
        if (b.data)
                memset(b.data, 0, b.len);
        dynbuf_done(&b);
        return *ret ? 0 : -ENOMEM;
}

int creds_web_identity_fetch(const struct web_identity *w, struct aws_creds *ret,
                             struct bc_error *err)
{
        _cleanup_(aws_secret_freep) char *token = NULL;
        size_t len = 0;
        int r = bc_read_all(w->token_file, WEB_TOKEN_MAX, &token, &len, err);
        if (r < 0)
                return bc_error_prefix(err, "token file");
        while (len && (token[len - 1] == '\n' || token[len - 1] == '\r' || token[len - 1] == ' '))
                token[--len] = '\0';
        if (!len)
                return bc_error_set(err, BC_FETCH_FAILED, EINVAL, "token file %s is empty",
                                    w->token_file);
        _cleanup_(aws_secret_freep) char *body = NULL;
        if (form_body(w, token, &body) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const char *headers[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
                                  "Accept: application/xml", NULL };
        return creds_sts_call("AssumeRoleWithWebIdentity", w->sts_endpoint, w->ca_bundle, headers,
                              body, ret, err);
}

int creds_sts_call(const char *action, const char *endpoint, const char *ca_bundle,
                   const char *const *headers, const char *body, struct aws_creds *ret,
                   struct bc_error *err)
{
        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "%s/", endpoint) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        struct creds_http_request req = {
                .method = "POST",
                .url = url,
                .headers = headers,
                .body = body,
                .connect_timeout_ms = 5000,
                .timeout_ms = 15000,
                .ca_bundle = ca_bundle,
        };
        long status = 0;
        _cleanup_(aws_secret_freep) char *resp = NULL;
        int r = creds_http(&req, &status, &resp, err);
        if (r < 0)
                return bc_error_prefix(err, "STS %s", action);
        if (status != 200)
                return creds_sts_error(action, status, resp, err);
        return creds_sts_credentials(action, resp, ret, err);
}

int creds_sts_credentials(const char *action, const char *resp, struct aws_creds *ret,
                          struct bc_error *err)
{
        struct aws_creds c = {
                .access_key = creds_xml_text(resp, "AccessKeyId"),
                .secret_key = creds_xml_text(resp, "SecretAccessKey"),
                .session_token = creds_xml_text(resp, "SessionToken"),
        };
        _cleanup_free_ char *exp = creds_xml_text(resp, "Expiration");
        if (!c.access_key || !c.secret_key || !c.session_token || !exp ||
            creds_parse_time(exp, &c.expires) < 0) {
                aws_creds_done(&c);
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "STS %s: the response lacks Credentials (AccessKeyId, "
                                    "SecretAccessKey, SessionToken, Expiration)",
                                    action);
        }
        *ret = c;
        return 0;
}
