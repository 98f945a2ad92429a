/* One webhook delivery attempt over HTTP(S) with libcurl: a signed POST,
 * no redirects, a capped response, and an outcome the retry logic can
 * act on.  Scheduling, retries and the outbox are the caller's.
 *
 * Thread safety: any number of threads may call webhook_post() at once;
 * each call uses its own easy handle.  libcurl's global initialisation is
 * done here, once per process, behind pthread_once (libcurl 7.84+ built
 * with CURL_VERSION_THREADSAFE also makes it safe against other modules
 * calling curl_global_init concurrently, e.g. storage/http.c).  Nothing
 * ever calls curl_global_cleanup: the process exiting is the cleanup. */
#ifndef BC_WORKER_WEBHOOK_WEBHOOK_POST_H
#define BC_WORKER_WEBHOOK_WEBHOOK_POST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/netguard.h"

/* Bytes of a response body kept; the transfer stops there (not an
 * error): a receiver cannot make us read or hold more. */
#define WEBHOOK_RESPONSE_CAP 4096
/* Bytes of the response body quoted in webhook_response.error. */
#define WEBHOOK_ERROR_BODY_QUOTE 200
#define WEBHOOK_DEFAULT_TIMEOUT_S 15.0

struct webhook_request {
        const char *url;       /* http:// or https:// only */
        const char *msg_id;    /* webhook-id */
        long long timestamp;   /* webhook-timestamp, seconds */
        const char *signature; /* webhook-signature, from webhook_sign() */
        const char *body;      /* JSON; body_len bytes */
        size_t body_len;
        double timeout_s;       /* whole attempt incl. connect; <= 0: 15 s */
        const char *user_agent; /* e.g. "boxcar/0.1.0" */
        /* Addresses the post may connect to (checked on each address
         * connected, after resolution); NULL: any.  A refusal is an
         * attempt's outcome: ret->error names the address and the option. */
        const struct netguard *guard;
};

struct webhook_response {
        long status;          /* HTTP status, 0 when no complete response */
        double retry_after_s; /* from Retry-After (seconds or HTTP-date), -1 when absent */
        bool timed_out;
        /* Owned; NULL on a 2xx.  Otherwise a short reason fit for logs and
         * the outbox row: "connection refused", "timed out after 15s",
         * "HTTP 500: <first 200 bytes of the body, sanitized>".  Never
         * contains any part of the URL. */
        char *error;
};

/* Makes one attempt to POST req->body to req->url with the headers
 * Content-Type: application/json, webhook-id, webhook-timestamp,
 * webhook-signature and User-Agent.  Redirects are not followed (a 3xx is
 * a failure like any non-2xx); only http and https are allowed.
 *
 * Returns 0 whenever an attempt was made or the URL itself is unusable,
 * whatever the outcome, and fills *ret (release with
 * webhook_response_done); success is 200 <= ret->status < 300.  A status
 * is reported only when the response arrived in full (up to the body
 * cap): a timeout after the headers is a timeout, so the delivery is
 * retried rather than assumed.  Returns a negative errno with err set only
 * for local failures (out of memory, libcurl unusable, a header value
 * with control characters); *ret is then untouched. */
int webhook_post(const struct webhook_request *req, struct webhook_response *ret,
                 struct bc_error *err);

/* A reusable sender: its connections to receivers are kept between
 * posts (for at most a minute each), so consecutive deliveries to one
 * receiver share a TCP/TLS connection.  One thread at a time. */
struct webhook_client;

/* *ret is freed with webhook_client_free.  Fails only when libcurl is
 * unusable or out of memory. */
int webhook_client_new(struct webhook_client **ret, struct bc_error *err);

/* Closes the client's connections and frees it.  NULL-safe. */
void webhook_client_free(struct webhook_client *c);

/* webhook_post() through the client's kept connections. */
int webhook_client_post(struct webhook_client *client, const struct webhook_request *req,
                        struct webhook_response *ret, struct bc_error *err);

/* Frees r->error and resets r.  NULL-safe. */
void webhook_response_done(struct webhook_response *r);

/* scheme://host[:port]/path of url, without userinfo, query or fragment
 * (where credentials and tokens live), as libcurl parses it.  A URL that
 * does not parse gives "<invalid URL>".  Caller frees; NULL only when out
 * of memory. */
char *webhook_url_for_log(const char *url);

/* Whether a and b have the same scheme, host and port (the default port
 * made explicit, case-insensitive), as libcurl parses them: libcurl
 * reuses a connection between such URLs, so they share a trust level.
 * False when either does not parse. */
bool webhook_same_origin(const char *a, const char *b);

#endif
