#include "worker/secrets/pgp_pubkey.h"

#include <errno.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/secrets/pgp_packet.h"

BC_DEFINE_CLEANUP(BIGNUM *, BN_free)

/* An MPI (§3.2): a two-octet bit count, then the big-endian bytes. */
static size_t put_mpi(uint8_t *out, const BIGNUM *bn)
{
        int bits = BN_num_bits(bn);
        out[0] = (uint8_t)(bits >> 8);
        out[1] = (uint8_t)bits;
        return 2 + (size_t)BN_bn2bin(bn, out + 2);
}

/* The key body shared by both packets: version 4, creation time 0,
 * algorithm 1 (RSA), MPIs n and e.  out holds at least 6 + 4 + n + e. */
static int key_body(EVP_PKEY *pkey, uint8_t **ret_body, size_t *ret_len, struct bc_error *err)
{
        _cleanup_(BN_freep) BIGNUM *n = NULL;
        _cleanup_(BN_freep) BIGNUM *e = NULL;
        if (!EVP_PKEY_is_a(pkey, "RSA") ||
            !EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &n) ||
            !EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e))
                return bc_error_set(err, BC_CONFIG, EINVAL, "not an RSA key");
        size_t cap = 6 + 4 + (size_t)BN_num_bytes(n) + (size_t)BN_num_bytes(e);
        uint8_t *body = calloc(1, cap);
        if (!body)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        size_t len = 0;
        body[len++] = 4;
        len += 4; /* creation time 0: see the header */
        body[len++] = 1;
        len += put_mpi(body + len, n);
        len += put_mpi(body + len, e);
        *ret_body = body;
        *ret_len = len;
        return 0;
}

static uint64_t key_id_of(const uint8_t *body, size_t len)
{
        uint8_t head[3] = { 0x99, (uint8_t)(len >> 8), (uint8_t)len };
        uint8_t fp[SHA_DIGEST_LENGTH];
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        /* Only an allocation can fail here; a zero id then matches no key. */
        if (!md || !EVP_DigestInit_ex(md, EVP_sha1(), NULL) ||
            !EVP_DigestUpdate(md, head, sizeof head) || !EVP_DigestUpdate(md, body, len) ||
            !EVP_DigestFinal_ex(md, fp, NULL)) {
                EVP_MD_CTX_free(md);
                return 0;
        }
        EVP_MD_CTX_free(md);
        uint64_t id = 0;
        for (int i = SHA_DIGEST_LENGTH - 8; i < SHA_DIGEST_LENGTH; i++)
                id = id << 8 | fp[i];
        return id;
}

int pgp_pubkey_key_id(EVP_PKEY *pkey, uint64_t *ret_key_id, struct bc_error *err)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        if (key_body(pkey, &body, &len, err) < 0)
                return -EINVAL;
        *ret_key_id = key_id_of(body, len);
        return 0;
}

int pgp_pubkey_build(EVP_PKEY *pkey, uint8_t **ret_packets, size_t *ret_len, uint64_t *ret_key_id,
                     struct bc_error *err)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        if (key_body(pkey, &body, &len, err) < 0)
                return -EINVAL;
        uint8_t *out = malloc(2 * (len + 6));
        if (!out)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        size_t n = pgp_packet_header(out, PGP_TAG_PUBLIC_KEY, len);
        memcpy(out + n, body, len);
        n += len;
        n += pgp_packet_header(out + n, PGP_TAG_PUBLIC_SUBKEY, len);
        memcpy(out + n, body, len);
        n += len;
        *ret_packets = out;
        *ret_len = n;
        *ret_key_id = key_id_of(body, len);
        return 0;
}

void pgp_key_id_hex(uint64_t key_id, char out[17])
{
        snprintf(out, 17, "%016llx", (unsigned long long)key_id);
}
