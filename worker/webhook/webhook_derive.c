#include "worker/webhook/webhook_derive.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "worker/webhook/webhook_sign.h"

/* The NUL after "v1" is part of the label: every field is NUL-ended, so
 * no two (scope, endpoint, generation) give the same message. */
static const char derive_label[] = "boxcar webhook secret v1";

int webhook_derive_key(const struct webhook_secrets *master, size_t i, const char *scope,
                       const char *endpoint, int generation,
                       unsigned char ret_key[static WEBHOOK_DERIVED_KEY_BYTES],
                       struct bc_error *err)
{
        size_t scope_len = scope ? strlen(scope) : 0;
        size_t endpoint_len = endpoint ? strlen(endpoint) : 0;
        if (scope_len == 0 || scope_len > WEBHOOK_SCOPE_MAX)
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook secret: scope empty or longer than %d bytes",
                                    WEBHOOK_SCOPE_MAX);
        if (endpoint_len > WEBHOOK_ENDPOINT_MAX)
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook secret: endpoint longer than %d bytes",
                                    WEBHOOK_ENDPOINT_MAX);
        if (generation < 0)
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "webhook secret: negative generation %d", generation);
        char gen[16];
        int gen_len = snprintf(gen, sizeof(gen), "%d", generation);
        struct iovec parts[] = {
                { (void *)derive_label, sizeof(derive_label) }, /* with its NUL */
                { (void *)scope, scope_len + 1 },
                { (void *)(endpoint ? endpoint : ""), endpoint_len + 1 },
                { gen, (size_t)gen_len },
        };
        unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
        int r = webhook_secrets_hmac(master, i, parts, ELEMENTSOF(parts), key);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, -r, "webhook secret: HMAC failed");
        memcpy(ret_key, key, sizeof(key));
        OPENSSL_cleanse(key, sizeof(key));
        return 0;
}

void webhook_key_text(const unsigned char key[static WEBHOOK_DERIVED_KEY_BYTES],
                      char out[static WEBHOOK_SECRET_TEXT_SIZE])
{
        memcpy(out, "whsec_", 6);
        EVP_EncodeBlock((unsigned char *)out + 6, key, WEBHOOK_DERIVED_KEY_BYTES);
}

struct cache_entry {
        char *scope, *endpoint; /* NULL: a free entry */
        int generation;
        size_t master;
        uint64_t used; /* tick of the last use */
        unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
};

struct webhook_keycache {
        const struct webhook_secrets *master;
        struct cache_entry *entries;
        size_t cap;
        uint64_t tick;
};

static void entry_clear(struct cache_entry *e)
{
        free(e->scope);
        free(e->endpoint);
        OPENSSL_cleanse(e, sizeof(*e));
}

int webhook_keycache_new(const struct webhook_secrets *master, size_t cap,
                         struct webhook_keycache **ret, struct bc_error *err)
{
        _cleanup_free_ struct webhook_keycache *c = calloc(1, sizeof(*c));
        struct cache_entry *entries = calloc(cap ? cap : 1, sizeof(*entries));
        if (!c || !entries) {
                free(entries);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook secrets: out of memory");
        }
        c->master = master;
        c->entries = entries;
        c->cap = cap ? cap : 1;
        *ret = steal_pointer(&c);
        return 0;
}

void webhook_keycache_free(struct webhook_keycache *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->cap; i++)
                entry_clear(&c->entries[i]);
        free(c->entries);
        free(c);
}

/* The entry of (master, scope, endpoint, generation): found, or the free
 * or least recently used one, derived into. */
static int lookup(struct webhook_keycache *c, size_t m, const char *scope, const char *endpoint,
                  int generation, struct cache_entry **ret, struct bc_error *err)
{
        struct cache_entry *victim = &c->entries[0];
        for (size_t i = 0; i < c->cap; i++) {
                struct cache_entry *e = &c->entries[i];
                if (e->scope && e->master == m && e->generation == generation &&
                    strcmp(e->scope, scope) == 0 && strcmp(e->endpoint, endpoint) == 0) {
                        e->used = ++c->tick;
                        *ret = e;
                        return 0;
                }
                if (victim->scope && (!e->scope || e->used < victim->used))
                        victim = e;
        }
        entry_clear(victim);
        unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
        int r = webhook_derive_key(c->master, m, scope, endpoint, generation, key, err);
        if (r < 0)
                return r;
        victim->scope = strdup(scope);
        victim->endpoint = strdup(endpoint);
        if (!victim->scope || !victim->endpoint) {
                entry_clear(victim);
                OPENSSL_cleanse(key, sizeof(key));
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "webhook secrets: out of memory");
        }
        memcpy(victim->key, key, sizeof(key));
        OPENSSL_cleanse(key, sizeof(key));
        victim->master = m;
        victim->generation = generation;
        victim->used = ++c->tick;
        *ret = victim;
        return 0;
}

int webhook_keycache_add(struct webhook_keycache *c, const char *scope, const char *endpoint,
                         int generation, struct webhook_secrets *set, struct bc_error *err)
{
        for (size_t m = 0; m < webhook_secrets_count(c->master); m++) {
                struct cache_entry *e = NULL;
                int r = lookup(c, m, scope, endpoint ? endpoint : "", generation, &e, err);
                if (r < 0)
                        return r;
                r = webhook_secrets_add(set, e->key, sizeof(e->key), err);
                if (r < 0)
                        return r;
        }
        return 0;
}
