/* Does the bucket answer to our settings?  One signed ListObjects
 * (max-keys=1 under the prefix), so a missing bucket, a wrong key or
 * secret, a missing permission or an unreachable endpoint shows at start
 * and in /readyz, with S3's own error code, instead of in the first job.
 * ListObjects (v1) rather than V2: both need s3:ListBucket, which the HEAD
 * before each upload needs anyway (without it S3 answers 403 for a missing
 * key), and s3rver fails a truncated V2 listing with InternalError. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "storage/http.h"
#include "storage/s3.h"
#include "storage/storage.h"

#define CHECK_BODY_MAX 4096

int storage_check_bucket(const struct storage_config *cfg, char ret_why[static 160],
                         struct bc_error *err)
{
        snprintf(ret_why, 160, "internal error");
        int r = http_global_init(err);
        if (r < 0)
                return r;
        _cleanup_(s3_target_donep) struct s3_target t = { 0 };
        r = s3_target_bucket(cfg, &t, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *prefix = NULL;
        if (asprintf(&prefix, "%s%s", cfg->prefix, *cfg->prefix ? "/" : "") < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const struct sigv4_pair query[] = { { "max-keys", "1" }, { "prefix", prefix } };
        _cleanup_(dynbuf_donep) struct dynbuf url;
        dynbuf_init(&url, 8192);
        r = dynbuf_printf(&url, "%s?max-keys=1&prefix=", t.url);
        r = r ? r : sigv4_uri_encode(&url, prefix, 0);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");

        struct s3_call call = { .cfg = cfg,
                                .method = "GET",
                                .target = &t,
                                .query = query,
                                .n_query = ELEMENTSOF(query),
                                .payload_sha256 = SIGV4_EMPTY_SHA256 };
        _cleanup_(curl_slist_free_allp) struct curl_slist *h = NULL;
        r = s3_signed_headers(&call, &h, err);
        if (r < 0) {
                snprintf(ret_why, 160, "credentials: %.140s", bc_error_message(err));
                return r;
        }
        _cleanup_(curl_easy_cleanupp) CURL *c = curl_easy_init();
        if (!c)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "curl_easy_init failed");
        struct http_policy p;
        http_policy_of(cfg, &p);
        char errbuf[CURL_ERROR_SIZE];
        _cleanup_(dynbuf_donep) struct dynbuf body;
        dynbuf_init(&body, CHECK_BODY_MAX);
        http_setup(c, &p, errbuf);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_URL, url.data);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_body_head_cb);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
        /* A probe, not a transfer: it must not hold up a worker's stop. */
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
                         p.connect_timeout_s < 5 ? (long)p.connect_timeout_s : 5L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        CURLcode cc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (cc != CURLE_OK) {
                snprintf(ret_why, 160, "unreachable: %.120s",
                         *errbuf ? errbuf : curl_easy_strerror(cc));
                return bc_error_set(err, BC_FETCH_FAILED, EHOSTUNREACH, "bucket %s at %s: %s",
                                    cfg->bucket, t.url, ret_why);
        }
        if (status == 200)
                return 0;
        char code[64];
        http_s3_error_code(body.data, code);
        if (*code)
                snprintf(ret_why, 160, "%s", code);
        else
                snprintf(ret_why, 160, "HTTP %ld", status);
        return bc_error_set(err, BC_FETCH_FAILED, status == 404 ? ENOENT : EACCES,
                            "bucket %s at %s: HTTP %ld%s%s%s (credentials from %s)", cfg->bucket,
                            t.url, status, *code ? " (" : "", code, *code ? ")" : "",
                            storage_credentials_source(cfg));
}
