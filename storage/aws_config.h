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
};

/* Reads both files (a missing file is no error; an unreadable or larger
 * than 1 MiB one is BC_CONFIG naming it).  An AWS_PROFILE that neither
 * file has is BC_CONFIG too, as in the SDKs.  Fill *ret; release it with
 * aws_profile_done() (which also wipes the secrets). */
int aws_profile_load(struct aws_profile *ret, struct bc_error *err);
void aws_profile_done(struct aws_profile *p);

/* Overwrites a secret with zeros and frees it.  NULL-safe. */
void aws_secret_free(char *s);
BC_DEFINE_CLEANUP(char *, aws_secret_free)

#endif
