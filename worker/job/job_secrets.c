#include "worker/job/job_secrets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/secret_mask.h"
#include "common/tailbuf.h"
#include "worker/job/job.h"
#include "worker/secrets/sealed.h"
#include "worker/spec/spec.h"

/* Appends NAME=value to spec->env (NULL-terminated). */
static int env_append(struct job_spec *spec, const char *name, const char *value,
                      struct bc_error *err)
{
        size_t n = 0;
        while (spec->env[n])
                n++;
        char **env = realloc(spec->env, (n + 2) * sizeof(*env));
        if (!env)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "secrets: out of memory");
        spec->env = env;
        env[n + 1] = NULL;
        if (asprintf(&env[n], "%s=%s", name, value) < 0) {
                env[n] = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "secrets: out of memory");
        }
        return 0;
}

#define ENVELOPE "boxcar-secret-v1\n"

/* The value inside its envelope (sql/12_secrets.sql seal_secrets):
 * "boxcar-secret-v1\n<scope>\n<NAME>\n<value>", where scope and NAME must
 * be the job's: a value sealed for one tenant's job, copied into
 * another's, opens nowhere else.  Moves the value to the start of plain. */
static int unwrap(char *plain, size_t *len, const char *scope, size_t scope_len, const char *name)
{
        size_t name_len = strlen(name);
        size_t head = strlen(ENVELOPE) + scope_len + 1 + name_len + 1;
        if (*len < head || memcmp(plain, ENVELOPE, strlen(ENVELOPE)) != 0)
                return -EINVAL;
        const char *p = plain + strlen(ENVELOPE);
        if (memcmp(p, scope, scope_len) != 0 || p[scope_len] != '\n' ||
            memcmp(p + scope_len + 1, name, name_len) != 0 || p[scope_len + 1 + name_len] != '\n')
                return -EACCES;
        memmove(plain, plain + head, *len - head);
        explicit_bzero(plain + (*len - head), head);
        *len -= head;
        plain[*len] = 0;
        return 0;
}

static int open_one(const struct secret_keyring *kr, const struct spec_secret *s,
                    const char *queue, struct job_secrets *js, struct job_spec *spec,
                    struct bc_error *err)
{
        char *value = NULL;
        size_t len = 0;
        if (!kr)
                return bc_error_set(err, BC_SECRET_UNAVAILABLE, ENOKEY,
                                    "secrets.%s: sealed with key %s; this worker has no "
                                    "--secret-keys",
                                    s->name, s->key_id);
        if (sealed_open(s->sealed, kr, &value, &len, err) < 0)
                return bc_error_prefix(err, "secrets.%s (key %s)", s->name, s->key_id);
        int r = unwrap(value, &len, queue, strcspn(queue, "/"), s->name);
        if (r < 0) {
                explicit_bzero(value, len);
                free(value);
                return bc_error_set(err, BC_SECRET_UNAVAILABLE, EACCES,
                                    r == -EACCES
                                            ? "secrets.%s (key %s): sealed for another scope or "
                                              "name (a value copied from another job)"
                                            : "secrets.%s (key %s): not a boxcar secret envelope "
                                              "(docs/tenants.md: client-side sealing)",
                                    s->name, s->key_id);
        }
        js->values[js->n] = value;
        js->lens[js->n] = len;
        js->n++;
        return env_append(spec, s->name, value, err);
}

int job_secrets_open(const struct secret_keyring *kr, struct job_spec *spec, const char *queue,
                     struct job_secrets *ret, struct bc_error *err)
{
        memset(ret, 0, sizeof(*ret));
        if (spec->n_secrets == 0)
                return 0;
        ret->values = calloc(spec->n_secrets, sizeof(*ret->values));
        ret->lens = calloc(spec->n_secrets, sizeof(*ret->lens));
        if (!ret->values || !ret->lens)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "secrets: out of memory");
        for (size_t i = 0; i < spec->n_secrets; i++) {
                int r = open_one(kr, &spec->secrets[i], queue, ret, spec, err);
                if (r < 0)
                        return r;
        }
        for (int i = 0; i < 2; i++) {
                ret->live[i] = secret_mask_new((const char *const *)ret->values, ret->lens,
                                               ret->n);
                if (!ret->live[i])
                        return bc_error_set(err, BC_INTERNAL, errno,
                                            "secrets: cannot build their mask: %s",
                                            strerror(errno));
        }
        return 0;
}

void job_secrets_done(struct job_secrets *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++) {
                explicit_bzero(s->values[i], s->lens[i]);
                free(s->values[i]);
        }
        free(s->values);
        free(s->lens);
        secret_mask_free(s->live[0]);
        secret_mask_free(s->live[1]);
        memset(s, 0, sizeof(*s));
}

static int to_dynbuf(void *ctx, const char *p, size_t n)
{
        return dynbuf_add(ctx, p, n);
}

/* text masked, in a new string (NULL when out of memory). */
static char *mask_text(const struct job_secrets *s, const char *text, size_t len, size_t *ret_len)
{
        struct secret_mask *m = secret_mask_new((const char *const *)s->values, s->lens, s->n);
        if (!m)
                return NULL;
        struct dynbuf b;
        dynbuf_init(&b, len + 64);
        int r = secret_mask_write(m, text, len, to_dynbuf, &b);
        if (r == 0)
                r = secret_mask_flush(m, to_dynbuf, &b);
        secret_mask_free(m);
        if (r < 0) {
                dynbuf_done(&b);
                return NULL;
        }
        *ret_len = b.len;
        return dynbuf_steal(&b);
}

/* The longest k in [1, len) such that text begins with a value's last k
 * bytes (values of at least SECRET_MASK_MIN_LEN). */
static size_t partial_head(const struct job_secrets *s, const char *text, size_t len)
{
        size_t best = 0;
        for (size_t i = 0; i < s->n; i++) {
                if (s->lens[i] < SECRET_MASK_MIN_LEN)
                        continue;
                for (size_t k = s->lens[i] - 1; k > best; k--)
                        if (k <= len && memcmp(text, s->values[i] + s->lens[i] - k, k) == 0) {
                                best = k;
                                break;
                        }
        }
        return best;
}

void job_secrets_mask_tail(const struct job_secrets *s, struct tailbuf *t)
{
        if (!s || s->n == 0 || !t->ring)
                return;
        size_t len = 0;
        char *raw = tailbuf_copy(t, &len);
        if (!raw)
                return;
        size_t mlen = 0;
        char *masked = mask_text(s, raw, len, &mlen);
        explicit_bzero(raw, len);
        free(raw);
        /* Out of memory: nothing of the tail rather than the raw tail. */
        size_t head = masked && tailbuf_truncated(t) ? partial_head(s, masked, mlen) : 0;
        uint64_t total = t->total;
        explicit_bzero(t->ring, t->cap);
        t->start = t->len = 0;
        if (head)
                tailbuf_write(t, SECRET_MASK_REPLACEMENT, strlen(SECRET_MASK_REPLACEMENT));
        if (masked)
                tailbuf_write(t, masked + head, mlen - head);
        t->total = total;
        free(masked);
}

static void mask_string(const struct job_secrets *s, char **text)
{
        if (!*text)
                return;
        size_t len = 0;
        char *masked = mask_text(s, *text, strlen(*text), &len);
        free(*text);
        /* Out of memory: a valid empty JSON value rather than the raw text. */
        *text = masked ? masked : strdup("null");
}

char *job_secrets_masked(const struct job_secrets *s, const char *text)
{
        if (!s || s->n == 0)
                return strdup(text);
        size_t len = 0;
        return mask_text(s, text, strlen(text), &len);
}

void job_secrets_mask_outcome(const struct job_secrets *s, struct job_outcome *o)
{
        if (!s || s->n == 0)
                return;
        mask_string(s, &o->result_json);
        mask_string(s, &o->error_json);
}
