/* The credential chain: which source, and caching with refresh before
 * expiry (see creds.h). */
#include "storage/creds.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "storage/creds-internal.h"

#define RETRY_AFTER_FAILURE_S 10 /* while old credentials are still valid */
#define STILL_VALID_S 30         /* what a request signed now needs to reach S3 */

enum creds_kind {
        CREDS_FIXED,
        CREDS_WEB_IDENTITY,
        CREDS_CONTAINER,
        CREDS_IMDS,
        CREDS_PROCESS,
        CREDS_ASSUME_ROLE
};

#define PROFILE_CHAIN_MAX 8 /* source_profile hops */

struct creds_provider {
        enum creds_kind kind;
        char source[640]; /* a credential_process path may be long */
        struct aws_creds fixed;
        char *role_arn, *token_file, *session_name, *sts_endpoint;
        char *url, *auth_token, *auth_token_file;
        char *imds_endpoint;
        char **argv;                    /* credential_process */
        struct creds_provider *src;     /* AssumeRole's source profile */
        char *external_id, *duration_s; /* AssumeRole's */
        char *region;                   /* AssumeRole's signature */
        char *ca_bundle;                /* STS's TLS; NULL: the system's */

        pthread_mutex_t lock; /* guards what follows */
        struct aws_creds cur;
        bool have;
        time_t next_try;
};

static const char *env(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

static char *dup_or_null(const char *s, bool *oom)
{
        char *d = s ? strdup(s) : NULL;
        *oom |= s && !d;
        return d;
}

/* scheme://host[:port] without the trailing '/'. */
static char *dup_endpoint(const char *s, bool *oom)
{
        char *d = s ? strndup(s, strlen(s) - (s[strlen(s) - 1] == '/')) : NULL;
        *oom |= s && !d;
        return d;
}

void creds_provider_free(struct creds_provider *p)
{
        if (!p)
                return;
        aws_creds_done(&p->fixed);
        aws_creds_done(&p->cur);
        free(p->role_arn);
        free(p->token_file);
        free(p->session_name);
        free(p->sts_endpoint);
        free(p->url);
        aws_secret_free(p->auth_token);
        free(p->auth_token_file);
        free(p->imds_endpoint);
        creds_argv_free(p->argv);
        creds_provider_free(p->src);
        free(p->external_id);
        free(p->duration_s);
        free(p->region);
        free(p->ca_bundle);
        pthread_mutex_destroy(&p->lock);
        free(p);
}
BC_DEFINE_CLEANUP(struct creds_provider *, creds_provider_free)

static int set_fixed(struct creds_provider *p, const char *ak, const char *sk, const char *tok)
{
        bool oom = false;
        p->fixed.access_key = dup_or_null(ak, &oom);
        p->fixed.secret_key = dup_or_null(sk, &oom);
        p->fixed.session_token = dup_or_null(tok, &oom);
        p->kind = CREDS_FIXED;
        return oom ? -ENOMEM : 1;
}

/* Each pick_ returns 1 when its source is configured (and takes it), 0
 * when not, negative on a partial configuration. */
static int pick_env(struct creds_provider *p, struct bc_error *err)
{
        const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
        if (!ak && !sk)
                return 0;
        if (!ak || !sk)
                return bc_error_set(err, BC_CONFIG, EINVAL, "%s is set but %s is not",
                                    ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                                    ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        snprintf(p->source, sizeof(p->source), "env");
        return set_fixed(p, ak, sk, env("AWS_SESSION_TOKEN"));
}

static int pick_files(struct creds_provider *p, const struct aws_profile *prof,
                      struct bc_error *err)
{
        if (!prof->access_key && !prof->secret_key)
                return 0;
        if (!prof->access_key || !prof->secret_key)
                return bc_error_set(
                        err, BC_CONFIG, EINVAL, "profile %s (%s, %s) has %s but not %s",
                        prof->name, prof->credentials_path, prof->config_path,
                        prof->access_key ? "aws_access_key_id" : "aws_secret_access_key",
                        prof->access_key ? "aws_secret_access_key" : "aws_access_key_id");
        snprintf(p->source, sizeof(p->source), "shared files (profile %.64s)", prof->name);
        return set_fixed(p, prof->access_key, prof->secret_key, prof->session_token);
}

/* AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, the profile's "sts =
 * endpoint_url", its endpoint_url, else STS's regional endpoint. */
static int pick_sts_endpoint(struct creds_provider *p, const struct aws_profile *prof,
                             const char *region, struct bc_error *err)
{
        const char *ep = env("AWS_ENDPOINT_URL_STS"), *from = "AWS_ENDPOINT_URL_STS";
        if (!ep && (ep = env("AWS_ENDPOINT_URL")))
                from = "AWS_ENDPOINT_URL";
        if (!ep && (ep = prof->sts_endpoint_url))
                from = "the profile's sts endpoint_url";
        if (!ep && (ep = prof->endpoint_url))
                from = "the profile's endpoint_url";
        char dflt[128];
        if (!ep) {
                snprintf(dflt, sizeof(dflt), "https://sts.%s.amazonaws.com", region);
                ep = dflt;
        }
        if (strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "%s must start with http:// or https://", from);
        bool oom = false;
        free(p->sts_endpoint);
        p->sts_endpoint = dup_endpoint(ep, &oom);
        return oom ? -ENOMEM : 0;
}

static int pick_web_identity(struct creds_provider *p, const struct aws_profile *prof,
                             const char *region, struct bc_error *err)
{
        const char *tf = env("AWS_WEB_IDENTITY_TOKEN_FILE");
        const char *arn = tf ? env("AWS_ROLE_ARN") : NULL;
        const char *session = tf ? env("AWS_ROLE_SESSION_NAME") : NULL;
        if (!tf) { /* the profile's pair, taken together */
                tf = prof->web_identity_token_file;
                arn = prof->role_arn;
                session = prof->role_session_name;
        }
        if (!tf)
                return 0;
        if (!arn)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
        int r = pick_sts_endpoint(p, prof, region, err);
        if (r < 0)
                return r;
        bool oom = false;
        p->kind = CREDS_WEB_IDENTITY;
        p->token_file = dup_or_null(tf, &oom);
        p->role_arn = dup_or_null(arn, &oom);
        p->session_name = dup_or_null(session, &oom);
        snprintf(p->source, sizeof(p->source), "web identity");
        return oom ? -ENOMEM : 1;
}

static int pick_container(struct creds_provider *p, struct bc_error *err)
{
        const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
        const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
        if (!rel && !full)
                return 0;
        bool oom = false;
        if (rel) { /* the SDKs prefer it: it can only reach the ECS agent */
                if (asprintf(&p->url, "http://169.254.170.2%s%s", *rel == '/' ? "" : "/", rel) < 0)
                        return -ENOMEM;
        } else {
                int r = creds_container_check_url(full, err);
                if (r < 0)
                        return r;
                p->url = dup_or_null(full, &oom);
        }
        p->kind = CREDS_CONTAINER;
        p->auth_token_file = dup_or_null(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), &oom);
        p->auth_token = dup_or_null(env("AWS_CONTAINER_AUTHORIZATION_TOKEN"), &oom);
        snprintf(p->source, sizeof(p->source), "container");
        return oom ? -ENOMEM : 1;
}

static int pick_imds(struct creds_provider *p)
{
        const char *off = env("AWS_EC2_METADATA_DISABLED");
        if (off && strcasecmp(off, "true") == 0)
                return 0;
        const char *ep = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
        bool oom = false;
        p->imds_endpoint = dup_endpoint(ep ? ep : "http://169.254.169.254", &oom);
        p->kind = CREDS_IMDS;
        snprintf(p->source, sizeof(p->source), "IMDS");
        return oom ? -ENOMEM : 1;
}

static struct creds_provider *provider_alloc(void)
{
        struct creds_provider *p = calloc(1, sizeof(*p));
        if (p && pthread_mutex_init(&p->lock, NULL) != 0) {
                free(p);
                return NULL;
        }
        return p;
}

static int pick_process(struct creds_provider *p, const struct aws_profile *prof,
                        struct bc_error *err)
{
        if (!prof->credential_process)
                return 0;
        int r = creds_split_command(prof->credential_process, &p->argv, err);
        if (r < 0)
                return bc_error_prefix(err, "profile %s (%s)", prof->name, prof->config_path);
        p->kind = CREDS_PROCESS;
        /* The command, not its arguments: they may hold a secret's name. */
        snprintf(p->source, sizeof(p->source), "credential_process (profile %.64s: %.512s)",
                 prof->name, p->argv[0]);
        return 1;
}

/* What the profile's settings say that boxcar does not do: named rather
 * than skipped (the next source would be a surprise). */
static int check_unsupported(const struct aws_profile *prof, struct bc_error *err)
{
        const char *what = prof->credential_source ? "credential_source (use source_profile)"
                           : prof->mfa_serial      ? "mfa_serial (nobody types a code)"
                                                   : NULL;
        if (what && prof->role_arn)
                return bc_error_set(err, BC_CONFIG, ENOTSUP,
                                    "profile %s (%s): %s is not supported", prof->name,
                                    prof->config_path, what);
        if (prof->role_arn && !prof->source_profile && !prof->web_identity_token_file &&
            !env("AWS_WEB_IDENTITY_TOKEN_FILE"))
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "profile %s (%s) has role_arn but neither source_profile nor "
                                    "web_identity_token_file",
                                    prof->name, prof->config_path);
        return 0;
}

struct chain {
        const char *region;
        const struct aws_profile *top; /* STS endpoint, CA bundle */
        const char *ca_bundle;
        const char *names[PROFILE_CHAIN_MAX + 1];
        int n;
};

static int pick_assume_role(struct creds_provider *p, const struct aws_profile *prof,
                            struct chain *ch, struct bc_error *err);

/* A source profile's credentials: its own role (recursively), its keys,
 * or its credential_process. */
static int source_provider(const struct aws_profile *prof, struct chain *ch,
                           struct creds_provider **ret, struct bc_error *err)
{
        _cleanup_(creds_provider_freep) struct creds_provider *p = provider_alloc();
        if (!p)
                return -ENOMEM;
        int r = check_unsupported(prof, err);
        r = r ? r : pick_assume_role(p, prof, ch, err);
        r = r ? r : pick_files(p, prof, err);
        r = r ? r : pick_process(p, prof, err);
        if (r < 0)
                return r;
        if (r == 0)
                return bc_error_set(err, BC_CONFIG, ENOENT,
                                    "source_profile %s has no credentials (aws_access_key_id, "
                                    "credential_process, or role_arn with source_profile) in %s "
                                    "or %s",
                                    prof->name, prof->credentials_path, prof->config_path);
        *ret = steal_pointer(&p);
        return 0;
}

static int pick_assume_role(struct creds_provider *p, const struct aws_profile *prof,
                            struct chain *ch, struct bc_error *err)
{
        if (!prof->role_arn || !prof->source_profile)
                return 0;
        int r;
        if (strcmp(prof->source_profile, prof->name) == 0) {
                /* The SDKs' one allowed loop: the profile's own keys
                 * assume its role. */
                if (!prof->access_key)
                        return bc_error_set(err, BC_CONFIG, ELOOP,
                                            "profile %s is its own source_profile but has no "
                                            "aws_access_key_id",
                                            prof->name);
                p->src = provider_alloc();
                if (!p->src)
                        return -ENOMEM;
                r = pick_files(p->src, prof, err);
                if (r < 0)
                        return r;
        } else {
                for (int i = 0; i < ch->n; i++)
                        if (strcmp(ch->names[i], prof->source_profile) == 0) {
                                char path[512] = "";
                                for (int k = 0; k < ch->n; k++)
                                        snprintf(path + strlen(path), sizeof(path) - strlen(path),
                                                 "%.64s -> ", ch->names[k]);
                                return bc_error_set(err, BC_CONFIG, ELOOP,
                                                    "source_profile chain %s%s is a cycle", path,
                                                    prof->source_profile);
                        }
                if (ch->n >= PROFILE_CHAIN_MAX)
                        return bc_error_set(err, BC_CONFIG, ELOOP,
                                            "source_profile chain longer than %d profiles",
                                            PROFILE_CHAIN_MAX);
                _cleanup_(aws_profile_donep) struct aws_profile src = { 0 };
                r = aws_profile_load_named(prof, prof->source_profile, &src, err);
                if (r < 0)
                        return r;
                ch->names[ch->n++] = src.name;
                r = source_provider(&src, ch, &p->src, err);
                ch->n--;
                if (r < 0)
                        return r;
        }
        const char *d = prof->duration_seconds;
        if (d) {
                char *end = NULL;
                errno = 0;
                long v = strtol(d, &end, 10);
                if (errno || end == d || *end || v < 900 || v > 43200)
                        return bc_error_set(err, BC_CONFIG, EINVAL,
                                            "profile %s: duration_seconds must be 900..43200",
                                            prof->name);
        }
        r = pick_sts_endpoint(p, ch->top, ch->region, err);
        if (r < 0)
                return r;
        bool oom = false;
        p->kind = CREDS_ASSUME_ROLE;
        p->role_arn = dup_or_null(prof->role_arn, &oom);
        p->session_name = dup_or_null(prof->role_session_name, &oom);
        p->external_id = dup_or_null(prof->external_id, &oom);
        p->duration_s = dup_or_null(d, &oom);
        p->region = dup_or_null(ch->region, &oom);
        /* The top profile's provider has the bundle already (it is
         * ch->ca_bundle); a source profile's gets its own copy. */
        if (!p->ca_bundle)
                p->ca_bundle = dup_or_null(ch->ca_bundle, &oom);
        snprintf(p->source, sizeof(p->source), "assume role (profile %.64s, source_profile %.64s)",
                 prof->name, prof->source_profile);
        return oom ? -ENOMEM : 1;
}

int creds_provider_new(const struct aws_profile *prof, const char *region,
                       struct creds_provider **ret, struct bc_error *err)
{
        _cleanup_(creds_provider_freep) struct creds_provider *p = provider_alloc();
        if (!p)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        int r = aws_ca_bundle(prof, &p->ca_bundle, err);
        if (r < 0)
                return r;
        struct chain ch = { .region = region, .top = prof, .ca_bundle = p->ca_bundle };
        ch.names[ch.n++] = prof->name;
        r = pick_env(p, err);
        r = r ? r : check_unsupported(prof, err);
        r = r ? r : pick_assume_role(p, prof, &ch, err);
        r = r ? r : pick_files(p, prof, err);
        r = r ? r : pick_process(p, prof, err);
        r = r ? r : pick_web_identity(p, prof, region, err);
        r = r ? r : pick_container(p, err);
        r = r ? r : pick_imds(p);
        if (r == -ENOMEM)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (r < 0)
                return bc_error_prefix(err, "AWS credentials");
        if (r == 0)
                return bc_error_set(err, BC_CONFIG, ENOENT,
                                    "no AWS credentials found: tried env (AWS_ACCESS_KEY_ID not "
                                    "set), shared files (profile %s: no keys, credential_process "
                                    "or role_arn in %s or %s), web "
                                    "identity (AWS_WEB_IDENTITY_TOKEN_FILE not set), container "
                                    "(AWS_CONTAINER_CREDENTIALS_RELATIVE_URI/FULL_URI not set), "
                                    "IMDS (disabled by AWS_EC2_METADATA_DISABLED)",
                                    prof->name, prof->credentials_path, prof->config_path);
        *ret = steal_pointer(&p);
        return 0;
}

const char *creds_provider_source(const struct creds_provider *p)
{
        return p->source;
}

static int copy_creds(const struct aws_creds *src, struct aws_creds *ret, struct bc_error *err)
{
        bool oom = false;
        struct aws_creds c = {
                .access_key = dup_or_null(src->access_key, &oom),
                .secret_key = dup_or_null(src->secret_key, &oom),
                .session_token = dup_or_null(src->session_token, &oom),
                .expires = src->expires,
        };
        if (oom) {
                aws_creds_done(&c);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        *ret = c;
        return 0;
}

static int fetch(const struct creds_provider *p, struct aws_creds *ret, struct bc_error *err)
{
        switch (p->kind) {
        case CREDS_WEB_IDENTITY: {
                struct web_identity w = { p->role_arn, p->token_file, p->session_name,
                                          p->sts_endpoint, p->ca_bundle };
                return creds_web_identity_fetch(&w, ret, err);
        }
        case CREDS_PROCESS:
                return creds_process_fetch(p->argv, ret, err);
        case CREDS_ASSUME_ROLE: {
                struct aws_creds src = { 0 };
                int r = creds_provider_get(p->src, &src, err);
                if (r < 0)
                        return bc_error_prefix(err, "source_profile");
                struct assume_role a = { p->role_arn,   p->session_name, p->external_id,
                                         p->duration_s, p->sts_endpoint, p->region,
                                         p->ca_bundle };
                r = creds_assume_role_fetch(&a, &src, ret, err);
                aws_creds_done(&src);
                return r;
        }
        case CREDS_CONTAINER: {
                struct container_source c = { p->url, p->auth_token, p->auth_token_file };
                return creds_container_fetch(&c, ret, err);
        }
        case CREDS_IMDS:
                return creds_imds_fetch(p->imds_endpoint, ret, err);
        case CREDS_FIXED:
                break;
        }
        return copy_creds(&p->fixed, ret, err);
}

static bool needs_fetch(const struct creds_provider *p, time_t now)
{
        if (!p->have)
                return true;
        return p->cur.expires && p->cur.expires - now <= CREDS_REFRESH_S && now >= p->next_try;
}

static void unlockp(pthread_mutex_t **m)
{
        pthread_mutex_unlock(*m);
}

int creds_provider_get(struct creds_provider *p, struct aws_creds *ret, struct bc_error *err)
{
        if (p->kind == CREDS_FIXED)
                return copy_creds(&p->fixed, ret, err);
        pthread_mutex_lock(&p->lock);
        _cleanup_(unlockp) pthread_mutex_t *locked = &p->lock;
        (void)locked; /* only its cleanup is wanted (clang warns otherwise) */
        time_t now = time(NULL);
        if (needs_fetch(p, now)) {
                struct aws_creds fresh = { 0 };
                struct bc_error e = BC_ERROR_INIT;
                if (fetch(p, &fresh, &e) == 0) {
                        aws_creds_done(&p->cur);
                        p->cur = fresh;
                        p->have = true;
                        p->next_try = 0;
                } else if (p->have && p->cur.expires > now + STILL_VALID_S) {
                        /* A failed refresh: the old ones still work for now. */
                        p->next_try = now + RETRY_AFTER_FAILURE_S;
                        bc_error_clear(&e);
                } else {
                        /* IMDS is the last source, taken only when
                         * nothing else was configured. */
                        int r = p->kind == CREDS_IMDS
                                        ? bc_error_prefix(&e,
                                                          "no AWS credentials found: tried env, "
                                                          "shared files, web identity, "
                                                          "container, IMDS")
                                        : bc_error_prefix(&e, "AWS credentials: %s", p->source);
                        if (e.code != BC_INTERNAL)
                                e.code = BC_FETCH_FAILED;
                        if (err)
                                bc_error_move(err, &e);
                        bc_error_clear(&e);
                        return r;
                }
        }
        return copy_creds(&p->cur, ret, err);
}
