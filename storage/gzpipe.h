/* gzip compression on a thread of its own, so packing reads and tars the
 * tree on one core while deflate runs on another (as `tar | gzip` does with
 * two processes).  The output is deterministic: zlib's gzip wrapper with no
 * name and time 0, the same bytes for the same input and zlib build.
 * Internal to storage/. */
#ifndef BC_STORAGE_GZPIPE_H
#define BC_STORAGE_GZPIPE_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

struct gzpipe;

/* Compressed bytes go to fd and into sha (borrowed; both must outlive the
 * pipe).  Returns 0 or a negative errno. */
int gzpipe_start(struct gzpipe **ret, int fd, EVP_MD_CTX *sha, int level);
/* Queues len bytes; blocks while the compressor is behind.  A negative
 * errno once the compressor failed (a write error). */
int gzpipe_write(struct gzpipe *g, const void *buf, size_t len);
/* Flushes, ends the stream, joins the thread and frees g; *ret_size is the
 * compressed size.  0 or the first error. */
int gzpipe_finish(struct gzpipe *g, uint64_t *ret_size);
/* Stops without finishing the stream and frees g.  NULL-safe. */
void gzpipe_abort(struct gzpipe *g);

#endif
