/* Content-addressed upload: HEAD, then a conditional PUT streamed from the
 * packed file (or from memory: a tree's manifest), plus the other signed
 * object calls the worker makes itself: a small GET into memory and
 * DELETE.  Requests are header-signed by storage/sigv4.c (see there for
 * why not CURLOPT_AWS_SIGV4), re-signed on every attempt so a retry never
 * carries a stale x-amz-date. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "storage/http.h"
#include "storage/s3.h"
#include "storage/sigv4.h"
#include "storage/storage.h"
#include "storage/upload.h"

#define ERROR_BODY_MAX 4096

/* What a call sends (PUT: from fd, or from mem when it is not NULL) or
 * keeps of the answer (GET: sink). */
struct put_body {
        int fd;
        const char *mem;
        uint64_t size;
        uint64_t off;
        struct dynbuf *sink;
};

static size_t read_cb(char *buf, size_t size, size_t nmemb, void *ud)
{
        struct put_body *b = ud;
        size_t want = size * nmemb;
        if (want > b->size - b->off)
                want = (size_t)(b->size - b->off);
        if (!want)
                return 0;
        if (b->mem) {
                memcpy(buf, b->mem + b->off, want);
                b->off += want;
                return want;
        }
        for (;;) {
                ssize_t n = pread(b->fd, buf, want, (off_t)b->off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) /* a file that shrank is an error, not an early end */
                        return CURL_READFUNC_ABORT;
                b->off += (uint64_t)n;
                return (size_t)n;
        }
}

static int seek_cb(void *ud, curl_off_t offset, int origin)
{
        struct put_body *b = ud;
        if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > b->size)
                return CURL_SEEKFUNC_CANTSEEK;
        b->off = (uint64_t)offset;
        return CURL_SEEKFUNC_OK;
}

/* One attempt; *ret_status is the HTTP status (0 on transport failure). */
static CURLcode s3_attempt(struct s3_call *c, const struct http_policy *p, long *ret_status,
                           char what[static 256], struct bc_error *err)
{
        _cleanup_(curl_slist_free_allp) struct curl_slist *h = NULL;
        if (s3_signed_headers(c, &h, err) < 0)
                return CURLE_ABORTED_BY_CALLBACK;
        CURL *curl = curl_easy_init();
        if (!curl) {
                bc_error_set(err, BC_INTERNAL, ENOMEM, "curl_easy_init failed");
                return CURLE_OUT_OF_MEMORY;
        }
        char errbuf[CURL_ERROR_SIZE];
        struct dynbuf body;
        dynbuf_init(&body, ERROR_BODY_MAX);
        http_setup(curl, p, errbuf);
        /* Our own signed requests go to the configured endpoint only. */
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(curl, CURLOPT_URL, c->target->url);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
        struct dynbuf *sink = c->body ? c->body->sink : NULL;
        if (sink) {
                /* A document worth nothing cut: over its cap the call fails. */
                dynbuf_reset(sink);
                curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, http_body_whole_cb);
                curl_easy_setopt(curl, CURLOPT_WRITEDATA, sink);
        } else {
                curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, http_body_head_cb);
                curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
        }
        if (strcmp(c->method, "HEAD") == 0) {
                curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
        } else if (strcmp(c->method, "DELETE") == 0) {
                curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
        } else if (c->body && !sink) {
                c->body->off = 0;
                curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
                curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->body->size);
                curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_cb);
                curl_easy_setopt(curl, CURLOPT_READDATA, c->body);
                curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, seek_cb);
                curl_easy_setopt(curl, CURLOPT_SEEKDATA, c->body);
        }
        CURLcode cc = curl_easy_perform(curl);
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        curl_off_t length = -1;
        if (curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) != CURLE_OK)
                length = -1;
        c->length = length;
        c->status = cc == CURLE_OK ? status : 0;
        http_describe(cc, status, errbuf, sink ? sink->data : body.data, what);
        curl_easy_cleanup(curl);
        dynbuf_done(&body);
        *ret_status = cc == CURLE_OK ? status : 0;
        return cc;
}

/* Runs a call with retries.  Returns the final HTTP status (>= 200), or a
 * negative errno with `code` (BC_UPLOAD_FAILED, BC_FETCH_FAILED) when
 * every attempt failed. */
static long s3_call_run(struct s3_call *c, enum bc_code code, struct bc_error *err)
{
        struct http_policy p;
        http_policy_of(c->cfg, &p);
        int r = http_global_init(err);
        if (r < 0)
                return r;
        for (int attempt = 0;; attempt++) {
                char what[256];
                long status = 0;
                struct bc_error e = BC_ERROR_INIT;
                CURLcode cc = s3_attempt(c, &p, &status, what, &e);
                if (e.code != BC_OK) {
                        /* Credentials that could not be had fail the upload
                         * (retried with the job), whatever their source. */
                        if (e.code == BC_FETCH_FAILED)
                                e.code = code;
                        bc_error_move(err, &e);
                        return -EIO;
                }
                if (!http_retryable(cc, status))
                        return cc == CURLE_OK ? status
                                              : bc_error_set(err, code, EIO, "%s %s: %s",
                                                             c->method, c->target->url, what);
                if (attempt >= p.retries)
                        return bc_error_set(err, code, EIO,
                                            "%s %s: %s (gave up after %d attempts)", c->method,
                                            c->target->url, what, attempt + 1);
                http_backoff(&p, attempt + 1);
        }
}

int s3_put_object(const struct storage_config *cfg, const char *key, int fd, const void *mem,
                  uint64_t size, const char *payload_sha256, const char *content_type,
                  bool *ret_uploaded, struct bc_error *err)
{
        _cleanup_(s3_target_donep) struct s3_target t = { 0 };
        int r = s3_target_init(cfg, key, &t, err);
        if (r < 0)
                return r;
        /* The URL has no query string: it may appear in messages as is. */
        struct s3_call head = { .cfg = cfg,
                                .method = "HEAD",
                                .target = &t,
                                .payload_sha256 = SIGV4_EMPTY_SHA256 };
        /* A HEAD the store answers with a server error every time is
         * written through: s3rver over a metadata file that a kill cut
         * short fails each HEAD of that key parsing it, and every attempt
         * of the job (the same bytes, the same key) failed alike.  The
         * conditional PUT below stores the bytes or finds them there
         * (412); a store that ignores the condition rewrites them whole,
         * which heals it.  The upload fails only if the PUT fails too. */
        struct bc_error head_err = BC_ERROR_INIT;
        long status = s3_call_run(&head, BC_UPLOAD_FAILED, &head_err);
        if (status < 0 && head.status < 500) {
                bc_error_move(err, &head_err);
                return (int)status;
        }
        bool head_failed = status < 0;
        /* An object of another size under this content address is not
         * these bytes: a store that is not atomic (s3rver, a gateway over a
         * plain filesystem) keeps what a PUT cut short left, and the next
         * job with the same bytes would skip its upload and record a
         * version nobody can fetch.  It is written again, unconditionally.
         * (S3 itself never shows a partial object.) */
        bool broken = status == 200 && head.length >= 0 && (uint64_t)head.length != size;
        if (status == 200 && !broken) {
                *ret_uploaded = false;
                return 0;
        }
        if (status != 404 && !broken && !head_failed)
                return bc_error_set(err, BC_UPLOAD_FAILED, EIO, "HEAD %s: HTTP %ld", t.url,
                                    status);

        /* The payload hash is the bytes' own: S3 rejects the PUT if the
         * file changed since it was hashed.  If-None-Match stays last: it
         * is left off (n_headers below) to overwrite a broken object. */
        const struct sigv4_pair put_headers[] = {
                { "Content-Type", content_type },
                { "If-None-Match", "*" },
        };
        struct put_body body = { .fd = fd, .mem = mem, .size = size };
        struct s3_call put = { .cfg = cfg,
                               .method = "PUT",
                               .target = &t,
                               .payload_sha256 = payload_sha256,
                               .headers = put_headers,
                               .n_headers = ELEMENTSOF(put_headers) - broken,
                               .body = &body };
        status = s3_call_run(&put, BC_UPLOAD_FAILED, err);
        if (status >= 0 && (status < 200 || status >= 300) && status != 412)
                status = bc_error_set(err, BC_UPLOAD_FAILED, EIO, "PUT %s: HTTP %ld", t.url,
                                      status);
        if (status < 0) {
                if (head_failed)
                        bc_error_prefix(err, "%s; then", bc_error_message(&head_err));
                bc_error_clear(&head_err);
                return (int)status;
        }
        bc_error_clear(&head_err);
        /* 412: someone stored the same bytes meanwhile (or they were there
         * behind a HEAD that failed). */
        *ret_uploaded = status != 412;
        return 0;
}

int storage_upload(const struct storage_config *cfg, int fd, const char *sha256, uint64_t size,
                   bool *ret_uploaded, struct bc_error *err)
{
        _cleanup_free_ char *key = NULL;
        int r = storage_object_key(cfg, sha256, &key, err);
        if (r < 0)
                return r;
        return s3_put_object(cfg, key, fd, NULL, size, sha256, "application/gzip", ret_uploaded,
                             err);
}

int s3_get_object(const struct storage_config *cfg, const char *key, size_t max, char **ret_buf,
                  size_t *ret_len, struct bc_error *err)
{
        _cleanup_(s3_target_donep) struct s3_target t = { 0 };
        int r = s3_target_init(cfg, key, &t, err);
        if (r < 0)
                return r;
        _cleanup_(dynbuf_donep) struct dynbuf out;
        dynbuf_init(&out, max);
        struct put_body sink = { .fd = -1, .sink = &out };
        struct s3_call get = { .cfg = cfg,
                               .method = "GET",
                               .target = &t,
                               .payload_sha256 = SIGV4_EMPTY_SHA256,
                               .body = &sink };
        long status = s3_call_run(&get, BC_FETCH_FAILED, err);
        if (status < 0)
                return (int)status;
        if (status == 404)
                return bc_error_set(err, BC_NOT_FOUND, ENOENT, "GET %s: no such object", t.url);
        if (status != 200)
                return bc_error_set(err, BC_FETCH_FAILED, EIO, "GET %s: HTTP %ld", t.url, status);
        size_t len = out.len;
        char *buf = dynbuf_steal(&out);
        if (!buf)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        *ret_buf = buf;
        *ret_len = len;
        return 0;
}

int storage_delete(const struct storage_config *cfg, const char *key, struct bc_error *err)
{
        _cleanup_(s3_target_donep) struct s3_target t = { 0 };
        int r = s3_target_init(cfg, key, &t, err);
        if (r < 0)
                return r;
        struct s3_call del = { .cfg = cfg,
                               .method = "DELETE",
                               .target = &t,
                               .payload_sha256 = SIGV4_EMPTY_SHA256 };
        long status = s3_call_run(&del, BC_UPLOAD_FAILED, err);
        if (status < 0)
                return (int)status;
        /* S3 answers 204 whether or not the key was there; other stores
         * may say 404, which is the same outcome. */
        if (status != 200 && status != 204 && status != 404)
                return bc_error_set(err, BC_UPLOAD_FAILED, EIO, "DELETE %s: HTTP %ld", t.url,
                                    status);
        return 0;
}

static int open_tmpfile(const char *tmp_dir, struct bc_error *err)
{
        int fd = open(tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
                return fd >= 0 ? fd
                               : bc_error_set(err, BC_IO, errno, "tmpfile in %s: %m", tmp_dir);
        _cleanup_free_ char *tmpl = NULL;
        if (asprintf(&tmpl, "%s/boxcar-pack-XXXXXX", tmp_dir) < 0)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        fd = mkostemp(tmpl, O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "tmpfile in %s: %m", tmp_dir);
        unlink(tmpl);
        return fd;
}

void storage_push_result_done(struct storage_push_result *r)
{
        if (!r)
                return;
        free(r->key);
        r->key = NULL;
}

int storage_push_dir(const struct storage_config *cfg, const char *dir, const char *tmp_dir,
                     const struct storage_pack_limits *limits,
                     void (*on_packed)(void *ctx, const char *sha256), void *ctx,
                     struct storage_push_result *ret, struct bc_error *err)
{
        _cleanup_fd_ int fd = open_tmpfile(tmp_dir, err);
        if (fd < 0)
                return fd;
        struct storage_push_result res = { 0 };
        int r = storage_pack_dir(dir, fd, limits, &res.pack, err);
        if (r < 0)
                return r;
        if (on_packed)
                on_packed(ctx, res.pack.sha256);
        r = storage_object_key(cfg, res.pack.sha256, &res.key, err);
        r = r ? r : storage_upload(cfg, fd, res.pack.sha256, res.pack.size, &res.uploaded, err);
        if (r < 0) {
                free(res.key);
                return r;
        }
        *ret = res;
        return 0;
}
