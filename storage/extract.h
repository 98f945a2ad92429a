/* Extraction of untrusted tarballs into a directory (DESIGN §6).  Internal;
 * the public entry points are storage_fetch_extract and
 * storage_extract_file, and for a layer applied onto an existing tree
 * storage_fetch_apply and storage_apply_file (what changes then:
 * extract_apply.c).
 *
 * Policy, enforced entry by entry before anything is written:
 * - paths are relative, without "..", at most FS_MAX_PATH bytes and
 *   FS_MAX_DEPTH components; "." and empty components are dropped;
 * - only regular files, directories and symlinks; devices, fifos, sockets
 *   are refused;
 * - a hard link is materialized as a copy of a regular file extracted
 *   earlier from the same archive (never a link to anything outside, never
 *   a shared inode a later entry could write through);
 * - setuid/setgid bits are refused, the sticky bit is dropped, owners,
 *   times, xattrs and ACLs are ignored (everything belongs to us);
 * - every parent is opened component by component with O_NOFOLLOW, so a
 *   symlink stored earlier (even as a "directory") is never traversed, and
 *   leaves are created with O_EXCL/symlinkat/mkdirat, so an existing name
 *   is never opened: a duplicate entry is refused;
 * - caps on uncompressed bytes, entries and compression ratio.
 * A violation is BC_BAD_ARCHIVE naming the entry.  Symlink targets are
 * stored verbatim (they may point anywhere; we never follow them). */
#ifndef BC_STORAGE_EXTRACT_H
#define BC_STORAGE_EXTRACT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/evp.h>

#include "common/error.h"
#include "storage/storage.h"

struct archive;

/* Where compressed bytes come from.  read() returns the byte count (0 at
 * the end) and sets *buf, or a negative errno with err set; the source
 * hashes and counts what it hands out. */
struct extract_source {
        ssize_t (*read)(void *ctx, const void **buf, struct bc_error *err);
        void *ctx;
        EVP_MD_CTX *sha;     /* owned by the source's owner */
        uint64_t total;      /* bytes handed out so far */
        uint64_t max;        /* more than this is BC_BAD_ARCHIVE */
        struct bc_error err; /* the source's own failure, if any */
        bool failed;
};

struct extract_stats {
        uint64_t bytes;
        uint64_t entries;
};

/* Extracts the stream of src into rootfd, then reads src to its end (so
 * the hash covers every byte).  On failure the partial tree is left for
 * the caller to remove; src->failed tells a transport error (src->err)
 * from an archive one.  apply: the archive is a layer laid onto the tree
 * already at rootfd (storage_fetch_apply's rules, extract_apply.c);
 * otherwise rootfd is empty and nothing in it is ever replaced.  The
 * stats are the archive's (what this layer wrote), not the tree's. */
int extract_stream(struct extract_source *src, int rootfd, const struct storage_limits *l,
                   bool apply, struct extract_stats *ret, struct bc_error *err);

/* Opens dest for extraction: creates it (mode 0755) or accepts an empty
 * existing directory.  *ret_created tells which, for extract_dest_abort. */
int extract_dest_open(const char *dest, int *ret_fd, bool *ret_created, struct bc_error *err);
/* Removes what a failed extraction left: dest itself when we created it,
 * else its contents. */
void extract_dest_abort(const char *dest, int fd, bool created);

/* Hex of a finished SHA-256 context (65 bytes out). */
void extract_sha_hex(EVP_MD_CTX *sha, char out[65]);

#endif
