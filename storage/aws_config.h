/* The AWS shared files as every AWS SDK reads them: the credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials, sections
 * "[name]") and the config file (AWS_CONFIG_FILE, default ~/.aws/config,
 * sections "[default]" and "[profile name]"), for the profile AWS_PROFILE
 * (default "default").  A key with an empty value followed by indented
 * lines is a nested section, as in
 *
 *     s3 =
 *         addressing_style = path
 *
 * Only the keys boxcar uses are kept.  Internal to storage/. */
#ifndef BC_STORAGE_AWS_CONFIG_H
#define BC_STORAGE_AWS_CONFIG_H

#include <stdbool.h>

#include "common/cleanup.h"
#include "common/error.h"

struct aws_profile {
        char *name;         /* AWS_PROFILE or "default" */
        bool explicit_name; /* AWS_PROFILE was set */
        bool found;         /* a section for it in either file */
        char *credentials_path, *config_path;
        /* Credentials: the credentials file wins over the config file. */
        char *access_key, *secret_key, *session_token;
        char *role_arn, *web_identity_token_file, *role_session_name;
        char *region;
        char *endpoint_url;        /* top-level endpoint_url */
        char *s3_endpoint_url;     /* s3 = endpoint_url = … */
        char *s3_addressing_style; /* s3 = addressing_style = … */
        char *sts_endpoint_url;    /* sts = endpoint_url = … */
        char *credential_process;  /* a command line (creds_split_command) */
        char *source_profile;      /* with role_arn: STS AssumeRole */
        char *credential_source;   /* not supported: named in the error */
        char *external_id, *duration_seconds, *mfa_serial;
        char *ca_bundle; /* the CA file for S3's and STS's TLS */
};

/* Reads both files (a missing file is no error; an unreadable or larger
 * than 1 MiB one is BC_CONFIG naming it).  An AWS_PROFILE that neither
 * file has is BC_CONFIG too, as in the SDKs.  Fill *ret; release it with
 * aws_profile_done() (which also wipes the secrets). */
int aws_profile_load(struct aws_profile *ret, struct bc_error *err);
void aws_profile_done(struct aws_profile *p);
static inline void aws_profile_donep(struct aws_profile *p)
{
        aws_profile_done(p);
}

/* The profile `name` from the same two files as `from` (a source_profile):
 * BC_CONFIG naming it and both files when neither has it. */
int aws_profile_load_named(const struct aws_profile *from, const char *name,
                           struct aws_profile *ret, struct bc_error *err);

/* The CA bundle for AWS endpoints: AWS_CA_BUNDLE, else the profile's
 * ca_bundle, else NULL (*ret; the system's CAs).  One that cannot be
 * opened for reading is BC_CONFIG naming where it came from, the file and
 * why, at start rather than at the first TLS handshake.  *ret is the
 * caller's. */
int aws_ca_bundle(const struct aws_profile *prof, char **ret, struct bc_error *err);

/* Overwrites a secret with zeros and frees it.  NULL-safe. */
void aws_secret_free(char *s);
BC_DEFINE_CLEANUP(char *, aws_secret_free)

#endif
