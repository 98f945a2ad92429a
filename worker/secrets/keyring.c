#include "worker/secrets/keyring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "worker/secrets/pgp_pubkey.h"

#define KEYRING_MAX 64

int secret_keyring_add(struct secret_keyring *kr, EVP_PKEY *pkey, struct bc_error *err)
{
        uint64_t id;
        if (pgp_pubkey_key_id(pkey, &id, err) < 0) {
                EVP_PKEY_free(pkey);
                return -EINVAL;
        }
        if (kr->n >= KEYRING_MAX) {
                EVP_PKEY_free(pkey);
                return bc_error_set(err, BC_CONFIG, E2BIG, "more than %d keys", KEYRING_MAX);
        }
        struct secret_key *keys = realloc(kr->keys, (kr->n + 1) * sizeof *keys);
        if (!keys) {
                EVP_PKEY_free(pkey);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        kr->keys = keys;
        keys[kr->n++] = (struct secret_key){ id, pkey };
        return 0;
}

EVP_PKEY *secret_keyring_find(const struct secret_keyring *kr, uint64_t key_id)
{
        for (size_t i = 0; kr && i < kr->n; i++)
                if (kr->keys[i].key_id == key_id)
                        return kr->keys[i].pkey;
        return NULL;
}

void secret_keyring_free(struct secret_keyring *kr)
{
        if (!kr)
                return;
        for (size_t i = 0; i < kr->n; i++)
                EVP_PKEY_free(kr->keys[i].pkey);
        free(kr->keys);
        free(kr);
}

BC_DEFINE_CLEANUP(struct secret_keyring *, secret_keyring_free)

/* A private key file: a regular file only its owner may read, since it
 * opens every secret sealed to it. */
static int load_file(int dir_fd, const char *dir, const char *name, struct secret_keyring *kr,
                     struct bc_error *err)
{
        _cleanup_fd_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return bc_error_set(err, BC_CONFIG, errno, "--secret-keys: %s/%s: %s", dir, name,
                                    strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return bc_error_set(err, BC_CONFIG, errno, "--secret-keys: %s/%s: %s", dir, name,
                                    strerror(errno));
        if (!S_ISREG(st.st_mode))
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "--secret-keys: %s/%s: not a regular file", dir, name);
        if (st.st_mode & 077)
                return bc_error_set(err, BC_CONFIG, EPERM,
                                    "--secret-keys: %s/%s: mode %03o lets the group or others at "
                                    "the private key; chmod 600 it",
                                    dir, name, (unsigned)(st.st_mode & 0777));
        FILE *f = fdopen(fd, "r");
        if (!f)
                return bc_error_set(err, BC_CONFIG, errno, "--secret-keys: %s/%s: %s", dir, name,
                                    strerror(errno));
        fd = -1;
        EVP_PKEY *pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
        if (!pkey || !EVP_PKEY_is_a(pkey, "RSA")) {
                EVP_PKEY_free(pkey);
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "--secret-keys: %s/%s: not an unencrypted PEM RSA private key",
                                    dir, name);
        }
        if (secret_keyring_add(kr, pkey, err) < 0)
                return bc_error_prefix(err, "--secret-keys: %s/%s", dir, name);
        return 0;
}

static int is_pem(const char *name)
{
        size_t n = strlen(name);
        return n > 4 && name[0] != '.' && strcmp(name + n - 4, ".pem") == 0;
}

int secret_keyring_load(const char *dir, struct secret_keyring **ret, struct bc_error *err)
{
        _cleanup_(secret_keyring_freep) struct secret_keyring *kr = calloc(1, sizeof *kr);
        if (!kr)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return bc_error_set(err, BC_CONFIG, errno, "--secret-keys: %s: %s", dir,
                                    strerror(errno));
        struct dirent *de;
        while ((de = readdir(d)))
                if (is_pem(de->d_name) && load_file(dirfd(d), dir, de->d_name, kr, err) < 0)
                        return -EINVAL;
        *ret = steal_pointer(&kr);
        return 0;
}
