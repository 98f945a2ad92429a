/* The structured parts of a job spec: limits, volumes, artifact, image. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/spec/spec-internal.h"

struct limit_rule {
        const char *name;
        double lo, hi;
        bool integral;
        size_t offset;
        enum { AS_DOUBLE, AS_U64, AS_U32 } kind;
};

static const struct limit_rule limit_rules[] = {
        { "timeout_s", 1, 86400, false, offsetof(struct spec_limits, timeout_s), AS_DOUBLE },
        { "memory_mb", 16, 1048576, true, offsetof(struct spec_limits, memory_mb), AS_U64 },
        { "cpus", 0.01, 256, false, offsetof(struct spec_limits, cpus), AS_DOUBLE },
        { "pids", 1, 65536, true, offsetof(struct spec_limits, pids), AS_U32 },
        { "disk_mb", 1, 1048576, true, offsetof(struct spec_limits, disk_mb), AS_U64 },
        { "files", 1, 10000000, true, offsetof(struct spec_limits, files), AS_U64 },
        { "output_bytes", 0, 16777216, true, offsetof(struct spec_limits, output_bytes), AS_U64 },
};

int spec_parse_limits(const cJSON *v, struct spec_limits *limits, struct bc_error *err)
{
        if (!v)
                return 0;
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "limits: must be an object");
        for (const cJSON *c = v->child; c; c = c->next) {
                const struct limit_rule *rule = NULL;
                for (size_t i = 0; i < sizeof(limit_rules) / sizeof(limit_rules[0]); i++)
                        if (strcmp(limit_rules[i].name, c->string) == 0)
                                rule = &limit_rules[i];
                if (!rule)
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL, "limits.%s: unknown field",
                                            c->string);
                char field[64];
                snprintf(field, sizeof(field), "limits.%s", rule->name);
                double d;
                int r = spec_number(c, field, rule->lo, rule->hi, rule->integral, &d, err);
                if (r < 0)
                        return r;
                char *slot = (char *)limits + rule->offset;
                if (rule->kind == AS_DOUBLE)
                        /* cppcheck-suppress invalidPointerCast ; slot is a double field of struct spec_limits (rule->kind says so), reached by offsetof */
                        *(double *)slot = d;
                else if (rule->kind == AS_U64)
                        *(uint64_t *)slot = (uint64_t)d;
                else
                        *(uint32_t *)slot = (uint32_t)d;
        }
        return 0;
}

static bool mounts_overlap(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        if (la > lb)
                return mounts_overlap(b, a);
        return strncmp(a, b, la) == 0 && (b[la] == '\0' || b[la] == '/');
}

int spec_name(const cJSON *v, const char *field, size_t max, char **ret, struct bc_error *err)
{
        if (!cJSON_IsString(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s: must be a string", field);
        if (!spec_is_name(v->valuestring, max))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s: must be 1-%zu letters, digits, \"_\", \".\" or \"-\"",
                                    field, max);
        return spec_string(v, field, max, true, ret, err);
}

static int check_name(const cJSON *v, const char *field, char **ret, struct bc_error *err)
{
        return spec_name(v, field, SPEC_NAME_MAX, ret, err);
}

static int parse_volume_source(const cJSON *v, const char *f, struct spec_volume *vol,
                               struct bc_error *err)
{
        const cJSON *url = cJSON_GetObjectItemCaseSensitive(v, "url");
        const cJSON *storage = cJSON_GetObjectItemCaseSensitive(v, "storage");
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(v, "sha256");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(v, "version");
        char field[96];
        if (!url == !storage)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s: exactly one of url or storage is required", f);
        if (url && (!cJSON_IsString(url) || !spec_is_http_url(url->valuestring, 8192)))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s.url: must be an http(s) URL of at most 8192 characters",
                                    f);
        snprintf(field, sizeof(field), "%s.url", f);
        int r = url ? spec_string(url, field, 8192, true, &vol->url, err) : 0;
        if (r < 0)
                return r;
        if (sha && (!cJSON_IsString(sha) || !spec_is_sha256(sha->valuestring)))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s.sha256: must be 64 lowercase hex digits", f);
        snprintf(field, sizeof(field), "%s.sha256", f);
        r = sha ? spec_string(sha, field, 64, true, &vol->sha256, err) : 0;
        if (r < 0)
                return r;
        snprintf(field, sizeof(field), "%s.storage", f);
        r = storage ? check_name(storage, field, &vol->storage, err) : 0;
        if (r < 0)
                return r;
        if (version && (!storage || !cJSON_IsString(version) ||
                        (strcmp(version->valuestring, "latest") != 0 &&
                         !spec_is_sha256(version->valuestring))))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s.version: must be \"latest\" or a sha256, with storage", f);
        snprintf(field, sizeof(field), "%s.version", f);
        if (version)
                return spec_string(version, field, 64, true, &vol->version, err);
        if (storage) {
                vol->version = strdup("latest");
                if (!vol->version)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "%s: out of memory", f);
        }
        return 0;
}

static int parse_volume(const cJSON *v, size_t i, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "name",    "mount",   "url", "sha256",
                                              "storage", "version", NULL };
        char f[32], field[64];
        snprintf(f, sizeof(f), "volumes[%zu]", i);
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s: must be an object", f);
        snprintf(field, sizeof(field), "%s.", f);
        int r = spec_unknown_field(v, field, fields, err);
        if (r < 0)
                return r;
        struct spec_volume *vol = &spec->volumes[i];
        snprintf(field, sizeof(field), "%s.name", f);
        r = check_name(cJSON_GetObjectItemCaseSensitive(v, "name"), field, &vol->name, err);
        if (r < 0)
                return r;
        snprintf(field, sizeof(field), "%s.mount", f);
        r = spec_path(cJSON_GetObjectItemCaseSensitive(v, "mount"), field, true, &vol->mount, err);
        if (r < 0)
                return r;
        r = parse_volume_source(v, f, vol, err);
        if (r < 0)
                return r;
        for (size_t j = 0; j < i; j++) {
                if (mounts_overlap(spec->volumes[j].mount, vol->mount))
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "%s.mount: overlaps another volume at %s", f,
                                            spec->volumes[j].mount);
                if (strcmp(spec->volumes[j].name, vol->name) == 0)
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "%s.name: duplicate volume name", f);
        }
        return 0;
}

int spec_parse_volumes(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        if (!v)
                return 0;
        if (!cJSON_IsArray(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "volumes: must be an array");
        int n = cJSON_GetArraySize(v);
        if (n > 32)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "volumes: at most 32 volumes");
        spec->volumes = calloc((size_t)n + 1, sizeof(*spec->volumes));
        if (!spec->volumes)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "volumes: out of memory");
        size_t i = 0;
        for (const cJSON *c = v->child; c; c = c->next, i++) {
                spec->n_volumes = i + 1;
                int r = parse_volume(c, i, spec, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int spec_parse_artifact(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "storage", "mount", "base", NULL };
        if (!v)
                return 0;
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "artifact: must be an object");
        int r = spec_unknown_field(v, "artifact.", fields, err);
        if (r < 0)
                return r;
        r = check_name(cJSON_GetObjectItemCaseSensitive(v, "storage"), "artifact.storage",
                       &spec->artifact_storage, err);
        if (r < 0)
                return r;
        r = spec_check_session_artifact(spec, err);
        if (r < 0)
                return r;
        const cJSON *mount = cJSON_GetObjectItemCaseSensitive(v, "mount");
        if (mount && !(cJSON_IsString(mount) && strcmp(mount->valuestring, "/workspace") == 0))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "artifact.mount: must be \"/workspace\"");
        const cJSON *base = cJSON_GetObjectItemCaseSensitive(v, "base");
        if (base && !(cJSON_IsString(base) && (strcmp(base->valuestring, "latest") == 0 ||
                                               strcmp(base->valuestring, "empty") == 0 ||
                                               spec_is_sha256(base->valuestring))))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "artifact.base: must be \"latest\", \"empty\" or a sha256");
        spec->artifact_base = strdup(base ? base->valuestring : "latest");
        if (!spec->artifact_base)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "artifact: out of memory");
        return 0;
}

int spec_parse_image(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "storage", "version", NULL };
        if (!v)
                return 0;
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "image: must be an object");
        int r = spec_unknown_field(v, "image.", fields, err);
        if (r < 0)
                return r;
        r = check_name(cJSON_GetObjectItemCaseSensitive(v, "storage"), "image.storage",
                       &spec->image_storage, err);
        if (r < 0)
                return r;
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(v, "version");
        if (version && !(cJSON_IsString(version) && (strcmp(version->valuestring, "latest") == 0 ||
                                                     spec_is_sha256(version->valuestring))))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "image.version: must be \"latest\" or a sha256");
        spec->image_version = strdup(version ? version->valuestring : "latest");
        if (!spec->image_version)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "image: out of memory");
        return 0;
}
