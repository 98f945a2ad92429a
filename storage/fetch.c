/* Downloads streamed straight into extraction (a whole tree, or a layer
 * onto one), and extraction of local files.  libarchive pulls (a read callback) while libcurl pushes (a write
 * callback); the curl multi interface turns the push into a pull on this
 * one thread: the read callback runs curl until some bytes arrive, and the
 * write callback pauses the transfer when our bounded buffer is full.  No
 * temporary tarball, no helper thread. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/netguard.h"
#include "storage/extract.h"
#include "storage/http.h"
#include "storage/storage.h"

#define STREAM_BUF_MAX (1u << 20) /* pause curl beyond this much unread */
#define ERROR_BODY_MAX 4096       /* enough for an S3 <Error> document */

struct curl_source {
        CURLM *multi;
        CURL *easy;
        char *buf;
        size_t len;
        size_t alloc;
        bool paused;
        bool done;
        CURLcode result;
        long status;
        struct dynbuf error_body;
        const char *redacted;
        char errbuf[CURL_ERROR_SIZE];
        bool retryable;
        struct netguard_curl guard;
};

static size_t curl_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
        struct curl_source *s = ud;
        size_t n = size * nmemb;
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
        if (s->status >= 300) {
                /* An error document: keep its head for the message. */
                http_keep_head(&s->error_body, ptr, n);
                return n;
        }
        if (s->len > 0 && s->len + n > STREAM_BUF_MAX) {
                s->paused = true;
                return CURL_WRITEFUNC_PAUSE;
        }
        if (s->len + n > s->alloc) {
                size_t want = s->len + n < 65536 ? 65536 : s->len + n;
                char *b = realloc(s->buf, want);
                if (!b)
                        return 0; /* curl fails the transfer with a write error */
                s->buf = b;
                s->alloc = want;
        }
        memcpy(s->buf + s->len, ptr, n);
        s->len += n;
        return n;
}

static void check_done(struct curl_source *s)
{
        int left;
        CURLMsg *m;
        while ((m = curl_multi_info_read(s->multi, &left)))
                if (m->msg == CURLMSG_DONE) {
                        s->done = true;
                        s->result = m->data.result;
                }
}

static int transfer_failed(struct curl_source *s, struct bc_error *err)
{
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
        if (s->guard.refused) {
                /* The URL leads somewhere the worker must not go: the spec
                 * is at fault, and trying again would not change that. */
                _cleanup_free_ char *m = netguard_curl_message(&s->guard);
                s->retryable = false;
                return bc_error_set(err, BC_BAD_SPEC, EACCES, "GET %s: %s", s->redacted,
                                    m ? m : "refused by the URL guard");
        }
        char what[256];
        http_describe(s->result, s->status, s->errbuf, s->error_body.data, what);
        s->retryable = http_retryable(s->result, s->status);
        /* ENOENT tells "not there" (a collected layer) from a failure. */
        return bc_error_set(err, BC_FETCH_FAILED, s->status == 404 ? ENOENT : EIO, "GET %s: %s",
                            s->redacted, what);
}

static ssize_t curl_source_read(void *ctx, const void **buf, struct bc_error *err)
{
        struct curl_source *s = ctx;
        s->len = 0; /* libarchive is done with the previous block */
        while (s->len == 0 && !s->done) {
                if (s->paused) {
                        s->paused = false;
                        curl_easy_pause(s->easy, CURLPAUSE_CONT);
                        if (s->len)
                                break;
                }
                int running;
                CURLMcode mc = curl_multi_perform(s->multi, &running);
                if (mc != CURLM_OK)
                        return bc_error_set(err, BC_FETCH_FAILED, EIO, "GET %s: %s", s->redacted,
                                            curl_multi_strerror(mc));
                check_done(s);
                if (s->len || s->done)
                        break;
                curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
        }
        if (s->len) {
                *buf = s->buf;
                return (ssize_t)s->len;
        }
        if (s->result != CURLE_OK || s->status >= 300 || s->status < 200)
                return transfer_failed(s, err);
        return 0;
}

static void curl_source_done(struct curl_source *s)
{
        if (s->multi && s->easy)
                curl_multi_remove_handle(s->multi, s->easy);
        if (s->easy)
                curl_easy_cleanup(s->easy);
        if (s->multi)
                curl_multi_cleanup(s->multi);
        free(s->buf);
        dynbuf_done(&s->error_body);
}

static int curl_source_init(struct curl_source *s, const char *url, const struct http_policy *p,
                            const struct netguard *guard, const char *redacted,
                            struct bc_error *err)
{
        *s = (struct curl_source){ .redacted = redacted, .guard.guard = guard };
        dynbuf_init(&s->error_body, ERROR_BODY_MAX);
        s->multi = curl_multi_init();
        s->easy = curl_easy_init();
        if (!s->multi || !s->easy)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "curl init failed");
        http_setup(s->easy, p, s->errbuf);
        if (guard)
                netguard_curl_attach(s->easy, &s->guard);
        curl_easy_setopt(s->easy, CURLOPT_URL, url);
        curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, curl_write_cb);
        curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
        if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK)
                return bc_error_set(err, BC_INTERNAL, EIO, "curl_multi_add_handle failed");
        return 0;
}

static void md_freep(EVP_MD_CTX **p)
{
        EVP_MD_CTX_free(*p);
}

static int sha_new(EVP_MD_CTX **ret, struct bc_error *err)
{
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(c);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "sha256 init failed");
        }
        *ret = c;
        return 0;
}

static int checked_limits(const struct storage_limits *in, struct storage_limits *out,
                          struct bc_error *err)
{
        if (!in) {
                storage_limits_default(out);
                return 0;
        }
        *out = *in;
        return storage_limits_validate(out, err);
}

/* After a complete extraction: the expected hash, when given, decides. */
static int finish(EVP_MD_CTX *sha, const struct extract_source *src,
                  const struct extract_stats *st, const char *expected, const char *what,
                  struct storage_fetch_result *ret, struct bc_error *err)
{
        struct storage_fetch_result r = { .size = src->total,
                                          .bytes = st->bytes,
                                          .entries = st->entries };
        extract_sha_hex(sha, r.sha256);
        if (expected && strcmp(expected, r.sha256) != 0)
                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                    "%s: sha256 is %s, expected %s", what, r.sha256, expected);
        *ret = r;
        return 0;
}

/* A layer's destination: an existing tree, never created here. */
static int dest_open_tree(const char *dest, int *ret_fd, struct bc_error *err)
{
        int fd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "open %s: %m", dest);
        *ret_fd = fd;
        return 0;
}

/* Opens dest for a whole tree (created or empty) or a layer (existing). */
static int dest_open(const char *dest, bool apply, int *ret_fd, bool *ret_created,
                     struct bc_error *err)
{
        *ret_created = false;
        return apply ? dest_open_tree(dest, ret_fd, err)
                     : extract_dest_open(dest, ret_fd, ret_created, err);
}

/* One attempt: a fresh transfer into a fresh (or emptied) dest, or a
 * layer onto it.  A layer's failed attempt is retried only when not a
 * byte of it arrived: after that the tree is part-applied. */
static int fetch_once(const char *url, const char *redacted, const char *expected,
                      const char *dest, const struct storage_limits *l,
                      const struct http_policy *p, const struct netguard *guard, bool apply,
                      bool *ret_retryable, struct storage_fetch_result *ret, struct bc_error *err)
{
        int fd = -1;
        bool created = false;
        int r = dest_open(dest, apply, &fd, &created, err);
        if (r < 0)
                return r;
        _cleanup_(md_freep) EVP_MD_CTX *sha = NULL;
        struct curl_source cs = { 0 };
        r = sha_new(&sha, err);
        r = r ? r : curl_source_init(&cs, url, p, guard, redacted, err);
        struct extract_source src = { .read = curl_source_read,
                                      .ctx = &cs,
                                      .sha = sha,
                                      .max = l->max_download,
                                      .err = BC_ERROR_INIT };
        struct extract_stats st;
        r = r ? r : extract_stream(&src, fd, l, apply, &st, err);
        r = r ? r : finish(sha, &src, &st, expected, redacted, ret, err);
        *ret_retryable = r < 0 && err && err->code == BC_FETCH_FAILED && cs.retryable &&
                         (!apply || src.total == 0);
        curl_source_done(&cs);
        bc_error_clear(&src.err);
        if (r < 0 && !apply)
                extract_dest_abort(dest, fd, created);
        close(fd);
        return r;
}

/* The limits a fetch or an extraction runs under, and its expected digest,
 * checked before anything is read. */
static int checked_request(const struct storage_limits *limits, const char *expected_sha256,
                           struct storage_limits *ret, struct bc_error *err)
{
        int r = checked_limits(limits, ret, err);
        if (r < 0)
                return r;
        if (expected_sha256 && !storage_sha256_valid(expected_sha256))
                return bc_error_set(err, BC_USAGE, EINVAL, "expected sha256 is malformed");
        return 0;
}

static int fetch_run(const struct storage_config *cfg, const char *url,
                     const char *expected_sha256, const char *dest_dir,
                     const struct storage_limits *limits, const struct netguard *guard, bool apply,
                     struct storage_fetch_result *ret, struct bc_error *err)
{
        struct storage_limits l;
        int r = checked_request(limits, expected_sha256, &l, err);
        if (r < 0)
                return r;
        r = http_global_init(err);
        if (r < 0)
                return r;
        struct http_policy p;
        http_policy_of(cfg, &p);
        _cleanup_free_ char *redacted = http_redact(url);
        for (int attempt = 0;; attempt++) {
                bool retryable = false;
                struct bc_error e = BC_ERROR_INIT;
                r = fetch_once(url, redacted, expected_sha256, dest_dir, &l, &p, guard, apply,
                               &retryable, ret, &e);
                if (r == 0)
                        return 0;
                if (!retryable || attempt >= p.retries) {
                        bc_error_move(err, &e);
                        if (retryable)
                                bc_error_prefix(err, "gave up after %d attempts", attempt + 1);
                        return r;
                }
                bc_error_clear(&e);
                http_backoff(&p, attempt + 1);
        }
}

int storage_fetch_extract(const struct storage_config *cfg, const char *url,
                          const char *expected_sha256, const char *dest_dir,
                          const struct storage_limits *limits, const struct netguard *guard,
                          struct storage_fetch_result *ret, struct bc_error *err)
{
        return fetch_run(cfg, url, expected_sha256, dest_dir, limits, guard, false, ret, err);
}

int storage_fetch_apply(const struct storage_config *cfg, const char *url,
                        const char *expected_sha256, const char *dest_dir,
                        const struct storage_limits *limits, struct storage_fetch_result *ret,
                        struct bc_error *err)
{
        return fetch_run(cfg, url, expected_sha256, dest_dir, limits, NULL, true, ret, err);
}

/* ---- local files ------------------------------------------------------ */

struct file_source {
        int fd;
        char buf[65536];
        const char *path;
};

static ssize_t file_source_read(void *ctx, const void **buf, struct bc_error *err)
{
        struct file_source *f = ctx;
        for (;;) {
                ssize_t n = read(f->fd, f->buf, sizeof(f->buf));
                if (n >= 0) {
                        *buf = f->buf;
                        return n;
                }
                if (errno != EINTR)
                        return bc_error_set(err, BC_IO, errno, "read %s: %m", f->path);
        }
}

static int file_run(const char *path, const char *expected_sha256, const char *dest_dir,
                    const struct storage_limits *limits, bool apply,
                    struct storage_fetch_result *ret, struct bc_error *err)
{
        struct storage_limits l;
        int r = checked_request(limits, expected_sha256, &l, err);
        if (r < 0)
                return r;
        _cleanup_free_ struct file_source *fs = calloc(1, sizeof(*fs));
        if (!fs)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        fs->path = path;
        _cleanup_fd_ int in = open(path, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return bc_error_set(err, BC_IO, errno, "open %s: %m", path);
        fs->fd = in;
        int fd = -1;
        bool created = false;
        r = dest_open(dest_dir, apply, &fd, &created, err);
        if (r < 0)
                return r;
        _cleanup_(md_freep) EVP_MD_CTX *sha = NULL;
        r = sha_new(&sha, err);
        struct extract_source src = { .read = file_source_read,
                                      .ctx = fs,
                                      .sha = sha,
                                      .max = l.max_download,
                                      .err = BC_ERROR_INIT };
        struct extract_stats st;
        r = r ? r : extract_stream(&src, fd, &l, apply, &st, err);
        r = r ? r : finish(sha, &src, &st, expected_sha256, path, ret, err);
        bc_error_clear(&src.err);
        if (r < 0 && !apply)
                extract_dest_abort(dest_dir, fd, created);
        close(fd);
        return r;
}

int storage_extract_file(const char *path, const char *expected_sha256, const char *dest_dir,
                         const struct storage_limits *limits, struct storage_fetch_result *ret,
                         struct bc_error *err)
{
        return file_run(path, expected_sha256, dest_dir, limits, false, ret, err);
}

int storage_apply_file(const char *path, const char *expected_sha256, const char *dest_dir,
                       const struct storage_limits *limits, struct storage_fetch_result *ret,
                       struct bc_error *err)
{
        return file_run(path, expected_sha256, dest_dir, limits, true, ret, err);
}
