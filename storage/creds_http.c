/* The credential sources' HTTP client: short timeouts (a metadata service
 * answers in milliseconds or not at all), no redirects (a credentials
 * request must not be sent elsewhere), bounded bodies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "storage/creds-internal.h"
#include "storage/http.h"

int creds_http(const struct creds_http_request *req, long *ret_status, char **ret_body,
               struct bc_error *err)
{
        int r = http_global_init(err);
        if (r < 0)
                return r;
        _cleanup_(curl_easy_cleanupp) CURL *c = curl_easy_init();
        if (!c)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "curl_easy_init failed");
        _cleanup_(curl_slist_free_allp) struct curl_slist *h = NULL;
        for (const char *const *p = req->headers; p && *p; p++) {
                struct curl_slist *n = curl_slist_append(h, *p);
                if (!n)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                h = n;
        }
        struct dynbuf body;
        dynbuf_init(&body, CREDS_BODY_MAX);
        char errbuf[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_URL, req->url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_body_whole_cb);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
        /* An empty body still needs Content-Length: 0 (IMDS' token PUT). */
        if (req->body || strcmp(req->method, "GET") != 0)
                curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, req->body ? req->body : "");
        if (h)
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        if (req->ca_bundle)
                curl_easy_setopt(c, CURLOPT_CAINFO, req->ca_bundle);
        CURLcode cc = curl_easy_perform(c);
        if (cc != CURLE_OK) {
                /* A cut-off answer may already hold credentials. */
                if (body.data)
                        explicit_bzero(body.data, body.len);
                dynbuf_done(&body);
                _cleanup_free_ char *where = http_redact(req->url);
                return bc_error_set(err, BC_FETCH_FAILED, EIO, "%s %s: %s", req->method, where,
                                    cc == CURLE_WRITE_ERROR ? "response larger than 64 KiB"
                                    : *errbuf               ? errbuf
                                                            : curl_easy_strerror(cc));
        }
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        char *data = dynbuf_steal(&body);
        if (!data)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret_status = status;
        *ret_body = data;
        return 0;
}
