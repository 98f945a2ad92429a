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
        const char *ca_bundle; /* CURLOPT_CAINFO; NULL: the system's CAs */
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
/* Credentials of their four fields (tok and exp may be NULL: no session
 * token, no expiry), copied; `what` names the source in messages. */
int creds_from_fields(const char *ak, const char *sk, const char *tok, const char *exp,
                      const char *what, struct aws_creds *ret, struct bc_error *err);

/* The text of the first <TAG>…</TAG> in xml, entities decoded, or NULL
 * (none, or ENOMEM); caller frees. */
char *creds_xml_text(const char *xml, const char *tag);

struct web_identity {
        const char *role_arn;
        const char *token_file;   /* read again at every fetch: it rotates */
        const char *session_name; /* NULL: "boxcar-<time>" */
        const char *sts_endpoint; /* scheme://host[:port], no path */
        const char *ca_bundle;    /* may be NULL */
};
int creds_web_identity_fetch(const struct web_identity *w, struct aws_creds *ret,
                             struct bc_error *err);

/* STS's answer: "HTTP 403 (AccessDenied): <its message>" as the error
 * of `action`, or the credentials of a 200 answer. */
int creds_sts_error(const char *action, long status, const char *body, struct bc_error *err);
int creds_sts_credentials(const char *action, const char *resp, struct aws_creds *ret,
                          struct bc_error *err);
/* POST body to STS at endpoint ("scheme://host[:port]") with headers
 * (NULL-ended; a NULL entry ends them early), and the credentials of its
 * answer, or its error named by action. */
int creds_sts_call(const char *action, const char *endpoint, const char *ca_bundle,
                   const char *const *headers, const char *body, struct aws_creds *ret,
                   struct bc_error *err);

/* STS AssumeRole with the source profile's credentials src. */
struct assume_role {
        const char *role_arn;
        const char *session_name;     /* NULL: "boxcar-<time>" */
        const char *external_id;      /* may be NULL */
        const char *duration_seconds; /* checked digits, may be NULL */
        const char *sts_endpoint;     /* scheme://host[:port], no path */
        const char *region;           /* the signature's */
        const char *ca_bundle;        /* may be NULL */
};
int creds_assume_role_fetch(const struct assume_role *a, const struct aws_creds *src,
                            struct aws_creds *ret, struct bc_error *err);

/* credential_process: the command line split as the AWS CLI splits it
 * (Python's shlex.split: blanks, '…', "…", backslashes; no shell, no
 * variables, no '~').  BC_CONFIG for an unclosed quote or an empty
 * command.  Free *ret with creds_argv_free. */
int creds_split_command(const char *cmd, char ***ret, struct bc_error *err);
void creds_argv_free(char **argv);
/* The process's output: {"Version": 1, "AccessKeyId", "SecretAccessKey",
 * ["SessionToken"], ["Expiration"]}; messages never quote it. */
int creds_from_process_json(const char *out, struct aws_creds *ret, struct bc_error *err);
/* Runs argv (PATH searched, stdin /dev/null, 60 s at most) and parses its
 * stdout; a non-zero exit is an error with the last line of its stderr. */
int creds_process_fetch(char *const *argv, struct aws_creds *ret, struct bc_error *err);

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
