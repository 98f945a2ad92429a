/* Header-signed S3 requests: the header list that goes with a signature
 * made just now, with the credentials of this moment (temporary ones are
 * refreshed by storage/creds.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "storage/http.h"
#include "storage/s3.h"

static int add_header(struct curl_slist **l, const char *name, const char *value)
{
        char *line = NULL;
        if (asprintf(&line, "%s: %s", name, value) < 0)
                return -ENOMEM;
        struct curl_slist *n = curl_slist_append(*l, line);
        free(line);
        if (!n)
                return -ENOMEM;
        *l = n;
        return 0;
}

int s3_signed_headers(const struct s3_call *c, struct curl_slist **ret, struct bc_error *err)
{
        _cleanup_(aws_creds_donep) struct aws_creds creds = { 0 };
        int r = s3_credentials(c->cfg, &creds, err);
        if (r < 0)
                return r;
        char date[17];
        time_t now = time(NULL);
        sigv4_amz_date(now, date);
        struct sigv4_request req = {
                .method = c->method,
                .host = c->target->host,
                .path = c->target->path,
                .query = c->query,
                .n_query = c->n_query,
                .headers = c->headers,
                .n_headers = c->n_headers,
                .payload_sha256 = c->payload_sha256,
                .access_key = creds.access_key,
                .secret_key = creds.secret_key,
                .session_token = creds.session_token,
                .region = c->cfg->region,
                .now = now,
        };
        _cleanup_free_ char *auth = NULL;
        r = sigv4_authorization(&req, &auth, err);
        if (r < 0)
                return r;
        _cleanup_(curl_slist_free_allp) struct curl_slist *l = NULL;
        for (size_t i = 0; r == 0 && i < c->n_headers; i++)
                r = add_header(&l, c->headers[i].name, c->headers[i].value);
        r = r ? r : add_header(&l, "x-amz-date", date);
        r = r ? r : add_header(&l, "x-amz-content-sha256", c->payload_sha256);
        if (creds.session_token)
                r = r ? r : add_header(&l, "x-amz-security-token", creds.session_token);
        r = r ? r : add_header(&l, "Authorization", auth);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret = steal_pointer(&l);
        return 0;
}
