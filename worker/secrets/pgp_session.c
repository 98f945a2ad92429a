#include "worker/secrets/pgp_session.h"

#include <errno.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/secrets/pgp_pubkey.h"

BC_DEFINE_CLEANUP(EVP_PKEY_CTX *, EVP_PKEY_CTX_free)

size_t pgp_sym_key_len(int algo)
{
        switch (algo) {
        case 7:
                return 16;
        case 8:
                return 24;
        case 9:
                return 32;
        default:
                return 0;
        }
}

#define OPAQUE "a wrong key, a modified message, or a cipher other than AES-128, -192 or -256"

static int bad(struct bc_error *err, const char *what, uint64_t key_id)
{
        char hex[17];
        pgp_key_id_hex(key_id, hex);
        return bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG,
                            "the session key sealed with key %s does not open: %s", hex, what);
}

/* PKCS#1 v1.5 decryption of the MPI m^e; the plaintext is
 * algo || key || checksum (§5.1).  Every failure past the RSA operation
 * gives the same message: telling a bad padding from a bad algorithm byte
 * or checksum would be an oracle (Bleichenbacher) for anyone who can
 * enqueue a crafted value and read the job's error. */
static int rsa_open(EVP_PKEY *pkey, const uint8_t *mpi, size_t mpi_len, uint64_t key_id,
                    struct pgp_session_key *ret, struct bc_error *err)
{
        size_t size = (size_t)EVP_PKEY_get_size(pkey);
        if (mpi_len > size)
                return bad(err, "its RSA value is longer than the key", key_id);
        uint8_t in[1024] = { 0 }, out[1024];
        if (size > sizeof in)
                return bad(err, "the key is larger than 8192 bits", key_id);
        /* The MPI drops leading zero bytes; RSA wants the modulus' width. */
        memcpy(in + (size - mpi_len), mpi, mpi_len);
        _cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pkey, NULL);
        size_t out_len = sizeof out;
        if (!ctx || EVP_PKEY_decrypt_init(ctx) <= 0 ||
            EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) <= 0 ||
            EVP_PKEY_decrypt(ctx, out, &out_len, in, size) <= 0)
                return bad(err, OPAQUE, key_id);
        int r = 0;
        size_t klen = out_len > 0 ? pgp_sym_key_len(out[0]) : 0;
        if (klen == 0 || out_len != 1 + klen + 2) {
                r = bad(err, OPAQUE, key_id);
                goto out;
        }
        unsigned sum = 0;
        for (size_t i = 1; i <= klen; i++)
                sum += out[i];
        if ((sum & 0xffff) != ((unsigned)out[1 + klen] << 8 | out[2 + klen])) {
                r = bad(err, OPAQUE, key_id);
                goto out;
        }
        ret->algo = out[0];
        ret->len = klen;
        memcpy(ret->key, out + 1, klen);
out:
        explicit_bzero(out, sizeof out);
        return r < 0 ? r : 1;
}

int pgp_session_open(const uint8_t *body, size_t len, const struct secret_keyring *kr,
                     struct pgp_session_key *ret, uint64_t *ret_key_id, struct bc_error *err)
{
        if (len < 12 || body[0] != 3)
                return bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG,
                                    "not a version 3 public-key session key packet");
        uint64_t key_id = 0;
        for (int i = 1; i <= 8; i++)
                key_id = key_id << 8 | body[i];
        if (body[9] != 1 && body[9] != 2)
                return bad(err, "not sealed with RSA", key_id);
        size_t bits = (size_t)body[10] << 8 | body[11];
        size_t mpi_len = (bits + 7) / 8;
        /* The bit count must be exact (§3.2): a value whose first byte has
         * another number of significant bits is not what was written. */
        if (mpi_len == 0 || mpi_len != len - 12 || body[12] >> ((bits - 1) % 8) != 1)
                return bad(err, "its RSA value has a bad length", key_id);
        *ret_key_id = key_id;
        EVP_PKEY *pkey = secret_keyring_find(kr, key_id);
        if (!pkey)
                return 0;
        return rsa_open(pkey, body + 12, mpi_len, key_id, ret, err);
}
