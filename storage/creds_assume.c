/* role_arn with source_profile: STS AssumeRole, a POST signed (SigV4,
 * service "sts") with the source profile's credentials, answered in XML
 * like AssumeRoleWithWebIdentity. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/sha.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "storage/creds-internal.h"
#include "storage/sigv4.h"

static int form_body(const struct assume_role *a, char **ret)
{
        char session[64];
        if (!a->session_name)
                snprintf(session, sizeof(session), "boxcar-%lld", (long long)time(NULL));
        const struct {
                const char *k, *v;
        } f[] = {
                { "Action", "AssumeRole" },
                { "Version", "2011-06-15" },
                { "RoleArn", a->role_arn },
                { "RoleSessionName", a->session_name ? a->session_name : session },
                { "ExternalId", a->external_id },
                { "DurationSeconds", a->duration_seconds },
        };
        struct dynbuf b;
        dynbuf_init(&b, 16 * 1024);
        int r = 0;
        for (size_t i = 0; r == 0 && i < ELEMENTSOF(f); i++) {
                if (!f[i].v)
                        continue;
                r = dynbuf_printf(&b, "%s%s=", i ? "&" : "", f[i].k);
                r = r ? r : sigv4_uri_encode(&b, f[i].v, 0);
        }
        *ret = r == 0 ? dynbuf_steal(&b) : NULL;
        dynbuf_done(&b);
        return *ret ? 0 : -ENOMEM;
}

/* "host[:port]" of scheme://host[:port]. */
static const char *host_of(const char *endpoint)
{
        const char *p = strstr(endpoint, "://");
        return p ? p + 3 : endpoint;
}

int creds_assume_role_fetch(const struct assume_role *a, const struct aws_creds *src,
                            struct aws_creds *ret, struct bc_error *err)
{
        _cleanup_free_ char *body = NULL;
        if (form_body(a, &body) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        unsigned char md[SHA256_DIGEST_LENGTH];
        SHA256((const unsigned char *)body, strlen(body), md);
        char sha[65];
        for (size_t i = 0; i < sizeof(md); i++)
                snprintf(sha + 2 * i, 3, "%02x", md[i]);
        const char *ctype = "application/x-www-form-urlencoded; charset=utf-8";
        struct sigv4_pair signed_headers[] = { { "content-type", ctype } };
        time_t now = time(NULL);
        struct sigv4_request sr = {
                .method = "POST",
                .host = host_of(a->sts_endpoint),
                .path = "/",
                .headers = signed_headers,
                .n_headers = ELEMENTSOF(signed_headers),
                .payload_sha256 = sha,
                .access_key = src->access_key,
                .secret_key = src->secret_key,
                .session_token = src->session_token,
                .region = a->region,
                .service = "sts",
                .now = now,
        };
        _cleanup_free_ char *auth = NULL;
        int r = sigv4_authorization(&sr, &auth, err);
        if (r < 0)
                return bc_error_prefix(err, "STS AssumeRole");
        char date[17];
        sigv4_amz_date(now, date);
        _cleanup_free_ char *h_auth = NULL, *h_date = NULL, *h_sha = NULL, *h_ctype = NULL;
        _cleanup_(aws_secret_freep) char *h_tok = NULL;
        if (asprintf(&h_auth, "Authorization: %s", auth) < 0 ||
            asprintf(&h_date, "X-Amz-Date: %s", date) < 0 ||
            asprintf(&h_sha, "X-Amz-Content-Sha256: %s", sha) < 0 ||
            asprintf(&h_ctype, "Content-Type: %s", ctype) < 0 ||
            (src->session_token &&
             asprintf(&h_tok, "X-Amz-Security-Token: %s", src->session_token) < 0))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const char *headers[] = { h_auth, h_date, h_sha, h_ctype, "Accept: application/xml",
                                  h_tok,  NULL };
        return creds_sts_call("AssumeRole", a->sts_endpoint, a->ca_bundle, headers, body, ret,
                              err);
}
