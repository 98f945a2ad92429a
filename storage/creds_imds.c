/* EC2 instance role credentials through IMDSv2: a session token from a
 * PUT (which a hop through a proxy or a misconfigured NAT cannot forge,
 * the point of v2), then the role's name, then its credentials.  No
 * fallback to IMDSv1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "storage/creds-internal.h"

#define ROLES_PATH "/latest/meta-data/iam/security-credentials/"

/* One IMDS call; the SDKs give the service a second at most per step. */
static int imds_call(const char *endpoint, const char *method, const char *path,
                     const char *header, char **ret_body, struct bc_error *err)
{
        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "%s%s", endpoint, path) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const char *headers[] = { header, NULL };
        struct creds_http_request req = {
                .method = method,
                .url = url,
                .headers = headers,
                .connect_timeout_ms = 1000,
                .timeout_ms = 2000,
        };
        long status = 0;
        char *body = NULL;
        int r = creds_http(&req, &status, &body, err);
        if (r < 0)
                return r;
        if (status != 200) {
                aws_secret_free(body);
                return bc_error_set(err, BC_FETCH_FAILED, status == 404 ? ENOENT : EACCES,
                                    "%s %s returned HTTP %ld%s", method, url, status,
                                    status == 404 && strcmp(path, ROLES_PATH) == 0
                                            ? " (no instance role attached)"
                                            : "");
        }
        *ret_body = body;
        return 0;
}

int creds_imds_fetch(const char *endpoint, struct aws_creds *ret, struct bc_error *err)
{
        _cleanup_(aws_secret_freep) char *token = NULL;
        int r = imds_call(endpoint, "PUT", "/latest/api/token",
                          "X-aws-ec2-metadata-token-ttl-seconds: 21600", &token, err);
        if (r < 0)
                return r;
        token[strcspn(token, "\r\n")] = '\0';
        if (!*token)
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO, "IMDS returned an empty token");
        _cleanup_(aws_secret_freep) char *hdr = NULL;
        if (asprintf(&hdr, "X-aws-ec2-metadata-token: %s", token) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        _cleanup_free_ char *roles = NULL;
        r = imds_call(endpoint, "GET", ROLES_PATH, hdr, &roles, err);
        if (r < 0)
                return r;
        /* The first line is the role; a name is [\w+=,.@-]{1,64}. */
        size_t n = strcspn(roles, "\r\n");
        roles[n] = '\0';
        if (n == 0 || n > 64 ||
            roles[strspn(roles, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_+=,.@-")])
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "IMDS returned no usable role name");
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s%s", ROLES_PATH, roles) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        _cleanup_(aws_secret_freep) char *doc = NULL;
        r = imds_call(endpoint, "GET", path, hdr, &doc, err);
        if (r < 0)
                return r;
        return creds_from_json(doc, "IMDS", ret, err);
}
