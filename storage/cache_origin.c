/* A url volume from the cache only with proof that the job may fetch its
 * URL (storage.h, storage_cache_acquire_url).  The cache serves content by
 * SHA-256, which is no secret: a job that knows the sha of a volume
 * another job fetched with its own (presigned, authenticated) URL must not
 * get that content by naming any URL beside the sha.  So an entry is
 * served to a url volume only when
 *   - it was fetched before from the same origin: scheme, host and path of
 *     the URL (its query, a presigned URL's credential, left out) with that
 *     sha, recorded under origins/ in the cache directory; and
 *   - a cheap request to the job's own URL, credentials and all, succeeds
 *     now (a GET of its first byte: presigned S3 GETs allow no HEAD); and
 *   - when the origin answers with an ETag, it is the one recorded at
 *     fetch time (the object behind the path is still that content).
 * Otherwise the URL is downloaded for real and verified against the sha,
 * as on a miss: a URL the origin now refuses fails the job even though
 * the content is cached.
 *
 * origins/<sha256 of "origin\nsha">: the ETag the origin gave (empty when
 * it gave none), written to a temporary name and renamed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/rand.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "common/netguard.h"
#include "storage/cache-internal.h"
#include "storage/http.h"

/* An ETag longer than this is not recorded (nor matched: the proof fails
 * and the URL is fetched). */
#define ETAG_MAX 256
/* A server that ignores Range sends the whole body: read this much of it
 * at most; the status is known by then. */
#define PROBE_BODY_MAX 65536

struct probe {
        char etag[ETAG_MAX + 1];
        bool etag_too_long;
        size_t body;
};

static size_t probe_header_cb(char *buf, size_t size, size_t n, void *ud)
{
        struct probe *p = ud;
        size_t len = size * n;
        /* Each response of a redirect chain starts over: the last one's
         * ETag counts. */
        if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
                p->etag[0] = '\0';
                p->etag_too_long = false;
        }
        if (len > 5 && strncasecmp(buf, "etag:", 5) == 0) {
                const char *v = buf + 5;
                size_t vn = len - 5;
                while (vn && (*v == ' ' || *v == '\t'))
                        v++, vn--;
                while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
                        vn--;
                if (vn > ETAG_MAX) {
                        p->etag_too_long = true;
                } else {
                        memcpy(p->etag, v, vn);
                        p->etag[vn] = '\0';
                }
        }
        return len;
}

static size_t probe_body_cb(char *buf, size_t size, size_t n, void *ud)
{
        (void)buf;
        struct probe *p = ud;
        p->body += size * n;
        return p->body > PROBE_BODY_MAX ? 0 : size * n;
}

/* GETs the first byte of url through guard: 0 and ret->etag when the
 * origin answers 2xx, negative otherwise (the reason does not matter: the
 * caller then fetches for real, which says it). */
static int probe_url(const struct storage_cache *c, const char *url, const struct netguard *guard,
                     struct probe *ret)
{
        *ret = (struct probe){ 0 };
        struct bc_error err = BC_ERROR_INIT;
        if (http_global_init(&err) < 0) {
                bc_error_clear(&err);
                return -EIO;
        }
        _cleanup_(curl_easy_cleanupp) CURL *e = curl_easy_init();
        if (!e)
                return -ENOMEM;
        struct http_policy pol;
        http_policy_of(c->cfg, &pol);
        char errbuf[CURL_ERROR_SIZE];
        http_setup(e, &pol, errbuf);
        struct netguard_curl ng = { .guard = guard };
        if (guard)
                netguard_curl_attach(e, &ng);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_RANGE, "0-0");
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, probe_header_cb);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, ret);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, probe_body_cb);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, ret);
        curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
        CURLcode cc = curl_easy_perform(e);
        long status = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        if (ng.refused || status < 200 || status >= 300)
                return -EACCES;
        /* Cut short by probe_body_cb (a whole body despite Range): the
         * status was 2xx, which is the proof. */
        if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && ret->body > PROBE_BODY_MAX))
                return -EIO;
        return ret->etag_too_long ? -E2BIG : 0;
}

/* The record's file name: origin (redacted URL) and sha, hashed. */
static void record_name(const char *url, const char *sha, char ret[65])
{
        _cleanup_free_ char *origin = http_redact(url);
        _cleanup_free_ char *key = NULL;
        if (asprintf(&key, "%s\n%s", origin, sha) < 0) {
                ret[0] = '\0';
                return;
        }
        bc_sha256_hex(key, strlen(key), ret);
}

static int origins_dir(const struct storage_cache *c)
{
        if (mkdirat(c->dirfd, "origins", 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(c->dirfd, "origins", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* 1 and *etag when the origin of url was recorded with sha, 0 when not. */
static int record_read(const struct storage_cache *c, const char *name, char etag[ETAG_MAX + 1])
{
        _cleanup_fd_ int dir = origins_dir(c);
        if (dir < 0)
                return 0;
        _cleanup_fd_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, etag, ETAG_MAX);
        if (n < 0)
                return 0;
        etag[n] = '\0';
        return 1;
}

/* Best effort: without a record the next job fetches again. */
static void record_write(const struct storage_cache *c, const char *name, const char *etag)
{
        _cleanup_fd_ int dir = origins_dir(c);
        if (dir < 0)
                return;
        unsigned char rnd[6];
        RAND_bytes(rnd, sizeof(rnd));
        char tmp[96];
        snprintf(tmp, sizeof(tmp), ".%s.%02x%02x%02x%02x%02x%02x", name, rnd[0], rnd[1], rnd[2],
                 rnd[3], rnd[4], rnd[5]);
        _cleanup_fd_ int fd = openat(dir, tmp,
                                     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return;
        size_t n = strlen(etag);
        if (write(fd, etag, n) != (ssize_t)n || renameat(dir, tmp, dir, name) < 0)
                (void)unlinkat(dir, tmp, 0);
}

int storage_cache_acquire_url(struct storage_cache *c, const char *url, const char *sha256,
                              const struct netguard *guard, struct storage_cache_entry **ret,
                              struct bc_error *err)
{
        if (!url)
                return bc_error_set(err, BC_USAGE, EINVAL, "cache: a url volume needs its URL");
        /* Without a sha nothing is served by sha: always downloaded. */
        if (!sha256)
                return storage_cache_acquire(c, url, NULL, guard, ret, err);
        if (!storage_sha256_valid(sha256))
                return bc_error_set(err, BC_USAGE, EINVAL, "cache: malformed sha256");
        char name[65];
        record_name(url, sha256, name);
        char recorded[ETAG_MAX + 1];
        struct probe p;
        if (name[0] && record_read(c, name, recorded) == 1 && probe_url(c, url, guard, &p) == 0 &&
            (!p.etag[0] || strcmp(p.etag, recorded) == 0))
                return storage_cache_acquire(c, url, sha256, guard, ret, err);
        int r = cache_download_anyway(c, url, sha256, guard, ret, err);
        /* The origin's ETag now, for the next job's proof. */
        if (r >= 0 && name[0] && probe_url(c, url, guard, &p) == 0)
                record_write(c, name, p.etag);
        return r;
}
