/* Shared between spec.c and spec_parts.c; not part of the worker's API. */
#ifndef BC_WORKER_SPEC_SPEC_INTERNAL_H
#define BC_WORKER_SPEC_SPEC_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "worker/spec/spec.h"

bool spec_in_list(const char *s, const char *const *list);
bool spec_is_name(const char *s);
bool spec_is_sha256(const char *s);
bool spec_is_http_url(const char *s, size_t max);
int spec_unknown_field(const cJSON *obj, const char *prefix, const char *const *allowed,
                       struct bc_error *err);
int spec_number(const cJSON *v, const char *field, double lo, double hi, bool integral,
                double *ret, struct bc_error *err);
int spec_string(const cJSON *v, const char *field, size_t max, bool nonempty, char **ret,
                struct bc_error *err);
int spec_path(const cJSON *v, const char *field, bool reserved, char **ret, struct bc_error *err);

/* Each accepts NULL (field absent: defaults stay). */
int spec_parse_limits(const cJSON *v, struct spec_limits *limits, struct bc_error *err);
int spec_parse_volumes(const cJSON *v, struct job_spec *spec, struct bc_error *err);
int spec_parse_artifact(const cJSON *v, struct job_spec *spec, struct bc_error *err);
int spec_parse_image(const cJSON *v, struct job_spec *spec, struct bc_error *err);

#endif
