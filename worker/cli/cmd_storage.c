/* `boxcar storage push|pull|ls|url`: named storages from the command line
 * (rm, retain and gc: cmd_storage_admin.c). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/rmtree.h"
#include "sandbox/sandbox.h"
#include "storage/storage.h"
#include "worker/cli/cli.h"
#include "worker/cli/cmd_storage_admin.h"
#include "worker/config/config.h"
#include "worker/db/db.h"
#include "worker/job/store.h"

const char storage_usage[] =
        "usage: boxcar storage push [--kind volume|artifact|image] [--scope SCOPE] [--json]\n"
        "                           NAME DIR|TARBALL\n"
        "       boxcar storage pull [--json] NAME[@VERSION] DIR\n"
        "       boxcar storage ls [--kind volume|artifact|image] [--scope SCOPE] [--json] [NAME]\n"
        "       boxcar storage url [--expires DUR] [--json] NAME[@VERSION]\n"
        "       boxcar storage rm NAME[@VERSION]\n"
        "       boxcar storage retain NAME [--keep-last N] [--keep-within DUR] | --keep-all\n"
        "       boxcar storage gc [--grace DUR] [--dry-run] [--json]\n"
        "       boxcar storage share NAME SCOPE | unshare NAME SCOPE | public NAME on|off\n"
        "\n"
        "  push    upload DIR as a new version of NAME (prints its sha256) and move the\n"
        "          head there; NAME is created when new, as --kind (default: artifact).\n"
        "          A TARBALL (.tar or .tar.gz, e.g. `docker export` output) is unpacked\n"
        "          with the worker's safety rules and packed again, so the same tree is\n"
        "          the same version whichever way it comes.  An image is a root\n"
        "          filesystem jobs run on (\"image\" in the job spec); its setuid bits\n"
        "          and device nodes are dropped.  A new NAME belongs to --scope (default:\n"
        "          \"default\"): only jobs of queues of that scope (\"acme\" for \"acme/q\")\n"
        "          may use it; a NAME another scope owns is refused\n"
        "  pull    unpack a version (default @latest) into DIR, which must not exist or\n"
        "          be empty\n"
        "  ls      all storages (of --kind; with --scope, those that scope may read),\n"
        "          with their owner scope, \"public\" and \"shared_with\", or the\n"
        "          versions of NAME, one JSON object per line (\"list\" is the same)\n"
        "  url     a presigned GET URL of a version's whole tree as one .tar.gz, valid\n"
        "          for --expires (default: 1h, at most 7d; durations: 250ms, 30s, 5m,\n"
        "          2h, 1d or plain seconds); a version stored as several layers gets\n"
        "          its tarball built (and kept) first\n"
        "  rm      remove a version (not the head), or NAME with all its versions;\n"
        "          the collector deletes what they alone stored\n"
        "  retain  NAME's retention: keep its last N versions and those younger than\n"
        "          DUR (the head and branch tips always stay), or everything (the\n"
        "          default); applied by the collector\n"
        "  gc      run the collector: apply retention, then delete the S3 objects\n"
        "          nothing references that were last used more than --grace ago\n"
        "          (default 1h); --dry-run only says what it would delete\n"
        "  share   let jobs of SCOPE read NAME (volume, image, session fork source),\n"
        "          never write it; unshare stops that for jobs not yet started\n"
        "  public  on: every scope may read NAME, as shared; off: only its owner and\n"
        "          the scopes it is shared with\n"
        "\n"
        "  --json                 print one JSON object: push, the new version as ls\n"
        "                         NAME shows it, with \"name\", \"kind\" and \"uploaded\";\n"
        "                         pull {\"name\", \"sha256\", \"dir\"}; url {\"name\",\n"
        "                         \"sha256\", \"url\", \"expires_in_s\"}; gc, its report;\n"
        "                         ls: accepted, its lines are JSON anyway\n"
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

static PGresult *cli_db_exec(void *ctx, const char *sql, int n, const char *const *p,
                             struct bc_error *err)
{
        return db_exec(ctx, sql, n, p, err);
}

/* The version is the tree's (a whole layer, its manifest), whatever came
 * before: the same directory pushed twice, or pushed and made by a job,
 * is the same version. */
static int push(PGconn *conn, const char *name, const char *dir, const char *kind,
                const char *scope, bool json, struct bc_error *err)
{
        struct store st = { 0 };
        int r = open_s3(&st.s3, err);
        if (r < 0)
                return r;
        const char *cp[] = { name, kind, scope };
        _cleanup_pgresult_ PGresult *created = db_exec(
                conn, "select boxcar.create_storage($1, $2, $3)", 3, cp, err);
        if (!created) {
                storage_config_free(st.s3);
                return -EPROTO;
        }
        struct store_version head = { 0 };
        int found = store_resolve(conn, name, "latest", &head, err);
        if (found < 0) {
                storage_config_free(st.s3);
                return found;
        }
        char tmp[] = "/tmp/boxcar-push-XXXXXX";
        if (!mkdtemp(tmp)) {
                storage_config_free(st.s3);
                return bc_error_set(err, BC_IO, errno, "temporary directory: %m");
        }
        char tree[sizeof(tmp) + 8];
        snprintf(tree, sizeof(tree), "%s/tree", tmp);
        struct stat sb;
        bool tarball = stat(dir, &sb) == 0 && S_ISREG(sb.st_mode);
        r = tarball ? unpack_tarball(dir, tree, strcmp(kind, "image") == 0, err) : 0;
        struct store_saved saved = { 0 };
        struct store_save_args args = { .dir = tarball ? tree : dir, .tmp_dir = tmp };
        struct store_db db = { cli_db_exec, conn };
        if (r >= 0)
                r = store_save_version(&st, &db, &args, &saved, err);
        if (tarball)
                sandbox_workspace_remove_tree(tree);
        rmdir(tmp);
        storage_config_free(st.s3);
        if (r >= 0)
                r = store_record_version(&db, name, scope, &saved.v, found ? head.sha256 : NULL,
                                         err);
        if (r < 0) {
                store_saved_done(&saved);
                store_version_done(&head);
                return r;
        }
        if (json)
                r = print_pushed(conn, name, saved.v.sha256, saved.uploaded, err);
        else
                printf("%s\n", saved.v.sha256);
        if (r >= 0)
                fprintf(stderr, "%s: %llu files, %llu bytes, %s\n", name,
                        (unsigned long long)saved.v.file_count, (unsigned long long)saved.v.size,
                        saved.uploaded ? "uploaded" : "already stored (nothing uploaded)");
        store_saved_done(&saved);
        store_version_done(&head);
        return r;
}

/* A version's whole-tree tarball, built when it has none (a version of
 * several layers): its tree restored, packed and uploaded, and recorded
 * (boxcar.set_storage_tarball) for the next time. */
static int build_tarball(PGconn *conn, const struct store *st, const char *name,
                         struct store_version *v, struct bc_error *err)
{
        char tmp[] = "/tmp/boxcar-tarball-XXXXXX";
        if (!mkdtemp(tmp))
                return bc_error_set(err, BC_IO, errno, "temporary directory: %m");
        char tree[sizeof(tmp) + 8];
        snprintf(tree, sizeof(tree), "%s/tree", tmp);
        int r = store_extract_version(st, v, tree, NULL, NULL, err);
        _cleanup_fd_ int fd = r < 0 ? -1 : open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (r >= 0 && fd < 0)
                r = bc_error_set(err, BC_IO, errno, "temporary file in %s: %m", tmp);
        struct storage_pack_result pack;
        if (r >= 0)
                r = storage_pack_dir(tree, fd, NULL, &pack, err);
        (void)fs_rm_rf(tmp);
        _cleanup_free_ char *key = NULL;
        if (r >= 0)
                r = storage_object_key(st->s3, pack.sha256, &key, err);
        const char *kind = "layer", *sha = pack.sha256;
        struct store_db db = { cli_db_exec, conn };
        if (r >= 0)
                r = store_register_objects(&db, 1, (const char *const *)&key, &kind, &sha,
                                           &pack.size, err);
        bool uploaded;
        if (r >= 0)
                r = storage_upload(st->s3, fd, pack.sha256, pack.size, &uploaded, err);
        char size[32];
        snprintf(size, sizeof(size), "%llu", (unsigned long long)pack.size);
        const char *p[] = { name, v->sha256, key, size };
        _cleanup_pgresult_ PGresult *set =
                r < 0 ? NULL
                      : db_exec(conn, "select boxcar.set_storage_tarball($1, $2, $3, $4::bigint)",
                                4, p, err);
        if (r >= 0 && !set)
                r = -EPROTO;
        if (r >= 0) {
                free(v->s3_key);
                v->s3_key = key;
                key = NULL;
        }
        return r < 0 ? bc_error_prefix(err, "whole-tree tarball of %s", v->sha256) : 0;
}

static int resolve(PGconn *conn, char *ref, struct store *st, struct store_version *v,
                   struct bc_error *err)
{
        const char *version;
        split_ref(ref, &version);
        int r = open_s3(&st->s3, err);
        if (r < 0)
                return r;
        int found = store_resolve(conn, ref, version, v, err);
        if (found == 0)
                return bc_error_set(err, BC_NOT_FOUND, ENOENT, "storage %s has no version %s", ref,
                                    version);
        return found < 0 ? found : 0;
}

static int resolve_url(PGconn *conn, char *ref, long ttl, char **ret_url, char ret_sha[65],
                       struct bc_error *err)
{
        struct store st = { .url_ttl_s = ttl };
        struct store_version v = { 0 };
        int r = resolve(conn, ref, &st, &v, err);
        if (r >= 0 && !v.s3_key)
                r = build_tarball(conn, &st, ref, &v, err);
        if (r >= 0)
                r = store_presign_get(&st, &v, ttl, ret_url, err);
        memcpy(ret_sha, v.sha256, 65);
        store_version_done(&v);
        storage_config_free(st.s3);
        return r;
}

static int pull(PGconn *conn, char *ref, const char *dir, bool json, struct bc_error *err)
{
        struct store st = { 0 };
        struct store_version v = { 0 };
        int r = resolve(conn, ref, &st, &v, err);
        if (r >= 0)
                r = store_extract_version(&st, &v, dir, NULL, NULL, err);
        if (r >= 0)
                fprintf(stderr, "%s: %s into %s\n", ref, v.sha256, dir);
        if (r >= 0 && json) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", ref);
                cJSON_AddStringToObject(o, "sha256", v.sha256);
                cJSON_AddStringToObject(o, "dir", dir);
                cli_print_json(o);
        }
        store_version_done(&v);
        storage_config_free(st.s3);
        return r;
}

static int list(PGconn *conn, const char *name, const char *kind, const char *scope,
                struct bc_error *err)
{
        const char *p[] = { name, kind, scope };
        _cleanup_pgresult_ PGresult *res =
                name ? db_exec(conn,
                               "select boxcar.storage_versions_json($1, $2)"
                               " where $3::text is null or boxcar.storage_readable($1, $3)",
                               3, p, err)
                     : db_exec(conn, "select boxcar.storages_json($1, $2)", 2, &p[1], err);
        if (!res)
                return -EPROTO;
        for (int i = 0; i < PQntuples(res); i++)
                printf("%s\n", PQgetvalue(res, i, 0));
        return 0;
}

struct storage_args {
        enum { PUSH, PULL, LS, URL } verb;
        const char *kind;  /* push (default artifact), ls (NULL: every kind) */
        const char *scope; /* push (default "default"), ls (NULL: every storage) */
        char *ref;         /* NAME or NAME[@VERSION] */
        const char *dir;   /* push, pull */
        double ttl_s;      /* url */
        bool json;
};

/* The arguments' shape and values, checked before connecting: a usage
 * error needs no database. */
static int parse_args(int argc, char **argv, struct storage_args *a, struct bc_error *err)
{
        const char *verb = strcmp(argv[1], "list") == 0 ? "ls" : argv[1];
        bool is_ls = strcmp(verb, "ls") == 0;
        *a = (struct storage_args){ .kind = is_ls ? NULL : "artifact",
                                    .scope = is_ls ? NULL : "default",
                                    .ttl_s = 3600 };
        int i = 2;
        while ((is_ls || strcmp(verb, "push") == 0) && i < argc &&
               (strcmp(argv[i], "--kind") == 0 || strcmp(argv[i], "--scope") == 0)) {
                const char *val = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(argv[i], "--scope") == 0) {
                        /* The scope of a queue: boxcar.queue_scope's names. */
                        if (!val || !*val || strlen(val) > 128 ||
                            strspn(val, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_.-") != strlen(val))
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "--scope: want 1-128 letters, digits, "
                                                    "\"_\", \".\" or \"-\"");
                        a->scope = val;
                } else {
                        if (!val || (strcmp(val, "volume") != 0 && strcmp(val, "artifact") != 0 &&
                                     strcmp(val, "image") != 0))
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "--kind: want volume, artifact or image");
                        a->kind = val;
                }
                i += 2;
        }
        if (strcmp(verb, "url") == 0 && argc >= 3 && strcmp(argv[2], "--expires") == 0) {
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
                                            "unknown option '%.*s' (see boxcar help storage)",
                                            (int)strcspn(argv[k], "="), argv[k]);
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
                return push(conn, a->ref, a->dir, a->kind, a->scope, a->json, err);
        case PULL:
                return pull(conn, a->ref, a->dir, a->json, err);
        case LS:
                return list(conn, a->ref, a->kind, a->scope, err);
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
        if (storage_admin_verb(argv[1])) {
                struct storage_admin_args aa;
                if (storage_admin_parse(argc, argv, &aa, &err) < 0)
                        return fail(what, &err);
                _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
                if (!conn || storage_admin_run(conn, &aa, json, &err) < 0)
                        return fail(what, &err);
                return 0;
        }
        struct storage_args a;
        if (parse_args(argc, argv, &a, &err) < 0)
                return fail(what, &err);
        a.json = json;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        if (!conn || dispatch(conn, &a, &err) < 0)
                return fail(what, &err);
        return 0;
}
