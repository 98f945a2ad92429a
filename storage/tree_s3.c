/* Where tree manifests are kept: a file on the worker's disk, and an S3
 * object "<prefix>/trees/<2 hex>/<id>.tree.gz" holding the manifest
 * gzip-compressed, deterministically (no name, time 0, level 6: the same
 * manifest gives the same object with the same zlib), so that two
 * workers storing the same tree store the same bytes.  Whatever is read
 * back is checked against the id it was asked for. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "storage/tree-internal.h"
#include "storage/upload.h"

/* ---- on disk ----------------------------------------------------------- */

static int write_all(int fd, const char *buf, size_t len)
{
        while (len) {
                ssize_t n = write(fd, buf, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

int storage_tree_save(const struct storage_tree *t, const char *path, struct bc_error *err)
{
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        _cleanup_fd_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, BC_IO, errno, "save tree %s: %m", path);
        const void *buf;
        size_t len;
        storage_tree_bytes(t, &buf, &len);
        int r = write_all(fd, buf, len);
        if (r == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return bc_error_set(err, BC_IO, -r, "save tree %s: %s", path, strerror(-r));
        }
        return 0;
}

int storage_tree_load(const char *path, const char *expected_id, struct storage_tree **ret,
                      struct bc_error *err)
{
        _cleanup_fd_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, errno == ENOENT ? BC_NOT_FOUND : BC_IO, errno,
                                    "load tree %s: %m", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return bc_error_set(err, BC_IO, errno, "load tree %s: %m", path);
        if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > TREE_MAX_BYTES)
                return bc_error_set(err, BC_BAD_ARCHIVE, EINVAL,
                                    "load tree %s: not a file of at most 1 GiB", path);
        size_t len = (size_t)st.st_size;
        _cleanup_free_ char *buf = malloc(len + 1);
        if (!buf)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        size_t got = 0;
        while (got < len) {
                ssize_t n = read(fd, buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return bc_error_set(err, n < 0 ? BC_IO : BC_BAD_ARCHIVE,
                                            n < 0 ? errno : EINVAL, "load tree %s: %s", path,
                                            n < 0 ? strerror(errno) : "shrank while read");
                got += (size_t)n;
        }
        int r = tree_parse_owned(steal_pointer(&buf), len, expected_id, ret, err);
        return r < 0 ? bc_error_prefix(err, "%s", path) : 0;
}

/* ---- in S3 ------------------------------------------------------------- */

int storage_tree_key(const struct storage_config *cfg, const char *id, char **ret,
                     struct bc_error *err)
{
        if (!storage_sha256_valid(id))
                return bc_error_set(err, BC_USAGE, EINVAL, "tree key: malformed id");
        const char *prefix = cfg && cfg->prefix ? cfg->prefix : "";
        char *k = NULL;
        if (asprintf(&k, "%s%strees/%.2s/%s.tree.gz", prefix, *prefix ? "/" : "", id, id) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret = k;
        return 0;
}

/* The manifest gzip-compressed as gzpipe does it: zlib's gzip wrapper,
 * no name, time 0, level 6. */
static int gzip_buf(const void *in, size_t len, unsigned char **ret, size_t *ret_len)
{
        z_stream z = { 0 };
        if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        uLong cap = deflateBound(&z, (uLong)len);
        unsigned char *out = malloc(cap);
        if (!out) {
                deflateEnd(&z);
                return -ENOMEM;
        }
        z.next_in = (unsigned char *)(uintptr_t)in;
        z.avail_in = (uInt)len;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        int zr = deflate(&z, Z_FINISH);
        size_t n = z.total_out;
        deflateEnd(&z);
        if (zr != Z_STREAM_END) {
                free(out);
                return -EIO;
        }
        *ret = out;
        *ret_len = n;
        return 0;
}

/* One gzip member and nothing after it, at most TREE_MAX_BYTES out. */
static int gunzip_buf(const char *in, size_t len, char **ret, size_t *ret_len,
                      struct bc_error *err)
{
        z_stream z = { 0 };
        if (inflateInit2(&z, 15 + 16) != Z_OK)
                return bc_error_set(err, BC_IO, ENOMEM, "out of memory");
        z.next_in = (unsigned char *)(uintptr_t)in;
        z.avail_in = (uInt)len;
        size_t alloc = 0, n = 0;
        char *out = NULL;
        int zr = Z_OK;
        while (zr == Z_OK) {
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 65536;
                        if (alloc >= TREE_MAX_BYTES + 1)
                                break;
                        if (na > TREE_MAX_BYTES + 1)
                                na = TREE_MAX_BYTES + 1;
                        char *b = realloc(out, na);
                        if (!b) {
                                zr = Z_MEM_ERROR;
                                break;
                        }
                        out = b;
                        alloc = na;
                }
                z.next_out = (unsigned char *)out + n;
                z.avail_out = (uInt)(alloc - n);
                zr = inflate(&z, Z_NO_FLUSH);
                n = alloc - z.avail_out;
        }
        bool whole = zr == Z_STREAM_END && z.avail_in == 0 && n <= TREE_MAX_BYTES;
        inflateEnd(&z);
        if (!whole) {
                free(out);
                return zr == Z_MEM_ERROR
                               ? bc_error_set(err, BC_IO, ENOMEM, "out of memory")
                               : bc_error_set(err, BC_BAD_ARCHIVE, EINVAL,
                                              "tree manifest: not one gzip stream of at most "
                                              "1 GiB");
        }
        *ret = out;
        *ret_len = n;
        return 0;
}

int storage_tree_upload(const struct storage_config *cfg, const struct storage_tree *t,
                        uint64_t *ret_size, bool *ret_uploaded, struct bc_error *err)
{
        _cleanup_free_ char *key = NULL;
        int r = storage_tree_key(cfg, storage_tree_id(t), &key, err);
        if (r < 0)
                return r;
        const void *buf;
        size_t len;
        storage_tree_bytes(t, &buf, &len);
        _cleanup_free_ unsigned char *gz = NULL;
        size_t gz_len = 0;
        r = gzip_buf(buf, len, &gz, &gz_len);
        if (r < 0)
                return bc_error_set(err, BC_IO, -r, "tree %s: gzip: %s", storage_tree_id(t),
                                    strerror(-r));
        char sha[STORAGE_SHA256_HEX_LEN + 1];
        tree_sha256_hex(gz, gz_len, sha);
        bool uploaded = false;
        r = s3_put_object(cfg, key, -1, gz, gz_len, sha, "application/gzip", &uploaded, err);
        if (r < 0)
                return r;
        *ret_size = gz_len;
        *ret_uploaded = uploaded;
        return 0;
}

int storage_tree_download(const struct storage_config *cfg, const char *id,
                          struct storage_tree **ret, struct bc_error *err)
{
        _cleanup_free_ char *key = NULL;
        int r = storage_tree_key(cfg, id, &key, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *gz = NULL;
        size_t gz_len = 0;
        r = s3_get_object(cfg, key, TREE_MAX_BYTES, &gz, &gz_len, err);
        if (r < 0)
                return r;
        char *buf = NULL;
        size_t len = 0;
        r = gunzip_buf(gz, gz_len, &buf, &len, err);
        r = r ? r : tree_parse_owned(buf, len, id, ret, err);
        return r < 0 ? bc_error_prefix(err, "tree %s", id) : 0;
}
