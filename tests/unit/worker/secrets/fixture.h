/* The sealed-secret tests' fixtures (tests/data/secrets, made by make.sh
 * against PostgreSQL): a file's text, and the test key loaded as a
 * keyring the way a worker loads --secret-keys. */
#ifndef BC_TESTS_UNIT_WORKER_SECRETS_FIXTURE_H
#define BC_TESTS_UNIT_WORKER_SECRETS_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/secrets/keyring.h"

#define DATA "tests/data/secrets/"

/* The file's text without its trailing line ends. */
static inline char *slurp(const char *path)
{
        FILE *f = fopen(path, "r");
        if (!f)
                fail_msg("%s: cannot open", path);
        char *buf = calloc(1, 200000);
        size_t n = fread(buf, 1, 199999, f);
        fclose(f);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = 0;
        return buf;
}

/* The test key in a private directory (the keyring refuses 0644). */
static inline struct secret_keyring *test_keyring(void)
{
        char dir[] = "/tmp/bc-secrets-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[128];
        snprintf(path, sizeof path, "%s/key.pem", dir);
        char *pem = slurp(DATA "key.pem");
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%s\n", pem);
        fclose(f);
        free(pem);
        chmod(path, 0600);
        struct secret_keyring *kr = NULL;
        struct bc_error err = BC_ERROR_INIT;
        if (secret_keyring_load(dir, &kr, &err) < 0)
                fail_msg("keyring: %s", bc_error_message(&err));
        unlink(path);
        rmdir(dir);
        /* The fixture's one key, whose id make.sh printed. */
        assert_int_equal(kr->n, 1);
        assert_true(kr->keys[0].key_id == 0x5e3440960b06c7f9ULL);
        return kr;
}

#endif
