/* The credential sources behind creds.h, and their small HTTP client.
 * Each fetch fills *ret only on success; messages never hold a secret,
 * a token or a credentials response body. */
#ifndef BC_STORAGE_CREDS_INTERNAL_H
#define BC_STORAGE_CREDS_INTERNAL_H

#include <stdbool.h>
#include <time.h>

#include "common/error.h"
#include "storage/creds.h"

#define CREDS_BODY_MAX (64 * 1024)

struct creds_http_request {
        const char *method; /* "GET", "PUT", "POST" */
        const char *url;
        const char *const *headers; /* "Name: value", NULL-terminated; may be NULL */
        const char *body;           /* POST/PUT body, may be NULL */
        long connect_timeout_ms;
        long timeout_ms;
};

/* One request, no redirects, no retries.  *ret_status is the HTTP status
 * and *ret_body the response (at most CREDS_BODY_MAX, NUL-terminated,
 * caller frees) when a response came; a transport failure is
 * BC_FETCH_FAILED "<url without query>: <curl's reason>". */
int creds_http(const struct creds_http_request *req, long *ret_status, char **ret_body,
               struct bc_error *err);

/* "2026-11-23T15:04:05Z" (fractions and a numeric offset accepted). */
int creds_parse_time(const char *s, time_t *ret);

/* {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"} as ECS and
 * IMDS send them.  `what` names the source in messages. */
int creds_from_json(const char *body, const char *what, struct aws_creds *ret,
                    struct bc_error *err);

/* The text of the first <TAG>…</TAG> in xml, entities decoded, or NULL
 * (none, or ENOMEM); caller frees. */
char *creds_xml_text(const char *xml, const char *tag);

struct web_identity {
        const char *role_arn;
        const char *token_file;   /* read again at every fetch: it rotates */
        const char *session_name; /* NULL: "boxcar-<time>" */
        const char *sts_endpoint; /* scheme://host[:port], no path */
};
int creds_web_identity_fetch(const struct web_identity *w, struct aws_creds *ret,
                             struct bc_error *err);

struct container_source {
        const char *url;
        const char *auth_token;      /* may be NULL */
        const char *auth_token_file; /* read at every fetch; wins over auth_token */
};
/* Checks the URL the way the SDKs do (https, or http to a loopback or the
 * ECS/EKS link-local address), BC_CONFIG otherwise. */
int creds_container_check_url(const char *url, struct bc_error *err);
int creds_container_fetch(const struct container_source *c, struct aws_creds *ret,
                          struct bc_error *err);

/* IMDSv2 at endpoint (scheme://host[:port]): token PUT, role name GET,
 * credentials GET. */
int creds_imds_fetch(const char *endpoint, struct aws_creds *ret, struct bc_error *err);

#endif
