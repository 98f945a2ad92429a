/* `boxcar secrets keygen|add-key|keys|retire`: the workers' key pairs
 * that seal job secrets (sql/12_secrets.sql, worker/secrets/). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "worker/cli/cli.h"
#include "worker/db/db.h"
#include "worker/secrets/pgp_pubkey.h"

BC_DEFINE_CLEANUP(EVP_PKEY *, EVP_PKEY_free)

#define KEYGEN_BITS 3072

const char secrets_usage[] =
        "usage: boxcar secrets keygen --out DIR [--no-register] [--database-url URL]\n"
        "       boxcar secrets add-key FILE [--database-url URL]\n"
        "       boxcar secrets keys [--json] [--database-url URL]\n"
        "       boxcar secrets retire KEYID [--database-url URL]\n"
        "\n"
        "The workers' keys for job secrets (spec.secrets, docs/tenants.md): enqueue\n"
        "seals each secret with the newest active public key; workers open it\n"
        "with the private key in their --secret-keys directory.\n"
        "\n"
        "  keygen --out DIR   make an RSA-3072 key: DIR/KEYID.pem (private, mode 0600,\n"
        "                     never overwritten), and register its public half as the\n"
        "                     newest active key unless --no-register\n"
        "  add-key FILE       register the public half of FILE (a PEM private or public\n"
        "                     RSA key) as the newest active key\n"
        "  keys               list the keys: id, state, created, retired, and the jobs\n"
        "                     and schedules still sealed with each\n"
        "  retire KEYID       stop using a key; refused while queued or running jobs\n"
        "                     or schedules hold values sealed with it\n"
        "  --database-url URL PostgreSQL URL (default: $DATABASE_URL)\n";

/* The public key's OpenPGP packets as a bytea literal ("\x..."). */
static int bytea_hex(EVP_PKEY *pkey, char **ret_hex, uint64_t *ret_id, struct bc_error *err)
{
        _cleanup_free_ uint8_t *packets = NULL;
        size_t len;
        if (pgp_pubkey_build(pkey, &packets, &len, ret_id, err) < 0)
                return -EINVAL;
        char *hex = malloc(3 + 2 * len);
        if (!hex)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        strcpy(hex, "\\x");
        for (size_t i = 0; i < len; i++)
                snprintf(hex + 2 + 2 * i, 3, "%02x", packets[i]);
        *ret_hex = hex;
        return 0;
}

static int register_key(const char *url, EVP_PKEY *pkey, struct bc_error *err)
{
        _cleanup_free_ char *hex = NULL;
        uint64_t id;
        if (bytea_hex(pkey, &hex, &id, err) < 0)
                return -EINVAL;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", err);
        if (!conn)
                return -EIO;
        const char *params[] = { hex };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.secret_key_add($1::bytea)",
                                                   1, params, err);
        if (!res)
                return -EIO;
        char want[17];
        pgp_key_id_hex(id, want);
        if (strcmp(PQgetvalue(res, 0, 0), want) != 0)
                return bc_error_set(err, BC_INTERNAL, EINVAL,
                                    "the database read key id %s, this program computed %s",
                                    PQgetvalue(res, 0, 0), want);
        printf("registered key %s as the active key\n", want);
        return 0;
}

/* Writes the private key to DIR/KEYID.pem: created 0600, never replacing
 * a file that is there. */
static int write_private(const char *dir, EVP_PKEY *pkey, struct bc_error *err)
{
        uint64_t id;
        if (pgp_pubkey_key_id(pkey, &id, err) < 0)
                return -EINVAL;
        char hex[17];
        pgp_key_id_hex(id, hex);
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s.pem", dir, hex) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "%s: %s", path, strerror(errno));
        FILE *f = fdopen(fd, "w");
        if (!f) {
                close(fd);
                return bc_error_set(err, BC_IO, errno, "%s: %s", path, strerror(errno));
        }
        int ok = PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
        if (fclose(f) != 0 || !ok) {
                unlink(path);
                return bc_error_set(err, BC_IO, EIO, "%s: cannot write the key", path);
        }
        printf("wrote private key %s\n", path);
        return 0;
}

static int keygen(int argc, char **argv, const char *url, struct bc_error *err)
{
        const char *dir = NULL;
        bool do_register = true;
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
                        dir = argv[++i];
                else if (strcmp(argv[i], "--no-register") == 0)
                        do_register = false;
                else
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "keygen: unexpected argument '%s'", argv[i]);
        }
        if (!dir)
                return bc_error_set(err, BC_USAGE, EINVAL, "keygen: needs --out DIR");
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = EVP_RSA_gen(KEYGEN_BITS);
        if (!pkey)
                return bc_error_set(err, BC_INTERNAL, EIO, "keygen: OpenSSL could not make a key");
        if (write_private(dir, pkey, err) < 0)
                return bc_error_prefix(err, "keygen");
        return do_register ? register_key(url, pkey, err) : 0;
}

static int add_key(int argc, char **argv, const char *url, struct bc_error *err)
{
        if (argc != 3)
                return bc_error_set(err, BC_USAGE, EINVAL, "add-key: needs one FILE");
        _cleanup_fclose_ FILE *f = fopen(argv[2], "re");
        if (!f)
                return bc_error_set(err, BC_IO, errno, "%s: %s", argv[2], strerror(errno));
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        if (!pkey) {
                rewind(f);
                pkey = PEM_read_PUBKEY(f, NULL, NULL, NULL);
        }
        if (!pkey || !EVP_PKEY_is_a(pkey, "RSA"))
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: not a PEM RSA private or public key", argv[2]);
        return register_key(url, pkey, err);
}

static int list_keys(int argc, char **argv, const char *url, struct bc_error *err)
{
        bool json = cli_take_json(&argc, argv);
        if (argc != 2)
                return bc_error_set(err, BC_USAGE, EINVAL, "keys: unexpected argument '%s'",
                                    argv[2]);
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", err);
        if (!conn)
                return -EIO;
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select k.key_id, k.state, to_char(k.created_at at time zone 'UTC', "
                "'YYYY-MM-DD HH24:MI:SS'), coalesce(to_char(k.retired_at at time zone 'UTC', "
                "'YYYY-MM-DD HH24:MI:SS'), ''), u.jobs, u.schedules, "
                "json_build_object('key_id', k.key_id, 'state', k.state, 'created_at', "
                "k.created_at, 'retired_at', k.retired_at, 'jobs', u.jobs, 'schedules', "
                "u.schedules, 'public_key', translate(encode(k.public_key, 'base64'), E'\\n', "
                "''))::text from boxcar.secret_keys k, boxcar.secret_key_users(k.key_id) u "
                "order by k.created_at desc, k.key_id",
                0, NULL, err);
        if (!res)
                return -EIO;
        if (!json)
                printf("%-16s %-7s %-19s %-19s %6s %9s\n", "KEY", "STATE", "CREATED (UTC)",
                       "RETIRED (UTC)", "JOBS", "SCHEDULES");
        for (int i = 0; i < PQntuples(res); i++) {
                if (json)
                        printf("%s\n", PQgetvalue(res, i, 6));
                else
                        printf("%-16s %-7s %-19s %-19s %6s %9s\n", PQgetvalue(res, i, 0),
                               PQgetvalue(res, i, 1), PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
                               PQgetvalue(res, i, 4), PQgetvalue(res, i, 5));
        }
        return 0;
}

static int retire(int argc, char **argv, const char *url, struct bc_error *err)
{
        if (argc != 3)
                return bc_error_set(err, BC_USAGE, EINVAL, "retire: needs one KEYID");
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", err);
        if (!conn)
                return -EIO;
        const char *params[] = { argv[2] };
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.secret_key_retire($1)", 1,
                                                   params, err);
        if (!res)
                return -EIO;
        printf("retired key %s\n", argv[2]);
        return 0;
}

int cmd_secrets(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, secrets_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        struct bc_error err = BC_ERROR_INIT;
        const char *sub = argc > 1 ? argv[1] : "";
        if (strcmp(sub, "keygen") == 0)
                r = keygen(argc, argv, url, &err);
        else if (strcmp(sub, "add-key") == 0)
                r = add_key(argc, argv, url, &err);
        else if (strcmp(sub, "keys") == 0)
                r = list_keys(argc, argv, url, &err);
        else if (strcmp(sub, "retire") == 0)
                r = retire(argc, argv, url, &err);
        else
                r = bc_error_set(&err, BC_USAGE, EINVAL,
                                 "expected keygen, add-key, keys or retire (see --help)");
        return r < 0 ? cli_fail("secrets", &err) : 0;
}
