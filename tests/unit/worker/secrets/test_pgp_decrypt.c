/* Opening sealed job secrets: real pgcrypto output (tests/data/secrets,
 * made by make.sh against PostgreSQL) for each cipher and compression, and
 * every truncation and single-bit flip of a message, which must fail
 * cleanly (ASan/UBSan builds catch any read out of bounds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <openssl/pem.h>

#include "worker/secrets/keyring.h"
#include "worker/secrets/pgp_decrypt.h"
#include "worker/secrets/pgp_pubkey.h"
#include "worker/secrets/sealed.h"
#include "tests/unit/worker/secrets/fixture.h"


static void expect_opens(const char *file, const char *want)
{
        struct secret_keyring *kr = test_keyring();
        char *sealed = slurp(file);
        char *value = NULL;
        size_t len = 0;
        struct bc_error err = BC_ERROR_INIT;
        if (sealed_open(sealed, kr, &value, &len, &err) < 0)
                fail_msg("%s: %s", file, bc_error_message(&err));
        assert_int_equal(len, strlen(want));
        assert_string_equal(value, want);
        free(value);
        free(sealed);
        secret_keyring_free(kr);
}

static void test_pgcrypto_ciphers(void **state)
{
        (void)state;
        expect_opens(DATA "aes128.b64", "hunter2-aes128");
        expect_opens(DATA "aes192.b64", "hunter2-aes192");
        expect_opens(DATA "aes256.b64", "hunter2-aes256");
}

static void test_pgcrypto_compression(void **state)
{
        (void)state;
        expect_opens(DATA "zip.b64", "hunter2-zip hunter2-zip hunter2-zip");
        expect_opens(DATA "zlib.b64", "hunter2-zlib hunter2-zlib hunter2-zlib");
}

static void test_partial_body_lengths(void **state)
{
        (void)state;
        char *want = malloc(60001);
        for (int i = 0; i < 60000; i++)
                want[i] = (char)('0' + i % 10);
        want[60000] = 0;
        expect_opens(DATA "long.b64", want);
        free(want);
}

static void expect_error(const char *sealed, const struct secret_keyring *kr, const char *needle)
{
        char *value = NULL;
        size_t len;
        struct bc_error err = BC_ERROR_INIT;
        int r = sealed_open(sealed, kr, &value, &len, &err);
        if (r >= 0)
                fail_msg("opened, want an error with \"%s\"", needle);
        assert_int_equal(err.code, BC_SECRET_UNAVAILABLE);
        if (needle && !strstr(bc_error_message(&err), needle))
                fail_msg("error \"%s\" does not say \"%s\"", bc_error_message(&err), needle);
        assert_null(strstr(bc_error_message(&err), "hunter2"));
        bc_error_clear(&err);
}

static void test_unsupported_cipher(void **state)
{
        (void)state;
        struct secret_keyring *kr = test_keyring();
        char *sealed = slurp(DATA "blowfish.b64");
        expect_error(sealed, kr, "a cipher other than AES-128, -192 or -256");
        free(sealed);
        secret_keyring_free(kr);
}

static void test_unknown_key(void **state)
{
        (void)state;
        struct secret_keyring other = { 0 };
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(secret_keyring_add(&other, EVP_RSA_gen(2048), &err), 0);
        char *sealed = slurp(DATA "aes256.b64");
        expect_error(sealed, &other,
                     "sealed with key 5e3440960b06c7f9, which this worker does not hold");
        free(sealed);
        EVP_PKEY_free(other.keys[0].pkey);
        free(other.keys);
}

static char *b64(const unsigned char *p, size_t n)
{
        static const char sym[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc(4 * ((n + 2) / 3) + 1);
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;
                if (i + 1 < n)
                        v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < n)
                        v |= p[i + 2];
                out[o++] = sym[v >> 18 & 63];
                out[o++] = sym[v >> 12 & 63];
                out[o++] = i + 1 < n ? sym[v >> 6 & 63] : '=';
                out[o++] = i + 2 < n ? sym[v & 63] : '=';
        }
        out[o] = 0;
        return out;
}

/* Every prefix of a real message, and a bit flip in every byte of it.
 * BOXCAR_TEST_STRIDE=N (the valgrind suite's 13) walks every Nth prefix
 * and byte instead: each attempt is an RSA decryption, about 50 times
 * slower under memcheck, and the strided walk still reaches every
 * packet's error paths. */
static void test_truncated_and_flipped(void **state)
{
        (void)state;
        struct secret_keyring *kr = test_keyring();
        char *sealed = slurp(DATA "zlib.b64");
        unsigned char *msg;
        size_t len;
        const char *stride_env = getenv("BOXCAR_TEST_STRIDE");
        size_t stride = stride_env ? strtoul(stride_env, NULL, 10) : 1;
        if (stride == 0)
                stride = 1;
        assert_int_equal(sealed_base64_decode(sealed, &msg, &len), 0);
        for (size_t n = 1; n < len; n += stride) {
                char *s = b64(msg, n);
                expect_error(s, kr, NULL);
                free(s);
        }
        for (size_t i = 0; i < len; i += stride)
                for (int bit = 0; bit < 8; bit += 3) {
                        msg[i] ^= (unsigned char)(1 << bit);
                        char *s = b64(msg, len);
                        if (getenv("FLIPDEBUG"))
                                fprintf(stderr, "flip %zu bit %d\n", i, bit);
                        expect_error(s, kr, NULL);
                        free(s);
                        msg[i] ^= (unsigned char)(1 << bit);
                }
        /* The unflipped message still opens: the loop tested real damage. */
        char *s = b64(msg, len);
        char *value;
        size_t vlen;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(sealed_open(s, kr, &value, &vlen, &err), 0);
        free(value);
        free(s);
        free(msg);
        free(sealed);
        secret_keyring_free(kr);
}

static void test_not_base64(void **state)
{
        (void)state;
        struct secret_keyring *kr = test_keyring();
        expect_error("not base64!", kr, "not base64");
        expect_error("", kr, "not base64");
        expect_error("AAAA", kr, "not an OpenPGP packet");
        secret_keyring_free(kr);
}

/* Hand-made framing: lengths past the end, endless partial bodies, old
 * format, an unprotected packet, a packet where a PKESK belongs. */
static void test_crafted_framing(void **state)
{
        (void)state;
        static const struct {
                const char *bytes;
                size_t len;
                const char *needle;
        } cases[] = {
                { "\xc1\xff\xff\xff\xff\xff", 6, "truncated" },
                { "\xc1\xff\x00\x00", 4, "truncated" },
                { "\xc1\xef", 2, "truncated" }, /* a partial part of 32 KiB, absent */
                { "\xc1\xe0\x03\xe0\x01\xe0\x02", 7, "truncated" }, /* parts, never a last one */
                { "\xc1\xc0", 2, "truncated" },         /* a two-octet length cut short */
                { "\x84\x05\x03\x00", 4, "truncated" }, /* old format, 5-byte body, 2 there */
                { "\xc9\x01\x00", 3, "no integrity protection" },
                { "\xd2\x01\x01", 3, "no session key packet" },
                { "\xc1\x01\x03", 3, "not a version 3" },
                { "\x7f", 1, "not an OpenPGP packet" },
                { "\xcb\x00", 2, "unexpected OpenPGP packet (tag 11)" },
        };
        struct secret_keyring *kr = test_keyring();
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *s = b64((const unsigned char *)cases[i].bytes, cases[i].len);
                if (getenv("FLIPDEBUG"))
                        fprintf(stderr, "case %zu\n", i);
                expect_error(s, kr, cases[i].needle);
                free(s);
        }
        secret_keyring_free(kr);
}

static void test_keyring_refuses_readable_key(void **state)
{
        (void)state;
        char dir[] = "/tmp/bc-secrets-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof path, "%s/k.pem", dir);
        char *pem = slurp(DATA "key.pem");
        FILE *f = fopen(path, "w");
        fprintf(f, "%s\n", pem);
        fclose(f);
        free(pem);
        chmod(path, 0640);
        struct secret_keyring *kr = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_true(secret_keyring_load(dir, &kr, &err) < 0);
        assert_non_null(strstr(bc_error_message(&err), "chmod 600"));
        bc_error_clear(&err);
        unlink(path);
        rmdir(dir);
}

/* The packets pgcrypto accepted (make.sh registered them) carry the id
 * pgcrypto reads back: pgp_key_id() of the data gave 5E3440960B06C7F9. */
static void test_pubkey_packets(void **state)
{
        (void)state;
        struct secret_keyring *kr = test_keyring();
        uint8_t *packets;
        size_t len;
        uint64_t id;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(pgp_pubkey_build(kr->keys[0].pkey, &packets, &len, &id, &err), 0);
        assert_true(id == 0x5e3440960b06c7f9ULL);
        assert_int_equal(packets[0], 0xc6); /* new-format Public-Key */
        size_t body = ((size_t)(packets[1] - 192) << 8) + packets[2] + 192;
        assert_int_equal(packets[3 + body], 0xce); /* Public-Subkey */
        assert_int_equal(len, 2 * (3 + body));
        char hex[17];
        pgp_key_id_hex(id, hex);
        assert_string_equal(hex, "5e3440960b06c7f9");
        free(packets);
        secret_keyring_free(kr);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pgcrypto_ciphers),
                cmocka_unit_test(test_pgcrypto_compression),
                cmocka_unit_test(test_partial_body_lengths),
                cmocka_unit_test(test_unsupported_cipher),
                cmocka_unit_test(test_unknown_key),
                cmocka_unit_test(test_truncated_and_flipped),
                cmocka_unit_test(test_not_base64),
                cmocka_unit_test(test_crafted_framing),
                cmocka_unit_test(test_keyring_refuses_readable_key),
                cmocka_unit_test(test_pubkey_packets),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
