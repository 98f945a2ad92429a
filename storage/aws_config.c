/* AWS shared credentials and config files (see aws_config.h). */
#include "storage/aws_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "common/text.h"

#define AWS_FILE_MAX (1 << 20)

void aws_secret_free(char *s)
{
        if (!s)
                return;
        /* volatile: the compiler may not drop a store before free() */
        for (volatile char *p = s; *p; p++)
                *p = 0;
        free(s);
}

void aws_profile_done(struct aws_profile *p)
{
        if (!p)
                return;
        free(p->name);
        free(p->credentials_path);
        free(p->config_path);
        free(p->access_key);
        aws_secret_free(p->secret_key);
        aws_secret_free(p->session_token);
        free(p->role_arn);
        free(p->web_identity_token_file);
        free(p->role_session_name);
        free(p->region);
        free(p->endpoint_url);
        free(p->s3_endpoint_url);
        free(p->s3_addressing_style);
        free(p->sts_endpoint_url);
        free(p->credential_process);
        free(p->source_profile);
        free(p->credential_source);
        free(p->external_id);
        free(p->duration_seconds);
        free(p->mfa_serial);
        free(p->ca_bundle);
        memset(p, 0, sizeof(*p));
}

/* $env, else "~/.aws/<leaf>" with $HOME expanded; caller frees. */
static char *aws_default_path(const char *env, const char *leaf)
{
        const char *v = getenv(env);
        if (v && *v)
                return strdup(v);
        const char *home = getenv("HOME");
        char *r = NULL;
        if (asprintf(&r, "%s/.aws/%s", home && *home ? home : "", leaf) < 0)
                return NULL;
        return r;
}

struct key_slot {
        const char *nested; /* NULL: top level of the profile */
        const char *key;
        size_t offset;   /* of the char * in struct aws_profile */
        bool credential; /* also read from the credentials file */
};

#define SLOT(n, k, f, c)                                 \
        {                                                \
                n, k, offsetof(struct aws_profile, f), c \
        }
static const struct key_slot slots[] = {
        SLOT(NULL, "aws_access_key_id", access_key, true),
        SLOT(NULL, "aws_secret_access_key", secret_key, true),
        SLOT(NULL, "aws_session_token", session_token, true),
        SLOT(NULL, "role_arn", role_arn, false),
        SLOT(NULL, "web_identity_token_file", web_identity_token_file, false),
        SLOT(NULL, "role_session_name", role_session_name, false),
        SLOT(NULL, "region", region, false),
        SLOT(NULL, "endpoint_url", endpoint_url, false),
        SLOT("s3", "endpoint_url", s3_endpoint_url, false),
        SLOT("s3", "addressing_style", s3_addressing_style, false),
        SLOT("sts", "endpoint_url", sts_endpoint_url, false),
        /* The SDKs read these from the credentials file too. */
        SLOT(NULL, "credential_process", credential_process, true),
        SLOT(NULL, "source_profile", source_profile, false),
        SLOT(NULL, "credential_source", credential_source, false),
        SLOT(NULL, "external_id", external_id, false),
        SLOT(NULL, "duration_seconds", duration_seconds, false),
        SLOT(NULL, "mfa_serial", mfa_serial, false),
        SLOT(NULL, "ca_bundle", ca_bundle, false),
};

/* The first value seen wins: the credentials file is read first. */
static int assign(struct aws_profile *p, bool creds_file, const char *nested, const char *key,
                  const char *value)
{
        for (size_t i = 0; i < ELEMENTSOF(slots); i++) {
                const struct key_slot *s = &slots[i];
                if ((s->nested == NULL) != (nested == NULL) ||
                    (nested && strcmp(s->nested, nested) != 0) || strcmp(s->key, key) != 0 ||
                    (creds_file && !s->credential))
                        continue;
                char **field = (char **)((char *)p + s->offset);
                if (*field || !*value)
                        return 0;
                *field = strdup(value);
                return *field ? 0 : -ENOMEM;
        }
        return 0;
}

/* Whether a section header names our profile: "[name]" in the
 * credentials file; "[profile name]", or "[default]", in the config file. */
static bool section_is(char *hdr, bool creds_file, const char *name)
{
        if (creds_file || strcmp(hdr, "default") == 0)
                return strcmp(hdr, name) == 0;
        if (strncmp(hdr, "profile", 7) != 0 || (hdr[7] != ' ' && hdr[7] != '\t'))
                return false;
        return strcmp(bc_trim(hdr + 8), name) == 0;
}

static int parse_file(struct aws_profile *p, const char *path, bool creds_file,
                      struct bc_error *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct bc_error e = BC_ERROR_INIT;
        if (bc_read_all(path, AWS_FILE_MAX, &text, &len, &e) < 0) {
                int errnum = e.errnum;
                bc_error_clear(&e);
                if (errnum == ENOENT || errnum == ENOTDIR)
                        return 0;
                return bc_error_set(err, BC_CONFIG, errnum ? errnum : EIO, "%s: %s", path,
                                    errnum == E2BIG ? "larger than 1 MiB" : strerror(errnum));
        }
        bool in = false;
        char nested[64] = "";
        int r = 0;
        for (char *line = text, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                bool indented = *line == ' ' || *line == '\t';
                char *s = bc_trim(line);
                if (!*s || *s == '#' || *s == ';')
                        continue;
                if (*s == '[') {
                        char *close = strchr(s, ']');
                        if (close)
                                *close = '\0';
                        in = close && section_is(bc_trim(s + 1), creds_file, p->name);
                        p->found |= in;
                        nested[0] = '\0';
                        continue;
                }
                char *eq = strchr(s, '=');
                if (!in || !eq)
                        continue;
                *eq = '\0';
                char *key = bc_trim(s), *value = bc_trim(eq + 1);
                if (indented && *nested) {
                        r = assign(p, creds_file, nested, key, value);
                } else {
                        nested[0] = '\0';
                        if (!*value && strlen(key) < sizeof(nested))
                                snprintf(nested, sizeof(nested), "%s", key);
                        r = assign(p, creds_file, NULL, key, value);
                }
                if (r < 0) {
                        r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                        break;
                }
        }
        /* The text held the secret key, as aws_secret_free wipes a copy. */
        if (text)
                explicit_bzero(text, len);
        return r;
}

static int load(const char *name, bool explicit_name, const char *credentials_path,
                const char *config_path, struct aws_profile *ret, struct bc_error *err)
{
        struct aws_profile p = { 0 };
        p.explicit_name = explicit_name;
        p.name = strdup(name);
        p.credentials_path = credentials_path ? strdup(credentials_path)
                                              : aws_default_path("AWS_SHARED_CREDENTIALS_FILE",
                                                                 "credentials");
        p.config_path = config_path ? strdup(config_path)
                                    : aws_default_path("AWS_CONFIG_FILE", "config");
        if (!p.name || !p.credentials_path || !p.config_path) {
                aws_profile_done(&p);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        int r = parse_file(&p, p.credentials_path, true, err);
        r = r ? r : parse_file(&p, p.config_path, false, err);
        if (r < 0) {
                aws_profile_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

int aws_profile_load(struct aws_profile *ret, struct bc_error *err)
{
        const char *name = getenv("AWS_PROFILE");
        bool explicit_name = name && *name;
        struct aws_profile p = { 0 };
        int r = load(explicit_name ? name : "default", explicit_name, NULL, NULL, &p, err);
        if (r < 0)
                return r;
        if (p.explicit_name && !p.found) {
                r = bc_error_set(err, BC_CONFIG, ENOENT,
                                 "AWS_PROFILE %s: no such profile in %s or %s", p.name,
                                 p.credentials_path, p.config_path);
                aws_profile_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

int aws_profile_load_named(const struct aws_profile *from, const char *name,
                           struct aws_profile *ret, struct bc_error *err)
{
        struct aws_profile p = { 0 };
        int r = load(name, true, from->credentials_path, from->config_path, &p, err);
        if (r < 0)
                return r;
        if (!p.found) {
                r = bc_error_set(err, BC_CONFIG, ENOENT,
                                 "profile %s: source_profile %s: no such profile in %s or %s",
                                 from->name, name, p.credentials_path, p.config_path);
                aws_profile_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

int aws_ca_bundle(const struct aws_profile *prof, char **ret, struct bc_error *err)
{
        const char *v = getenv("AWS_CA_BUNDLE"), *from = "AWS_CA_BUNDLE";
        if (!v || !*v) {
                v = prof->ca_bundle;
                from = "the profile's ca_bundle";
        }
        *ret = NULL;
        if (!v)
                return 0;
        /* Opened now: curl would only say "error setting certificate
         * file" at the first request, without the file's name. */
        FILE *f = fopen(v, "re");
        if (!f)
                return bc_error_set(err, BC_CONFIG, errno, "%s %s: %s", from, v, strerror(errno));
        int c = fgetc(f);
        int e = ferror(f) ? errno : 0;
        fclose(f);
        if (e)
                return bc_error_set(err, BC_CONFIG, e, "%s %s: %s", from, v, strerror(e));
        if (c == EOF)
                return bc_error_set(err, BC_CONFIG, EINVAL, "%s %s: the file is empty", from, v);
        *ret = strdup(v);
        return *ret ? 0 : bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
}
