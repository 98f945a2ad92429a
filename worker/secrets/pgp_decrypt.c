#include "worker/secrets/pgp_decrypt.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "worker/secrets/pgp_packet.h"
#include "worker/secrets/pgp_pubkey.h"
#include "worker/secrets/pgp_session.h"

#define AES_BLOCK 16
#define MDC_LEN 22 /* 0xD3 0x14 and a SHA-1 */
/* The quick check and the MDC fail alike: which one failed would tell an
 * attacker about the plaintext of a value they modified (RFC 4880 §14). */
#define MODIFIED "the message was modified (its integrity check fails)"
/* A literal packet's header: format, name length, name, date. */
#define LITERAL_HEADER_MAX (1 + 1 + 255 + 4)

/* A heap buffer that may hold plaintext: wiped before it is freed. */
struct secret_buf {
        uint8_t *p;
        size_t len;
};

static void secret_buf_done(struct secret_buf *b)
{
        if (b->p) {
                explicit_bzero(b->p, b->len);
                free(b->p);
        }
        b->p = NULL;
        b->len = 0;
}

static int fail(struct bc_error *err, const char *what)
{
        return bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG, "%s", what);
}

static const EVP_CIPHER *cfb_cipher(int algo)
{
        switch (algo) {
        case 7:
                return EVP_aes_128_cfb128();
        case 8:
                return EVP_aes_192_cfb128();
        default:
                return EVP_aes_256_cfb128();
        }
}

/* The SEIPD packet (§5.13): version 1, then CFB with a zero IV over a
 * random block, its last two bytes repeated, the packets and the MDC. */
static int seipd_open(const uint8_t *body, size_t len, const struct pgp_session_key *sk,
                      struct secret_buf *ret, struct bc_error *err)
{
        if (len < 1 || body[0] != 1)
                return fail(err, "not a version 1 integrity-protected data packet");
        const uint8_t *ct = body + 1;
        size_t ct_len = len - 1;
        if (ct_len < AES_BLOCK + 2 + MDC_LEN)
                return fail(err, "the encrypted data is too short");
        if (ct_len > (size_t)INT32_MAX)
                return fail(err, "the encrypted data is too long");
        struct secret_buf plain = { malloc(ct_len), ct_len };
        if (!plain.p)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        static const uint8_t zero_iv[AES_BLOCK];
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        int n1 = 0, n2 = 0;
        int ok = ctx && EVP_DecryptInit_ex(ctx, cfb_cipher(sk->algo), NULL, sk->key, zero_iv) &&
                 EVP_DecryptUpdate(ctx, plain.p, &n1, ct, (int)ct_len) &&
                 EVP_DecryptFinal_ex(ctx, plain.p + n1, &n2) && (size_t)(n1 + n2) == ct_len;
        EVP_CIPHER_CTX_free(ctx);
        if (!ok) {
                secret_buf_done(&plain);
                return fail(err, "the data does not decrypt");
        }
        const uint8_t *p = plain.p;
        if (p[AES_BLOCK - 2] != p[AES_BLOCK] || p[AES_BLOCK - 1] != p[AES_BLOCK + 1]) {
                secret_buf_done(&plain);
                return fail(err, MODIFIED);
        }
        /* The MDC hashes everything before its own 20 hash bytes. */
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned dlen = 0;
        const uint8_t *mdc = p + ct_len - MDC_LEN;
        if (mdc[0] != 0xd3 || mdc[1] != 0x14 ||
            !EVP_Digest(p, ct_len - 20, digest, &dlen, EVP_sha1(), NULL) || dlen != 20 ||
            CRYPTO_memcmp(digest, mdc + 2, 20) != 0) {
                secret_buf_done(&plain);
                return fail(err, MODIFIED);
        }
        *ret = plain;
        return 0;
}

static int inflate_to(const uint8_t *in, size_t in_len, int window_bits, struct secret_buf *ret,
                      struct bc_error *err)
{
        size_t cap = PGP_PLAINTEXT_MAX + LITERAL_HEADER_MAX + 64;
        struct secret_buf out = { malloc(cap), cap };
        if (!out.p)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        z_stream z = { 0 };
        if (inflateInit2(&z, window_bits) != Z_OK) {
                secret_buf_done(&out);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "zlib: out of memory");
        }
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)in_len;
        z.next_out = out.p;
        z.avail_out = (uInt)cap;
        int zr = inflate(&z, Z_FINISH);
        size_t produced = cap - z.avail_out;
        inflateEnd(&z);
        if (zr != Z_STREAM_END) {
                secret_buf_done(&out);
                return fail(err, zr == Z_BUF_ERROR && z.avail_out == 0
                                         ? "the compressed value is larger than 64 KiB"
                                         : "the compressed data is corrupt");
        }
        *ret = out;
        /* secret_buf_done wipes len bytes: the rest was never written. */
        ret->len = produced;
        return 0;
}

/* A Compressed Data packet (§5.6): uncompressed, ZIP (raw deflate) or
 * ZLIB; BZip2 is refused. */
static int decompress(const uint8_t *body, size_t len, struct secret_buf *ret,
                      struct bc_error *err)
{
        if (len < 1)
                return fail(err, "an empty compressed data packet");
        if (len - 1 > (size_t)UINT32_MAX)
                return fail(err, "the compressed data is too long");
        switch (body[0]) {
        case 0: {
                struct secret_buf b = { malloc(len - 1 ? len - 1 : 1), len - 1 };
                if (!b.p)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                memcpy(b.p, body + 1, len - 1);
                *ret = b;
                return 0;
        }
        case 1:
                return inflate_to(body + 1, len - 1, -15, ret, err);
        case 2:
                return inflate_to(body + 1, len - 1, 15, ret, err);
        default:
                return fail(err, "compressed with an unsupported algorithm (ZIP and ZLIB only)");
        }
}

/* The Literal Data packet's data (§5.9), copied out with a NUL. */
static int literal_data(const uint8_t *body, size_t len, uint8_t **ret, size_t *ret_len,
                        struct bc_error *err)
{
        if (len < 2 || len < 2 + (size_t)body[1] + 4)
                return fail(err, "a truncated literal data packet");
        size_t off = 2 + (size_t)body[1] + 4;
        size_t n = len - off;
        if (n > PGP_PLAINTEXT_MAX)
                return fail(err, "the value is larger than 64 KiB");
        uint8_t *out = malloc(n + 1);
        if (!out)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        memcpy(out, body + off, n);
        out[n] = 0;
        *ret = out;
        *ret_len = n;
        return 0;
}

/* The packets inside the encryption: one Literal Data packet, perhaps in
 * one Compressed Data packet (depth 0 allows it, depth 1 does not). */
static int inner_literal(const uint8_t *data, size_t len, int depth, uint8_t **ret,
                         size_t *ret_len, struct bc_error *err)
{
        struct pgp_cursor c = { data, len, 0 };
        int tag;
        struct secret_buf body = { 0 };
        int r = pgp_packet_next(&c, &tag, &body.p, &body.len, err);
        if (r == 0)
                return fail(err, "the encrypted data holds no value");
        if (r < 0)
                return r;
        if (c.off != c.len)
                r = fail(err, "the encrypted data holds more than one value");
        else if (tag == PGP_TAG_LITERAL)
                r = literal_data(body.p, body.len, ret, ret_len, err);
        else if (tag == PGP_TAG_COMPRESSED && depth == 0) {
                struct secret_buf raw = { 0 };
                r = decompress(body.p, body.len, &raw, err);
                if (r == 0)
                        r = inner_literal(raw.p, raw.len, 1, ret, ret_len, err);
                secret_buf_done(&raw);
        } else
                r = bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG,
                                 "the encrypted data holds an unexpected packet (tag %d)", tag);
        secret_buf_done(&body);
        return r;
}

/* The outer packets: PKESKs (the first one a key of kr opens wins), then
 * the SEIPD packet.  A Marker packet is skipped; anything else refused,
 * the unprotected Symmetrically Encrypted packet (tag 9) above all. */
static int open_outer(const uint8_t *msg, size_t len, const struct secret_keyring *kr,
                      struct secret_buf *ret, struct bc_error *err)
{
        struct pgp_cursor c = { msg, len, 0 };
        struct pgp_session_key sk = { 0 };
        int have_key = 0, saw_pkesk = 0, r = 0;
        uint64_t key_id = 0;
        for (;;) {
                int tag;
                _cleanup_free_ uint8_t *body = NULL;
                size_t blen;
                r = pgp_packet_next(&c, &tag, &body, &blen, err);
                if (r < 0)
                        goto out;
                if (r == 0) {
                        r = fail(err, "the message holds no encrypted data");
                        goto out;
                }
                if (tag == PGP_TAG_MARKER)
                        continue;
                if (tag == PGP_TAG_PKESK) {
                        if (have_key)
                                continue;
                        saw_pkesk = 1;
                        r = pgp_session_open(body, blen, kr, &sk, &key_id, err);
                        if (r < 0)
                                goto out;
                        have_key = r == 1;
                        continue;
                }
                if (tag != PGP_TAG_SEIPD) {
                        r = bc_error_set(err, BC_SECRET_UNAVAILABLE, EBADMSG,
                                         tag == PGP_TAG_SYM_ENCRYPTED
                                                 ? "the message has no integrity protection (MDC)"
                                                 : "unexpected OpenPGP packet (tag %d)",
                                         tag);
                        goto out;
                }
                if (!have_key) {
                        char hex[17];
                        pgp_key_id_hex(key_id, hex);
                        r = saw_pkesk ? bc_error_set(err, BC_SECRET_UNAVAILABLE, ENOKEY,
                                                     "sealed with key %s, which this worker "
                                                     "does not hold (--secret-keys)",
                                                     hex)
                                      : fail(err, "the message has no session key packet");
                        goto out;
                }
                r = seipd_open(body, blen, &sk, ret, err);
                if (r == 0 && c.off != c.len)
                        r = fail(err, "data after the encrypted data packet");
                if (r < 0)
                        secret_buf_done(ret);
                goto out;
        }
out:
        explicit_bzero(&sk, sizeof sk);
        return r < 0 ? r : 0;
}

int pgp_decrypt(const uint8_t *msg, size_t len, const struct secret_keyring *kr,
                uint8_t **ret_plain, size_t *ret_len, struct bc_error *err)
{
        struct secret_buf plain = { 0 };
        int r = open_outer(msg, len, kr, &plain, err);
        if (r < 0)
                return r;
        r = inner_literal(plain.p + AES_BLOCK + 2, plain.len - AES_BLOCK - 2 - MDC_LEN, 0,
                          ret_plain, ret_len, err);
        secret_buf_done(&plain);
        return r;
}
