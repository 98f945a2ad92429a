/* spec.secrets as a claimed job's spec holds it: every value sealed by the
 * database ({"sealed", "key"}, sql/12_secrets.sql); a plaintext value in a
 * stored spec means a row was written around the sealing and is refused
 * rather than used. */
#include <errno.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include "worker/spec/spec-internal.h"

#define SECRETS_MAX 256
#define SEALED_MAX 131072

static int bad(struct bc_error *err, const char *name, const char *what)
{
        return bc_error_set(err, BC_BAD_SPEC, EINVAL, "secrets.%.64s: %s", name, what);
}

static bool is_letter(char c)
{
        return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* As sql/12_secrets.sql secrets_error: [A-Za-z_][A-Za-z0-9_]*, at most
 * 256, not BOXCAR_*. */
static bool valid_name(const char *s)
{
        if (!is_letter(s[0]) || strlen(s) > 256)
                return false;
        for (const char *p = s; *p; p++)
                if (!is_letter(*p) && !(*p >= '0' && *p <= '9'))
                        return false;
        return strncasecmp(s, "BOXCAR_", 7) != 0;
}

static bool env_sets(char *const *env, const char *name)
{
        size_t n = strlen(name);
        for (; *env; env++)
                if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
                        return true;
        return false;
}

static int parse_one(const cJSON *e, struct spec_secret *s, struct bc_error *err)
{
        if (!valid_name(e->string))
                return bad(err, e->string, "not a valid variable name (BOXCAR_* are reserved)");
        const cJSON *sealed = cJSON_GetObjectItemCaseSensitive(e, "sealed");
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(e, "key");
        if (!cJSON_IsObject(e) || !cJSON_IsString(sealed) || !cJSON_IsString(key))
                return bad(err, e->string,
                           "not sealed (a row written around boxcar.enqueue's sealing)");
        if (strlen(sealed->valuestring) > SEALED_MAX || strlen(key->valuestring) != 16)
                return bad(err, e->string, "a malformed sealed value");
        s->name = strdup(e->string);
        s->sealed = strdup(sealed->valuestring);
        s->key_id = strdup(key->valuestring);
        if (!s->name || !s->sealed || !s->key_id)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "secrets: out of memory");
        return 0;
}

int spec_parse_secrets(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        if (!v)
                return 0;
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "secrets: must be an object of names to values");
        int n = cJSON_GetArraySize(v);
        if (n > SECRETS_MAX)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "secrets: at most %d secrets",
                                    SECRETS_MAX);
        spec->secrets = calloc((size_t)n + 1, sizeof(*spec->secrets));
        if (!spec->secrets)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "secrets: out of memory");
        for (const cJSON *e = v->child; e; e = e->next) {
                if (env_sets(spec->env, e->string))
                        return bad(err, e->string, "also set in env");
                int r = parse_one(e, &spec->secrets[spec->n_secrets++], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

void spec_secrets_free(struct spec_secret *s, size_t n)
{
        for (size_t i = 0; s && i < n; i++) {
                free(s[i].name);
                free(s[i].sealed);
                free(s[i].key_id);
        }
        free(s);
}
