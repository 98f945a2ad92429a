/* Shared between spec.c, spec_parts.c and spec_session.c; not part of the worker's API. */
#ifndef BC_WORKER_SPEC_SPEC_INTERNAL_H
#define BC_WORKER_SPEC_SPEC_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "worker/spec/spec.h"

bool spec_in_list(const char *s, const char *const *list);
/* Storage and volume names: 1 to SPEC_NAME_MAX letters, digits, "_", "."
 * or "-", starting with a letter or digit (sql/10_spec.sql name_error). */
#define SPEC_NAME_MAX 128
bool spec_is_name(const char *s, size_t max);
bool spec_is_sha256(const char *s);
bool spec_is_http_url(const char *s, size_t max);
int spec_unknown_field(const cJSON *obj, const char *prefix, const char *const *allowed,
                       struct bc_error *err);
int spec_number(const cJSON *v, const char *field, double lo, double hi, bool integral,
                double *ret, struct bc_error *err);
int spec_string(const cJSON *v, const char *field, size_t max, bool nonempty, char **ret,
                struct bc_error *err);
/* A name (spec_is_name) of at most max characters, copied to *ret. */
int spec_name(const cJSON *v, const char *field, size_t max, char **ret, struct bc_error *err);
int spec_path(const cJSON *v, const char *field, bool reserved, char **ret, struct bc_error *err);

/* Each accepts NULL (field absent: defaults stay). */
int spec_parse_limits(const cJSON *v, struct spec_limits *limits, struct bc_error *err);
int spec_parse_volumes(const cJSON *v, struct job_spec *spec, struct bc_error *err);
int spec_parse_artifact(const cJSON *v, struct job_spec *spec, struct bc_error *err);
int spec_parse_image(const cJSON *v, struct job_spec *spec, struct bc_error *err);
/* spec_secrets.c; after env (a secret may not repeat an env name). */
int spec_parse_secrets(const cJSON *v, struct job_spec *spec, struct bc_error *err);
void spec_secrets_free(struct spec_secret *s, size_t n);

/* spec_session.c.  session and stdin accept NULL; files is the mode's
 * value.  stdin and files come after session: they need spec->session.id. */
int spec_parse_session(const cJSON *v, struct job_spec *spec, struct bc_error *err);
int spec_parse_stdin(const cJSON *v, struct job_spec *spec, struct bc_error *err);
int spec_parse_files(const cJSON *v, struct job_spec *spec, struct bc_error *err);
/* A given artifact.storage against the session (or its absence). */
int spec_check_session_artifact(const struct job_spec *spec, struct bc_error *err);
/* A session job without an artifact gets its session's storage, at
 * "latest", as the enqueue trigger fills it in SQL. */
int spec_session_artifact_default(struct job_spec *spec, struct bc_error *err);
void spec_files_free(struct spec_file_op *files, size_t n);

#endif
