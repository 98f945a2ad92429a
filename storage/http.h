/* libcurl plumbing shared by downloads and uploads: one place for
 * timeouts, protocol restrictions, retry decisions, backoff and the rule
 * that a URL appears in messages without its query string (a presigned
 * URL's query is a credential).  Internal. */
#ifndef BC_STORAGE_HTTP_H
#define BC_STORAGE_HTTP_H

#include <stdbool.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "storage/storage.h"

BC_DEFINE_CLEANUP(CURL *, curl_easy_cleanup)
BC_DEFINE_CLEANUP(struct curl_slist *, curl_slist_free_all)

/* Transfer policy of cfg, or the defaults when cfg is NULL. */
struct http_policy {
        int retries;
        int retry_base_ms;
        int retry_max_ms;
        int connect_timeout_s;
        int low_speed_time_s;
        const char *ca_bundle; /* CURLOPT_CAINFO; NULL: the system's CAs */
};
void http_policy_of(const struct storage_config *cfg, struct http_policy *ret);

/* curl_global_init exactly once per process (thread-safe). */
int http_global_init(struct bc_error *err);

/* scheme://host/path of url: no query, no fragment, no userinfo.  Never
 * NULL (a fixed placeholder when out of memory); free() it. */
char *http_redact(const char *url);

/* Options every transfer gets: http/https only (also on redirects), no
 * signals, timeouts from the policy, the path sent as is. */
void http_setup(CURL *c, const struct http_policy *p, char *errbuf);

/* Whether an attempt that ended this way is worth repeating. */
bool http_retryable(CURLcode cc, long status);

/* Sleeps before attempt number `attempt` (1-based): exponential with
 * jitter, capped. */
void http_backoff(const struct http_policy *p, int attempt);

/* Response bodies kept in a struct dynbuf (CURLOPT_WRITEDATA), bounded by
 * its cap.  http_body_head_cb keeps the body's head up to the cap and
 * reads the rest away (an error document: its head says why);
 * http_body_whole_cb fails the transfer (CURLE_WRITE_ERROR) when the body
 * is over the cap, for documents that are worthless cut (credentials). */
size_t http_body_head_cb(char *ptr, size_t size, size_t nmemb, void *dynbuf);
size_t http_body_whole_cb(char *ptr, size_t size, size_t nmemb, void *dynbuf);
/* Appends what of data[0..n) still fits under b's cap. */
void http_keep_head(struct dynbuf *b, const char *data, size_t n);

/* "AccessDenied" from an S3 XML error body (bounded), or "" */
void http_s3_error_code(const char *body, char out[static 64]);

/* Short text for an attempt's failure: curl's error or "HTTP 503 (SlowDown)". */
void http_describe(CURLcode cc, long status, const char *errbuf, const char *body,
                   char out[static 256]);

#endif
