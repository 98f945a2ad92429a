/* Test and benchmark driver for libstorage: one subcommand per library
 * call, results on stdout as "key=value" words, failures as
 * "ERROR <CODE>: <message>" with exit status 1.  Built by
 * tests/storage/run.sh and bench/storage.sh.
 *
 *   pack DIR OUT                   -> sha256= size= files= skipped=
 *   extract FILE DEST [SHA|-]      -> sha256= size= bytes= entries=
 *   fetch URL DEST [SHA|-]         -> same
 *   push DIR TMPDIR                -> sha256= size= files= uploaded= key=
 *   presign GET|PUT|HEAD KEY EXPIRES [NOW]      -> the URL
 *   presign-raw REGION ENDPOINT|- BUCKET KEYHEX METHOD EXPIRES TOKEN|- NOW
 *   creds N [SLEEP_MS]             -> N lines "source= key_id=" (N gets, a pause
 *                                     between them)
 *   creds-threads T N              -> T threads x N gets: "gets= failures="
 *   check                          -> "ok", or the error and "why=<reason>"
 *   cache DIR MAXBYTES OP...       OP: get URL|- SHA|-  (acquire+release),
 *                                  owner UID GID (entries keep modes, owned)
 *                                      hold URL|- SHA|- (acquire, keep)
 *                                      size | time-hit SHA N
 *                                      reclaim BYTES (-> "reclaimed=N")
 *                                      min-free BYTES (downloads keep it free)
 *                                      layers N URL|- SHA ... (N pairs, bottom
 *                                      first: acquire_layers+release ->
 *                                      "acquired sha256= downloaded=
 *                                      downloaded_bytes= bytes= entries= path=")
 *   apply FILE DEST [SHA|-]        -> as extract, the file a layer onto DEST
 *
 * Limits come from BOXCAR_TEST_MAX_BYTES, _MAX_ENTRIES, _MAX_RATIO,
 * _RATIO_FLOOR, _MAX_DOWNLOAD, and BOXCAR_TEST_IMAGE=1 for an image's
 * rules (storage_limits.image); retries from BOXCAR_TEST_RETRIES and
 * BOXCAR_TEST_RETRY_MS. */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "storage/s3.h"
#include "storage/storage.h"

static int fail(struct bc_error *err)
{
        printf("ERROR %s: %s\n", bc_code_name(err->code), bc_error_message(err));
        bc_error_clear(err);
        return 1;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
        const char *v = getenv(name);
        return v && *v ? strtoull(v, NULL, 10) : dflt;
}

static const struct storage_limits *limits(void)
{
        static struct storage_limits l;
        storage_limits_default(&l);
        l.max_bytes = env_u64("BOXCAR_TEST_MAX_BYTES", l.max_bytes);
        l.max_entries = env_u64("BOXCAR_TEST_MAX_ENTRIES", l.max_entries);
        l.max_ratio = (uint32_t)env_u64("BOXCAR_TEST_MAX_RATIO", l.max_ratio);
        l.ratio_floor = env_u64("BOXCAR_TEST_RATIO_FLOOR", l.ratio_floor);
        l.image = env_u64("BOXCAR_TEST_IMAGE", 0) != 0;
        l.max_download = env_u64("BOXCAR_TEST_MAX_DOWNLOAD", l.max_download);
        return &l;
}

/* The S3 config when the environment has one (needed for push/presign,
 * optional for fetch, where it only carries the retry policy). */
static struct storage_config *config(bool required, struct bc_error *err)
{
        struct storage_config *cfg = NULL;
        if (storage_config_from_env(&cfg, err) < 0) {
                if (required)
                        return NULL;
                bc_error_clear(err);
                cfg = calloc(1, sizeof(*cfg));
                cfg->retries = 4;
                cfg->retry_base_ms = 250;
                cfg->retry_max_ms = 8000;
        }
        cfg->retries = (int)env_u64("BOXCAR_TEST_RETRIES", (uint64_t)cfg->retries);
        cfg->retry_base_ms = (int)env_u64("BOXCAR_TEST_RETRY_MS", (uint64_t)cfg->retry_base_ms);
        cfg->connect_timeout_s = (int)env_u64("BOXCAR_TEST_CONNECT_TIMEOUT", 5);
        return cfg;
}

static const char *opt_sha(const char *s)
{
        return !s || strcmp(s, "-") == 0 ? NULL : s;
}

static void print_fetch(const struct storage_fetch_result *r)
{
        printf("sha256=%s size=%llu bytes=%llu entries=%llu\n", r->sha256, (unsigned long long)r->size,
               (unsigned long long)r->bytes, (unsigned long long)r->entries);
}

static int cmd_pack(int argc, char **argv, struct bc_error *err)
{
        if (argc < 2)
                return 2;
        int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "open %s: %m", argv[1]), fail(err);
        struct storage_pack_result r;
        int rc = storage_pack_dir(argv[0], fd, NULL, &r, err);
        close(fd);
        if (rc < 0)
                return fail(err);
        printf("sha256=%s size=%llu files=%llu skipped=%llu\n", r.sha256, (unsigned long long)r.size,
               (unsigned long long)r.file_count, (unsigned long long)r.skipped);
        return 0;
}

static int cmd_extract(int argc, char **argv, bool fetch, bool apply, struct bc_error *err)
{
        if (argc < 2)
                return 2;
        struct storage_fetch_result r;
        int rc;
        if (fetch) {
                struct storage_config *cfg = config(false, err);
                /* STORAGE_TOOL_URL_GUARD set: the URL is treated as coming
                 * from a job spec, with that comma-separated allow list
                 * ("" for none). */
                const char *allow = getenv("STORAGE_TOOL_URL_GUARD");
                static struct netguard guard;
                if (allow && *allow && netguard_allow_list(&guard, allow, err) < 0)
                        return fail(err);
                rc = storage_fetch_extract(cfg, argv[0], opt_sha(argc > 2 ? argv[2] : NULL), argv[1],
                                           limits(), allow ? &guard : NULL, &r, err);
                storage_config_free(cfg);
        } else if (apply) {
                rc = storage_apply_file(argv[0], opt_sha(argc > 2 ? argv[2] : NULL), argv[1], limits(), &r, err);
        } else {
                rc = storage_extract_file(argv[0], opt_sha(argc > 2 ? argv[2] : NULL), argv[1], limits(), &r, err);
        }
        if (rc < 0)
                return fail(err);
        print_fetch(&r);
        return 0;
}

static int cmd_push(int argc, char **argv, struct bc_error *err)
{
        if (argc < 2)
                return 2;
        struct storage_config *cfg = config(true, err);
        if (!cfg)
                return fail(err);
        struct storage_push_result r;
        int rc = storage_push_dir(cfg, argv[0], argv[1], NULL, NULL, NULL, &r, err);
        storage_config_free(cfg);
        if (rc < 0)
                return fail(err);
        printf("sha256=%s size=%llu files=%llu uploaded=%d key=%s\n", r.pack.sha256,
               (unsigned long long)r.pack.size, (unsigned long long)r.pack.file_count, r.uploaded, r.key);
        storage_push_result_done(&r);
        return 0;
}

static enum storage_method method_of(const char *m)
{
        return strcmp(m, "PUT") == 0 ? STORAGE_PUT : strcmp(m, "HEAD") == 0 ? STORAGE_HEAD : STORAGE_GET;
}

static int cmd_presign(int argc, char **argv, struct bc_error *err)
{
        if (argc < 3)
                return 2;
        struct storage_config *cfg = config(true, err);
        if (!cfg)
                return fail(err);
        char *url = NULL;
        time_t now = argc > 3 ? (time_t)strtoll(argv[3], NULL, 10) : time(NULL);
        int rc = s3_presign_at(cfg, method_of(argv[0]), argv[1], NULL, 0, now, strtol(argv[2], NULL, 10), &url, err);
        storage_config_free(cfg);
        if (rc < 0)
                return fail(err);
        printf("%s\n", url);
        free(url);
        return 0;
}

static char *unhex(const char *h)
{
        size_t n = strlen(h) / 2;
        char *s = calloc(1, n + 1);
        for (size_t i = 0; i < n; i++) {
                unsigned v;
                sscanf(h + 2 * i, "%2x", &v);
                s[i] = (char)v;
        }
        return s;
}

/* A presign from explicit settings, to replay botocore's live vectors. */
static int cmd_presign_raw(int argc, char **argv, struct bc_error *err)
{
        if (argc < 8)
                return 2;
        char *key = unhex(argv[3]);
        struct storage_config cfg = {
                .access_key = (char *)"AKIAIOSFODNN7EXAMPLE",
                .secret_key = (char *)"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                .region = argv[0], .endpoint = strcmp(argv[1], "-") ? argv[1] : NULL,
                .bucket = argv[2], .prefix = (char *)"",
                .session_token = strcmp(argv[6], "-") ? argv[6] : NULL,
        };
        cfg.path_style = cfg.endpoint != NULL;
        char *url = NULL;
        int rc = s3_presign_at(&cfg, method_of(argv[4]), key, NULL, 0, (time_t)strtoll(argv[7], NULL, 10),
                               strtol(argv[5], NULL, 10), &url, err);
        free(key);
        if (rc < 0)
                return fail(err);
        printf("%s\n", url);
        free(url);
        return 0;
}

/* Credentials as the signer gets them; only the key id is printed (it is
 * in every presigned URL anyway), never the secret or the token. */
static int cmd_creds(int argc, char **argv, struct bc_error *err)
{
        if (argc < 1)
                return 2;
        struct storage_config *cfg = config(true, err);
        if (!cfg)
                return fail(err);
        int rc = 0;
        long pause_ms = argc > 1 ? atol(argv[1]) : 0;
        for (int i = 0; i < atoi(argv[0]) && rc == 0; i++) {
                if (i && pause_ms)
                        nanosleep(&(struct timespec){ pause_ms / 1000, (pause_ms % 1000) * 1000000L }, NULL);
                char *id = NULL;
                if (storage_credentials_key_id(cfg, &id, err) < 0) {
                        rc = fail(err);
                        break;
                }
                printf("source=%s key_id=%s\n", storage_credentials_source(cfg), id);
                free(id);
        }
        storage_config_free(cfg);
        return rc;
}

struct creds_thread {
        struct storage_config *cfg;
        int n, failures;
        pthread_t t;
};

static void *creds_thread_main(void *arg)
{
        struct creds_thread *ct = arg;
        for (int i = 0; i < ct->n; i++) {
                char *id = NULL;
                struct bc_error e = BC_ERROR_INIT;
                if (storage_credentials_key_id(ct->cfg, &id, &e) < 0)
                        ct->failures++;
                bc_error_clear(&e);
                free(id);
        }
        return NULL;
}

static int cmd_creds_threads(int argc, char **argv, struct bc_error *err)
{
        if (argc < 2)
                return 2;
        struct storage_config *cfg = config(true, err);
        if (!cfg)
                return fail(err);
        struct creds_thread ct[32];
        int nt = atoi(argv[0]) > 32 ? 32 : atoi(argv[0]);
        for (int i = 0; i < nt; i++) {
                ct[i] = (struct creds_thread){ .cfg = cfg, .n = atoi(argv[1]) };
                pthread_create(&ct[i].t, NULL, creds_thread_main, &ct[i]);
        }
        int failures = 0;
        for (int i = 0; i < nt; i++) {
                pthread_join(ct[i].t, NULL);
                failures += ct[i].failures;
        }
        printf("gets=%d failures=%d\n", nt * atoi(argv[1]), failures);
        storage_config_free(cfg);
        return failures ? 1 : 0;
}

static int cmd_check(struct bc_error *err)
{
        struct storage_config *cfg = config(true, err);
        if (!cfg)
                return fail(err);
        char why[160];
        int rc = storage_check_bucket(cfg, why, err);
        storage_config_free(cfg);
        if (rc < 0) {
                printf("why=%s\n", why);
                return fail(err);
        }
        printf("ok\n");
        return 0;
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_cache(int argc, char **argv, struct bc_error *err)
{
        if (argc < 2)
                return 2;
        struct storage_config *cfg = config(false, err);
        struct storage_cache *c = NULL;
        if (storage_cache_new(argv[0], strtoull(argv[1], NULL, 10), cfg, limits(), &c, err) < 0)
                return fail(err);
        struct storage_cache_entry *held[64];
        size_t nheld = 0;
        int rc = 0;
        for (int i = 2; i < argc && rc == 0; i++) {
                if (strcmp(argv[i], "owner") == 0 && i + 2 < argc) {
                        if (storage_cache_set_owner(c, (uid_t)strtoul(argv[i + 1], NULL, 10),
                                                    (gid_t)strtoul(argv[i + 2], NULL, 10), err) < 0)
                                rc = fail(err);
                        i += 2;
                } else if (strcmp(argv[i], "min-free") == 0 && i + 1 < argc) {
                        storage_cache_set_min_free(c, strtoull(argv[i + 1], NULL, 10));
                        i += 1;
                } else if (strcmp(argv[i], "reclaim") == 0 && i + 1 < argc) {
                        uint64_t gone = storage_cache_reclaim(c, strtoull(argv[i + 1], NULL, 10));
                        printf("reclaimed=%llu\n", (unsigned long long)gone);
                        i += 1;
                } else if (strcmp(argv[i], "size") == 0) {
                        printf("cache_size=%llu\n", (unsigned long long)storage_cache_size(c));
                } else if (strcmp(argv[i], "time-hit") == 0 && i + 2 < argc) {
                        /* Average acquire+release of a cached entry. */
                        int n = atoi(argv[i + 2]);
                        double t0 = now_s();
                        for (int k = 0; k < n && rc == 0; k++) {
                                struct storage_cache_entry *e;
                                if (storage_cache_acquire(c, NULL, argv[i + 1], NULL, &e, err) < 0)
                                        rc = fail(err);
                                else
                                        storage_cache_release(c, e);
                        }
                        printf("hit_us=%.1f\n", (now_s() - t0) / n * 1e6);
                        i += 2;
                } else if ((strcmp(argv[i], "get") == 0 || strcmp(argv[i], "hold") == 0) && i + 2 < argc) {
                        struct storage_cache_entry *e;
                        const char *url = strcmp(argv[i + 1], "-") ? argv[i + 1] : NULL;
                        double t0 = now_s();
                        if (storage_cache_acquire(c, url, opt_sha(argv[i + 2]), NULL, &e, err) < 0) {
                                rc = fail(err);
                                break;
                        }
                        printf("acquired sha256=%s downloaded=%d us=%.0f path=%s\n", storage_cache_entry_sha256(e),
                               storage_cache_entry_downloaded(e), (now_s() - t0) * 1e6, storage_cache_entry_path(e));
                        if (argv[i][0] == 'h' && nheld < 64)
                                held[nheld++] = e;
                        else
                                storage_cache_release(c, e);
                        i += 2;
                } else if (strcmp(argv[i], "layers") == 0 && i + 1 < argc) {
                        size_t n = strtoul(argv[i + 1], NULL, 10);
                        if (n > 64 || i + 1 + 2 * (int)n >= argc) {
                                rc = 2;
                                break;
                        }
                        const char *urls[64], *shas[64];
                        for (size_t k = 0; k < n; k++) {
                                urls[k] = strcmp(argv[i + 2 + 2 * k], "-") ? argv[i + 2 + 2 * k] : NULL;
                                shas[k] = argv[i + 3 + 2 * k];
                        }
                        struct storage_cache_entry *e;
                        if (storage_cache_acquire_layers(c, urls, shas, n, &e, err) < 0) {
                                rc = fail(err);
                                break;
                        }
                        uint64_t bytes = 0, entries = 0;
                        storage_cache_entry_stats(e, &bytes, &entries);
                        printf("acquired sha256=%s downloaded=%d downloaded_bytes=%llu bytes=%llu entries=%llu path=%s\n",
                               storage_cache_entry_sha256(e), storage_cache_entry_downloaded(e),
                               (unsigned long long)storage_cache_entry_downloaded_bytes(e),
                               (unsigned long long)bytes, (unsigned long long)entries, storage_cache_entry_path(e));
                        storage_cache_release(c, e);
                        i += 1 + 2 * (int)n;
                } else {
                        fprintf(stderr, "cache: bad op %s\n", argv[i]);
                        rc = 2;
                }
        }
        for (size_t k = 0; k < nheld; k++)
                storage_cache_release(c, held[k]);
        storage_cache_free(c);
        storage_config_free(cfg);
        return rc;
}

int main(int argc, char **argv)
{
        /* The library must not depend on the locale: let tests vary it. */
        setlocale(LC_ALL, "");
        setvbuf(stdout, NULL, _IOLBF, 0);
        struct bc_error err = BC_ERROR_INIT;
        int rc = 2;
        if (argc >= 2) {
                const char *cmd = argv[1];
                int n = argc - 2;
                char **a = argv + 2;
                if (strcmp(cmd, "pack") == 0)
                        rc = cmd_pack(n, a, &err);
                else if (strcmp(cmd, "extract") == 0)
                        rc = cmd_extract(n, a, false, false, &err);
                else if (strcmp(cmd, "apply") == 0)
                        rc = cmd_extract(n, a, false, true, &err);
                else if (strcmp(cmd, "fetch") == 0)
                        rc = cmd_extract(n, a, true, false, &err);
                else if (strcmp(cmd, "push") == 0)
                        rc = cmd_push(n, a, &err);
                else if (strcmp(cmd, "presign") == 0)
                        rc = cmd_presign(n, a, &err);
                else if (strcmp(cmd, "presign-raw") == 0)
                        rc = cmd_presign_raw(n, a, &err);
                else if (strcmp(cmd, "creds") == 0)
                        rc = cmd_creds(n, a, &err);
                else if (strcmp(cmd, "creds-threads") == 0)
                        rc = cmd_creds_threads(n, a, &err);
                else if (strcmp(cmd, "check") == 0)
                        rc = cmd_check(&err);
                else if (strcmp(cmd, "cache") == 0)
                        rc = cmd_cache(n, a, &err);
        }
        if (rc == 2)
                fprintf(stderr, "usage: see the head of tests/storage/storage-tool.c\n");
        return rc;
}
