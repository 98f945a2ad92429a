#include "worker/spec/spec.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json_strict.h"
#include "worker/spec/spec-internal.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)
BC_DEFINE_CLEANUP(struct job_spec *, spec_free)

static const char *const top_fields[] = {
        "version", "command",  "script",         "code",
        "env",     "workdir",  "startup_script", "startup_timeout_s",
        "volumes", "artifact", "image",          "limits",
        "network", "webhook",  "retry",          "session",
        "stdin",   "files",    "secrets",        NULL,
};

static int bad(struct bc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct bc_error *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = bc_error_setv(err, BC_BAD_SPEC, EINVAL, fmt, ap);
        va_end(ap);
        return r;
}

bool spec_in_list(const char *s, const char *const *list)
{
        for (; *list; list++)
                if (strcmp(s, *list) == 0)
                        return true;
        return false;
}

int spec_unknown_field(const cJSON *obj, const char *prefix, const char *const *allowed,
                       struct bc_error *err)
{
        for (const cJSON *c = obj->child; c; c = c->next)
                if (!spec_in_list(c->string, allowed))
                        return bad(err, "%s%s: unknown field", prefix, c->string);
        return 0;
}

int spec_number(const cJSON *v, const char *field, double lo, double hi, bool integral,
                double *ret, struct bc_error *err)
{
        if (!cJSON_IsNumber(v))
                return bad(err, "%s: must be a number", field);
        double d = v->valuedouble;
        if (integral && d != floor(d))
                return bad(err, "%s: must be a whole number", field);
        if (!(d >= lo && d <= hi))
                return bad(err, "%s: must be between %.15g and %.15g", field, lo, hi);
        *ret = d;
        return 0;
}

int spec_string(const cJSON *v, const char *field, size_t max, bool nonempty, char **ret,
                struct bc_error *err)
{
        if (!cJSON_IsString(v))
                return bad(err, "%s: must be a string", field);
        size_t n = strlen(v->valuestring);
        if (nonempty && n == 0)
                return bad(err, "%s: must be a non-empty string", field);
        if (n > max)
                return bad(err, "%s: longer than %zu bytes", field, max);
        char *s = strdup(v->valuestring);
        if (!s)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "%s: out of memory", field);
        *ret = s;
        return 0;
}

static bool regex_match(const char *pattern, const char *s)
{
        regex_t re;
        if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
                return false;
        bool m = regexec(&re, s, 0, NULL, 0) == 0;
        regfree(&re);
        return m;
}

bool spec_is_name(const char *s, size_t max)
{
        return strlen(s) <= max && regex_match("^[A-Za-z0-9][A-Za-z0-9_.-]*$", s);
}

bool spec_is_sha256(const char *s)
{
        return regex_match("^[0-9a-f]{64}$", s);
}

bool spec_is_http_url(const char *s, size_t max)
{
        return strlen(s) <= max && regex_match("^https?://[^[:space:]]+$", s);
}

/* C0, DEL and C1 (U+0080-U+009F, UTF-8 C2 80-C2 9F), as the SQL check
 * [\x01-\x1f\x7f\u0080-\u009f]: a path with a newline or an escape
 * sequence would forge lines in logs and mount tables. */
static bool has_control(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
                        return true;
        return false;
}

int spec_path(const cJSON *v, const char *field, bool reserved, char **ret, struct bc_error *err)
{
        if (!cJSON_IsString(v))
                return bad(err, "%s: must be a string", field);
        const char *s = v->valuestring;
        if (s[0] != '/')
                return bad(err, "%s: must be an absolute path", field);
        if (strlen(s) > 1024)
                return bad(err, "%s: longer than 1024 bytes", field);
        if (has_control(s))
                return bad(err, "%s: must not contain control characters", field);
        if (regex_match("(^|/)\\.\\.?(/|$)", s) || strstr(s, "//") ||
            (strcmp(s, "/") != 0 && s[strlen(s) - 1] == '/'))
                return bad(err, "%s: must be a normalized path without \".\" or \"..\" components",
                           field);
        if (reserved && (strcmp(s, "/") == 0 ||
                         regex_match("^/(proc|sys|dev|tmp|etc|usr|bin|sbin|lib|lib32|lib64|libx32|"
                                     "run|boot|root|var|workspace)(/|$)",
                                     s)))
                return bad(err, "%s: \"%s\" is reserved", field, s);
        return spec_string(v, field, 1024, true, ret, err);
}

static int parse_command(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        int n = cJSON_GetArraySize(v);
        if (!cJSON_IsArray(v) || n == 0)
                return bad(err, "command: must be a non-empty array of strings");
        if (n > 4096)
                return bad(err, "command: at most 4096 arguments");
        spec->argv = calloc((size_t)n + 1, sizeof(char *));
        if (!spec->argv)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "command: out of memory");
        int i = 0;
        for (const cJSON *a = v->child; a; a = a->next, i++) {
                char field[32];
                snprintf(field, sizeof(field), "command[%d]", i);
                int r = spec_string(a, field, SPEC_MAX_BYTES, i == 0, &spec->argv[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_code(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "language", "source", "arguments", NULL };
        static const char *const languages[] = { "python", "node", "bash", NULL };
        if (!cJSON_IsObject(v))
                return bad(err, "code: must be an object");
        int r = spec_unknown_field(v, "code.", fields, err);
        if (r < 0)
                return r;
        const cJSON *lang = cJSON_GetObjectItemCaseSensitive(v, "language");
        if (!cJSON_IsString(lang) || !spec_in_list(lang->valuestring, languages))
                return bad(err, "code.language: must be \"python\", \"node\" or \"bash\"");
        r = spec_string(lang, "code.language", 16, true, &spec->code_language, err);
        if (r < 0)
                return r;
        r = spec_string(cJSON_GetObjectItemCaseSensitive(v, "source"), "code.source",
                        SPEC_MAX_BYTES, true, &spec->code_source, err);
        if (r < 0)
                return r;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(v, "arguments");
        if (args && !cJSON_IsObject(args))
                return bad(err, "code.arguments: must be an object");
        spec->code_arguments = args ? cJSON_PrintUnformatted(args) : strdup("{}");
        if (!spec->code_arguments)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "code.arguments: out of memory");
        return 0;
}

static int parse_env(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        if (!cJSON_IsObject(v))
                return bad(err, "env: must be an object of strings");
        int n = cJSON_GetArraySize(v);
        if (n > 1024)
                return bad(err, "env: at most 1024 variables");
        char **env = calloc((size_t)n + 1, sizeof(char *));
        if (!env)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "env: out of memory");
        free(spec->env);
        spec->env = env;
        int i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
                if (strlen(e->string) > 256 || !regex_match("^[A-Za-z_][A-Za-z0-9_]*$", e->string))
                        return bad(err, "env.%.64s: not a valid variable name", e->string);
                if (!cJSON_IsString(e))
                        return bad(err, "env.%s: must be a string", e->string);
                if (strlen(e->valuestring) > 131072)
                        return bad(err, "env.%s: longer than 131072 bytes", e->string);
                if (asprintf(&env[i], "%s=%s", e->string, e->valuestring) < 0) {
                        env[i] = NULL;
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "env: out of memory");
                }
        }
        return 0;
}

static int parse_retry(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "on", NULL };
        const cJSON *on = cJSON_GetObjectItemCaseSensitive(v, "on");
        if (!cJSON_IsObject(v) || spec_unknown_field(v, "retry.", fields, NULL) < 0 ||
            !cJSON_IsArray(on))
                return bad(err, "retry: must be an object {\"on\": [codes]}");
        for (const cJSON *c = on->child; c; c = c->next) {
                const char *s = cJSON_IsString(c) ? c->valuestring : "";
                if (strcmp(s, "NONZERO_EXIT") == 0)
                        spec->retry_on |= SPEC_RETRY_NONZERO_EXIT;
                else if (strcmp(s, "TIMEOUT") == 0)
                        spec->retry_on |= SPEC_RETRY_TIMEOUT;
                else if (strcmp(s, "OOM") == 0)
                        spec->retry_on |= SPEC_RETRY_OOM;
                else
                        return bad(err,
                                   "retry.on: \"%s\" cannot be retried (NONZERO_EXIT, "
                                   "TIMEOUT or OOM)",
                                   s);
        }
        return 0;
}

static int parse_mode(const cJSON *root, struct job_spec *spec, struct bc_error *err)
{
        const cJSON *command = cJSON_GetObjectItemCaseSensitive(root, "command");
        const cJSON *script = cJSON_GetObjectItemCaseSensitive(root, "script");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(root, "code");
        const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
        int modes = !!command + !!script + !!code + !!files;
        if (modes == 0)
                return bad(err, "command: one of command, script, code or files is required");
        if (modes > 1)
                return bad(err,
                           "command: only one of command, script, code or files may be given");
        if (command) {
                spec->mode = SPEC_COMMAND;
                return parse_command(command, spec, err);
        }
        if (script) {
                spec->mode = SPEC_SCRIPT;
                return spec_string(script, "script", SPEC_MAX_BYTES, true, &spec->script, err);
        }
        if (files) {
                spec->mode = SPEC_FILES;
                return spec_parse_files(files, spec, err);
        }
        spec->mode = SPEC_CODE;
        return parse_code(code, spec, err);
}

#define NETWORK_SHAPE "network: must be \"none\", \"host\" or {\"allow\": [rules]}"

static int parse_network_allow(const cJSON *allow, struct job_spec *spec, struct bc_error *err)
{
        int n = cJSON_GetArraySize(allow);
        if (!cJSON_IsArray(allow) || n == 0 || n > NETALLOW_MAX_RULES)
                return bad(err, "network.allow: must be a non-empty array of at most %d rules",
                           NETALLOW_MAX_RULES);
        spec->net_allow = calloc((size_t)n, sizeof(*spec->net_allow));
        if (!spec->net_allow)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "spec: out of memory");
        int i = 0;
        for (const cJSON *c = allow->child; c; c = c->next, i++) {
                if (!cJSON_IsString(c))
                        return bad(err, "network.allow[%d]: must be a string", i);
                struct netallow_rule *r = &spec->net_allow[i];
                enum netallow_problem p = netallow_parse(c->valuestring, r);
                if (p != NETALLOW_OK) {
                        char why[160];
                        return bad(err, "network.allow[%d]: %s", i,
                                   netallow_problem_text(p, r, why, sizeof(why)));
                }
                spec->n_net_allow++;
        }
        return 0;
}

static int parse_network(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        if (cJSON_IsString(v) &&
            (strcmp(v->valuestring, "none") == 0 || strcmp(v->valuestring, "host") == 0)) {
                spec->network_host = strcmp(v->valuestring, "host") == 0;
                return 0;
        }
        if (!cJSON_IsObject(v))
                return bad(err, NETWORK_SHAPE);
        static const char *const fields[] = { "allow", NULL };
        int r = spec_unknown_field(v, "network.", fields, err);
        if (r < 0)
                return r;
        return parse_network_allow(cJSON_GetObjectItemCaseSensitive(v, "allow"), spec, err);
}

static int parse_webhook(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "url", "progress", NULL };
        if (!cJSON_IsObject(v) || spec_unknown_field(v, "", fields, NULL) < 0)
                return bad(err, "webhook: must be an object with only \"url\" and \"progress\"");
        const cJSON *url = cJSON_GetObjectItemCaseSensitive(v, "url");
        const cJSON *progress = cJSON_GetObjectItemCaseSensitive(v, "progress");
        /* "url" may be left out when "progress" is there: the URL is then
         * enqueue's webhook_url or the workers' default. */
        if ((url || !progress) &&
            (!cJSON_IsString(url) || !spec_is_http_url(url->valuestring, 2048)))
                return bad(err, "webhook.url: must be an http(s) URL of at most 2048 characters");
        if (progress && !cJSON_IsBool(progress))
                return bad(err, "webhook.progress: must be true or false");
        spec->webhook_progress = cJSON_IsTrue(progress);
        return url ? spec_string(url, "webhook.url", 2048, true, &spec->webhook_url, err) : 0;
}

static int parse_workdir(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        free(spec->workdir);
        spec->workdir = NULL;
        return spec_path(v, "workdir", false, &spec->workdir, err);
}

static int parse_startup_script(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        return spec_string(v, "startup_script", SPEC_MAX_BYTES, true, &spec->startup_script, err);
}

static int parse_startup_timeout(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        return spec_number(v, "startup_timeout_s", 1, 600, false, &spec->startup_timeout_s, err);
}

static int parse_version(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        (void)spec;
        if (!(cJSON_IsNumber(v) && v->valuedouble == 1))
                return bad(err, "version: must be 1");
        return 0;
}

/* Optional top-level fields and their parsers, applied in this order. */
static const struct {
        const char *name;
        int (*parse)(const cJSON *v, struct job_spec *spec, struct bc_error *err);
} optional_fields[] = {
        { "version", parse_version },
        { "env", parse_env },
        { "workdir", parse_workdir },
        { "startup_script", parse_startup_script },
        { "startup_timeout_s", parse_startup_timeout },
        { "network", parse_network },
        { "webhook", parse_webhook },
        { "retry", parse_retry },
        { "volumes", spec_parse_volumes },
        { "artifact", spec_parse_artifact },
        { "image", spec_parse_image },
        { "secrets", spec_parse_secrets },
};

static int parse_optional(const cJSON *root, struct job_spec *spec, struct bc_error *err)
{
        for (size_t i = 0; i < ELEMENTSOF(optional_fields); i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, optional_fields[i].name);
                if (!v)
                        continue;
                int r = optional_fields[i].parse(v, spec, err);
                if (r < 0)
                        return r;
        }
        return spec_parse_limits(cJSON_GetObjectItemCaseSensitive(root, "limits"), &spec->limits,
                                 err);
}

static int set_defaults(struct job_spec *spec, struct bc_error *err)
{
        spec->env = calloc(1, sizeof(char *));
        spec->workdir = strdup("/workspace");
        if (!spec->env || !spec->workdir)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "spec: out of memory");
        spec->startup_timeout_s = 30;
        spec->limits = (struct spec_limits){
                .timeout_s = 600,
                .memory_mb = SPEC_DEFAULT_MEMORY_MB,
                .cpus = SPEC_DEFAULT_CPUS,
                .pids = SPEC_DEFAULT_PIDS,
                .disk_mb = SPEC_DEFAULT_DISK_MB,
                .files = SPEC_DEFAULT_FILES,
                .output_bytes = 1048576,
        };
        return 0;
}

struct member {
        cJSON *item;
        size_t index;
};

static int member_cmp(const void *a, const void *b)
{
        const struct member *x = a, *y = b;
        int c = strcmp(x->item->string, y->item->string);
        return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* jsonb keeps the last of duplicate keys ({"a": 1, "a": 2} is {"a": 2});
 * cJSON finds the first.  Dropping the earlier ones makes the worker read
 * what enqueue validated (the fuzz corpus found a spec where they
 * differed).  Sorted, not compared pairwise: a spec may have many keys. */
static int keep_last_keys(cJSON *node)
{
        size_t n = 0;
        for (cJSON *c = node->child; c; c = c->next)
                n++;
        if (cJSON_IsObject(node) && n > 1) {
                _cleanup_free_ struct member *m = calloc(n, sizeof(*m));
                if (!m)
                        return -ENOMEM;
                size_t i = 0;
                for (cJSON *c = node->child; c; c = c->next, i++)
                        m[i] = (struct member){ c, i };
                qsort(m, n, sizeof(*m), member_cmp);
                for (i = 0; i + 1 < n; i++)
                        if (strcmp(m[i].item->string, m[i + 1].item->string) == 0)
                                cJSON_Delete(cJSON_DetachItemViaPointer(node, m[i].item));
        }
        for (cJSON *c = node->child; c; c = c->next)
                if (keep_last_keys(c) < 0)
                        return -ENOMEM;
        return 0;
}

int spec_parse(const char *json, size_t len, struct job_spec **ret_spec, struct bc_error *err)
{
        if (len > SPEC_MAX_BYTES)
                return bad(err, "spec: larger than %u bytes", SPEC_MAX_BYTES);
        /* What jsonb refuses is refused here too, so enqueue (SQL) and
         * claim (C) agree on every spec. */
        const char *problem = NULL;
        int strict = json_strict_check(json, len, SPEC_MAX_DEPTH, &problem);
        if (strict == -E2BIG)
                return bad(err, "spec: nested deeper than %u levels", SPEC_MAX_DEPTH);
        if (strict < 0)
                return bad(err, "spec: not valid JSON (%s)", problem);
        _cleanup_(cJSON_Deletep) cJSON *root = cJSON_ParseWithLength(json, len);
        if (!root)
                return bad(err, "spec: not valid JSON");
        if (keep_last_keys(root) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "spec: out of memory");
        if (!cJSON_IsObject(root))
                return bad(err, "spec: must be a JSON object");
        int r = spec_unknown_field(root, "", top_fields, err);
        if (r < 0)
                return r;
        _cleanup_(spec_freep) struct job_spec *spec = calloc(1, sizeof(*spec));
        if (!spec)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "spec: out of memory");
        r = set_defaults(spec, err);
        /* The session first: stdin, files and the artifact are checked
         * against it (sql/10_spec.sql keeps the same order). */
        if (r >= 0)
                r = spec_parse_session(cJSON_GetObjectItemCaseSensitive(root, "session"), spec,
                                       err);
        if (r >= 0)
                r = parse_mode(root, spec, err);
        if (r >= 0)
                r = spec_parse_stdin(cJSON_GetObjectItemCaseSensitive(root, "stdin"), spec, err);
        if (r >= 0)
                r = parse_optional(root, spec, err);
        if (r >= 0)
                r = spec_session_artifact_default(spec, err);
        if (r < 0)
                return r;
        *ret_spec = steal_pointer(&spec);
        return 0;
}

/* Wipes before freeing: env holds the job's opened secrets. */
static void strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++) {
                explicit_bzero(*p, strlen(*p));
                free(*p);
        }
        free(v);
}

void spec_free(struct job_spec *spec)
{
        if (!spec)
                return;
        strv_free(spec->argv);
        strv_free(spec->env);
        free(spec->script);
        free(spec->code_language);
        free(spec->code_source);
        free(spec->code_arguments);
        free(spec->workdir);
        free(spec->startup_script);
        for (size_t i = 0; i < spec->n_volumes; i++) {
                struct spec_volume *v = &spec->volumes[i];
                free(v->name);
                free(v->mount);
                free(v->url);
                free(v->sha256);
                free(v->storage);
                free(v->version);
        }
        free(spec->volumes);
        free(spec->artifact_storage);
        free(spec->artifact_base);
        free(spec->image_storage);
        free(spec->image_version);
        free(spec->webhook_url);
        free(spec->net_allow);
        free(spec->session.id);
        free(spec->session.from_session);
        free(spec->session.from_version);
        free(spec->stdin_data);
        spec_files_free(spec->files, spec->n_files);
        spec_secrets_free(spec->secrets, spec->n_secrets);
        free(spec);
}
