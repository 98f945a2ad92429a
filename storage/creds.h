/* AWS credentials, found the way the AWS SDKs find them and in the same
 * order (the "default credential provider chain"; the profile's own
 * sources before the environment's web identity, as the Go and Java SDKs
 * have it):
 *
 *   1. env            AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY [, AWS_SESSION_TOKEN]
 *   2. assume role    the profile's role_arn + source_profile: STS AssumeRole
 *                     signed with the source profile's credentials (its
 *                     keys, its credential_process, or its own role_arn +
 *                     source_profile, up to 8 hops; a cycle is BC_CONFIG)
 *   3. shared files   the profile's aws_access_key_id/... (aws_config.h)
 *   4. process        the profile's credential_process: a command run
 *                     without a shell, its stdout JSON (Version 1)
 *   5. web identity   AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (or the
 *                     profile's web_identity_token_file + role_arn): STS
 *                     AssumeRoleWithWebIdentity (EKS IRSA)
 *   6. container      AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI
 *                     (ECS task roles, EKS Pod Identity)
 *   7. IMDS           EC2 instance metadata, IMDSv2, unless
 *                     AWS_EC2_METADATA_DISABLED=true
 *
 * STS is AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, the profile's "sts =
 * endpoint_url", its endpoint_url, else https://sts.<region>.amazonaws.com;
 * its TLS is checked against AWS_CA_BUNDLE (or the profile's ca_bundle)
 * when set.
 * The source is chosen once, from the configuration alone (no network),
 * as the SDKs do: the first one configured is the one used, and its
 * failures are reported as its own, never hidden by the next source.
 * Temporary credentials (2, 4-7) are fetched at first use and fetched again
 * once they are within CREDS_REFRESH_S of their expiry; if that refresh
 * fails, credentials that are still valid go on being used.  Internal to
 * storage/. */
#ifndef BC_STORAGE_CREDS_H
#define BC_STORAGE_CREDS_H

#include <time.h>

#include "common/error.h"
#include "storage/aws_config.h"

#define CREDS_REFRESH_S 300 /* refresh 5 min before expiry (the SDKs' window) */

struct aws_creds {
        char *access_key;
        char *secret_key;
        char *session_token; /* NULL when none */
        time_t expires;      /* 0: never */
};

/* Wipes and frees the strings; c itself is the caller's.  NULL-safe. */
void aws_creds_done(struct aws_creds *c);
static inline void aws_creds_donep(struct aws_creds *c)
{
        aws_creds_done(c);
}

struct creds_provider;

/* Picks the source for prof (loaded by aws_profile_load) and the
 * environment.  No network.  When no source is configured (and IMDS is
 * disabled) this is BC_CONFIG "no AWS credentials found: tried …".
 * Partial settings (a key without its secret, a role without its token
 * file) are BC_CONFIG naming the variable. */
int creds_provider_new(const struct aws_profile *prof, const char *region,
                       struct creds_provider **ret, struct bc_error *err);
void creds_provider_free(struct creds_provider *p);

/* A copy of the current credentials (release with aws_creds_done),
 * fetched or refreshed first when needed.  Thread-safe: one fetch at a
 * time, other callers wait for its result.  Errors (BC_FETCH_FAILED) name
 * the source and why: "AWS credentials: web identity: STS
 * AssumeRoleWithWebIdentity returned HTTP 403 (AccessDenied): …". */
int creds_provider_get(struct creds_provider *p, struct aws_creds *ret, struct bc_error *err);

/* "env", "assume role (profile x, source_profile y)", "shared files
 * (profile x)", "credential_process (profile x: /its/command)", "web
 * identity", "container", "IMDS". */
const char *creds_provider_source(const struct creds_provider *p);

#endif
