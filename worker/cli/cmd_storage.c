/* `boxcar storage push|pull|ls|url`: named storages from the command line. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/sandbox.h"
#include "storage/storage.h"
#include "worker/cli/cli.h"
#include "worker/config/config.h"
#include "worker/db/db.h"
#include "worker/job/store.h"

const char storage_usage[] =
        "usage: boxcar storage push [--kind volume|artifact|image] [--json] NAME DIR|TARBALL\n"
        "       boxcar storage pull [--json] NAME[@VERSION] DIR\n"
        "       boxcar storage ls [--kind volume|artifact|image] [--json] [NAME]\n"
        "       boxcar storage url [--expires DUR] [--json] NAME[@VERSION]\n"
        "\n"
        "  push    upload DIR as a new version of NAME (prints its sha256) and move the\n"
        "          head there; NAME is created when new, as --kind (default: artifact).\n"
        "          A TARBALL (.tar or .tar.gz, e.g. `docker export` output) is unpacked\n"
        "          with the worker's safety rules and packed again, so the same tree is\n"
        "          the same version whichever way it comes.  An image is a root\n"
        "          filesystem jobs run on (\"image\" in the job spec); its setuid bits\n"
        "          and device nodes are dropped\n"
        "  pull    unpack a version (default @latest) into DIR, which must not exist or\n"
        "          be empty\n"
        "  ls      all storages (of --kind), or the versions of NAME, one JSON object\n"
        "          per line\n"
        "  url     a presigned GET URL of a version, valid for --expires (default: 1h,\n"
        "          at most 7d; durations: 250ms, 30s, 5m, 2h, 1d or plain seconds)\n"
        "\n"
        "  --json                 print one JSON object: push, the new version as ls\n"
        "                         NAME shows it, with \"name\", \"kind\" and \"uploaded\";\n"
        "                         pull {\"name\", \"sha256\", \"dir\"}; url {\"name\",\n"
        "                         \"sha256\", \"url\", \"expires_in_s\"}; ls: accepted, its\n"
        "                         lines are JSON anyway\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n"
        "\n"
        "S3: BOXCAR_S3_BUCKET, BOXCAR_S3_PREFIX, BOXCAR_S3_FORCE_PATH_STYLE, and the\n"
        "AWS SDKs' credential chain, region and endpoint variables and files (see\n"
        "boxcar worker --help and the README).\n";

static int fail(const char *what, struct bc_error *err)
{
        int st = cli_fail(what, err);
        bc_error_clear(err);
        return st;
}

/* "name@version" → name and version ("latest" when absent). */
static void split_ref(char *ref, const char **ret_version)
{
        char *at = strchr(ref, '@');
        *ret_version = "latest";
        if (at) {
                *at = '\0';
                *ret_version = at + 1;
        }
}

static int open_s3(struct storage_config **ret, struct bc_error *err)
{
        const char *bucket = getenv("BOXCAR_S3_BUCKET");
        if (!bucket || !*bucket)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "BOXCAR_S3_BUCKET is not set (and AWS credentials)");
        return storage_config_from_env(ret, err);
}

/* A tarball to push is unpacked first, under the rules a worker applies
 * to what it downloads (an image's setuid bits cleared and device nodes
 * dropped), and the tree packed again: the version is then the tree's
 * deterministic archive, not whatever bytes the tool that made the
 * tarball wrote. */
static int unpack_tarball(const char *path, const char *tree, bool image, struct bc_error *err)
{
        struct storage_limits l;
        storage_limits_default(&l);
        l.image = image;
        struct storage_fetch_result fr;
        int r = storage_extract_file(path, NULL, tree, &l, &fr, err);
        return r < 0 ? bc_error_prefix(err, "unpack %s", path) : 0;
}

/* push --json: the version as `storage ls NAME` shows it, and more. */
static int print_pushed(PGconn *conn, const char *name, const char *sha, bool uploaded,
                        struct bc_error *err)
{
        const char *p[] = { name, sha, uploaded ? "true" : "false" };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select (v || jsonb_build_object('name', s.name, 'kind', s.kind,"
                " 'uploaded', $3::boolean))::text"
                " from boxcar.storage_versions_json($1) v, boxcar.storages s"
                " where s.name = $1 and v->>'sha256' = $2",
                3, p, err);
        if (!res)
                return -EPROTO;
        if (PQntuples(res) != 1)
                return bc_error_set(err, BC_INTERNAL, ENOENT, "version %s of %s not found", sha,
                                    name);
        printf("%s\n", PQgetvalue(res, 0, 0));
        return 0;
}

static int push(PGconn *conn, const char *name, const char *dir, const char *kind, bool json,
                struct bc_error *err)
{
        _cleanup_(storage_config_freep) struct storage_config *s3 = NULL;
        int r = open_s3(&s3, err);
        if (r < 0)
                return r;
        const char *cp[] = { name, kind };
        _cleanup_pgresult_ PGresult *created = db_exec(
                conn, "select boxcar.create_storage($1, $2)", 2, cp, err);
        if (!created)
                return -EPROTO;
        struct store_version head = { 0 };
        int found = store_resolve(conn, name, "latest", &head, err);
        if (found < 0)
                return found;
        char tmp[] = "/tmp/boxcar-push-XXXXXX";
        if (!mkdtemp(tmp))
                return bc_error_set(err, BC_IO, errno, "temporary directory: %m");
        char tree[sizeof(tmp) + 8];
        snprintf(tree, sizeof(tree), "%s/tree", tmp);
        struct stat st;
        bool tarball = stat(dir, &st) == 0 && S_ISREG(st.st_mode);
        r = tarball ? unpack_tarball(dir, tree, strcmp(kind, "image") == 0, err) : 0;
        struct storage_push_result res;
        if (r >= 0)
                r = storage_push_dir(s3, tarball ? tree : dir, tmp, NULL, NULL, NULL, &res, err);
        if (tarball)
                sandbox_workspace_remove_tree(tree);
        rmdir(tmp);
        if (r < 0) {
                store_version_done(&head);
                return r;
        }
        char size[32], count[32];
        snprintf(size, sizeof(size), "%llu", (unsigned long long)res.pack.size);
        snprintf(count, sizeof(count), "%llu", (unsigned long long)res.pack.file_count);
        const char *p[] = {
                name, res.pack.sha256, res.key, size, count, found ? head.sha256 : NULL
        };
        _cleanup_pgresult_ PGresult *added = db_exec(
                conn, "select boxcar.add_storage_version($1, $2, $3, $4::bigint, $5::bigint, $6)",
                6, p, err);
        r = added ? 0 : -EPROTO;
        if (added && json)
                r = print_pushed(conn, name, res.pack.sha256, res.uploaded, err);
        else if (added)
                printf("%s\n", res.pack.sha256);
        if (r >= 0)
                fprintf(stderr, "%s: %s files, %s bytes, %s\n", name, count, size,
                        res.uploaded ? "uploaded" : "already stored (nothing uploaded)");
        storage_push_result_done(&res);
        store_version_done(&head);
        return r;
}

static int resolve_url(PGconn *conn, char *ref, long ttl, char **ret_url, char ret_sha[65],
                       struct bc_error *err)
{
        const char *version;
        split_ref(ref, &version);
        struct store st = { .url_ttl_s = ttl };
        int r = open_s3(&st.s3, err);
        if (r < 0)
                return r;
        struct store_version v = { 0 };
        int found = store_resolve(conn, ref, version, &v, err);
        if (found == 0)
                r = bc_error_set(err, BC_NOT_FOUND, ENOENT, "storage %s has no version %s", ref,
                                 version);
        else if (found > 0)
                r = store_presign_get(&st, &v, ttl, ret_url, err);
        else
                r = found;
        memcpy(ret_sha, v.sha256, 65);
        store_version_done(&v);
        storage_config_free(st.s3);
        return r;
}

static int pull(PGconn *conn, char *ref, const char *dir, bool json, struct bc_error *err)
{
        _cleanup_free_ char *url = NULL;
        char sha[65] = "";
        int r = resolve_url(conn, ref, 900, &url, sha, err);
        if (r < 0)
                return r;
        _cleanup_(storage_config_freep) struct storage_config *s3 = NULL;
        r = open_s3(&s3, err);
        struct storage_fetch_result fr;
        if (r >= 0)
                r = storage_fetch_extract(s3, url, sha, dir, NULL, NULL, &fr, err);
        if (r >= 0)
                fprintf(stderr, "%s: %s into %s\n", ref, sha, dir);
        if (r >= 0 && json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", ref);
                cJSON_AddStringToObject(o, "sha256", sha);
                cJSON_AddStringToObject(o, "dir", dir);
                cli_print_json(o);
        }
        return r;
}

static int list(PGconn *conn, const char *name, const char *kind, struct bc_error *err)
{
        const char *p[] = { name, kind };
        _cleanup_pgresult_ PGresult *res =
                name ? db_exec(conn, "select boxcar.storage_versions_json($1, $2)", 2, p, err)
                     : db_exec(conn, "select boxcar.storages_json($1)", 1, &p[1], err);
        if (!res)
                return -EPROTO;
        for (int i = 0; i < PQntuples(res); i++)
                printf("%s\n", PQgetvalue(res, i, 0));
        return 0;
}

struct storage_args {
        enum { PUSH, PULL, LS, URL } verb;
        const char *kind; /* push (default artifact), ls (NULL: every kind) */
        char *ref;        /* NAME or NAME[@VERSION] */
        const char *dir;  /* push, pull */
        double ttl_s;     /* url */
        bool json;
};

/* The arguments' shape and values, checked before connecting: a usage
 * error needs no database. */
static int parse_args(int argc, char **argv, struct storage_args *a, struct bc_error *err)
{
        const char *verb = argv[1];
        bool is_ls = strcmp(verb, "ls") == 0;
        *a = (struct storage_args){ .kind = is_ls ? NULL : "artifact", .ttl_s = 3600 };
        int i = 2;
        if ((is_ls || strcmp(verb, "push") == 0) && argc >= 3 && strcmp(argv[2], "--kind") == 0) {
                if (argc < 4 ||
                    (strcmp(argv[3], "volume") != 0 && strcmp(argv[3], "artifact") != 0 &&
                     strcmp(argv[3], "image") != 0))
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--kind: want volume, artifact or image");
                a->kind = argv[3];
                i = 4;
        } else if (strcmp(verb, "url") == 0 && argc >= 3 && strcmp(argv[2], "--expires") == 0) {
                if (argc < 4 || config_parse_duration(argv[3], false, &a->ttl_s) < 0 ||
                    a->ttl_s > 604800)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--expires: '%s' is not a duration up to 7d",
                                            argc < 4 ? "" : argv[3]);
                i = 4;
        }
        int rest = argc - i;
        /* No storage name or directory starts with '-': an option this verb
         * does not take, rather than a NAME of "--kind". */
        for (int k = i; k < argc; k++)
                if (argv[k][0] == '-' && argv[k][1])
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "unknown option '%s' (see boxcar help storage)",
                                            argv[k]);
        if (strcmp(verb, "push") == 0 && rest == 2)
                a->verb = PUSH;
        else if (strcmp(verb, "pull") == 0 && rest == 2)
                a->verb = PULL;
        else if (strcmp(verb, "ls") == 0 && rest <= 1)
                a->verb = LS;
        else if (strcmp(verb, "url") == 0 && rest == 1)
                a->verb = URL;
        else
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "bad arguments (see boxcar help storage)");
        a->ref = rest > 0 ? argv[i] : NULL;
        a->dir = rest > 1 ? argv[i + 1] : NULL;
        return 0;
}

static int dispatch(PGconn *conn, struct storage_args *a, struct bc_error *err)
{
        switch (a->verb) {
        case PUSH:
                return push(conn, a->ref, a->dir, a->kind, a->json, err);
        case PULL:
                return pull(conn, a->ref, a->dir, a->json, err);
        case LS:
                return list(conn, a->ref, a->kind, err);
        case URL: {
                _cleanup_free_ char *url = NULL;
                char sha[65];
                int r = resolve_url(conn, a->ref, (long)a->ttl_s, &url, sha, err);
                if (r >= 0 && a->json) {
                        cJSON *o = cJSON_CreateObject();
                        cJSON_AddStringToObject(o, "name", a->ref);
                        cJSON_AddStringToObject(o, "sha256", sha);
                        cJSON_AddStringToObject(o, "url", url);
                        cJSON_AddNumberToObject(o, "expires_in_s", (long)a->ttl_s);
                        cli_print_json(o);
                } else if (r >= 0) {
                        printf("%s\n", url);
                }
                return r;
        }
        }
        return -EINVAL;
}

int cmd_storage(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, storage_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = cli_take_json(&argc, argv);
        if (argc < 2) {
                fputs(storage_usage, stderr);
                return 2;
        }
        char what[32];
        snprintf(what, sizeof(what), "storage %s", argv[1]);
        struct bc_error err = BC_ERROR_INIT;
        struct storage_args a;
        if (parse_args(argc, argv, &a, &err) < 0)
                return fail(what, &err);
        a.json = json;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn || dispatch(conn, &a, &err) < 0)
                return fail(what, &err);
        return 0;
}
