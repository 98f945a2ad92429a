/* Careful file-system walking for trees we do not trust: every path is
 * resolved one component at a time with O_NOFOLLOW relative to a held
 * directory fd, so no symlink (planted by an archive or by a job) is ever
 * followed and nothing outside the root can be reached.  Internal. */
#ifndef BC_STORAGE_FSUTIL_H
#define BC_STORAGE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FS_MAX_PATH 4096 /* bytes of a relative path inside a tree */
#define FS_MAX_NAME 255  /* bytes of one component */
#define FS_MAX_DEPTH 256 /* components; also bounds recursion and fds */

/* Splits path into its components after dropping empty and "." ones,
 * writing "a/b/c" into out (FS_MAX_PATH + 1 bytes).  Returns the number of
 * components (0 for the root itself), or -EINVAL (absolute, "..",
 * component too long), -ENAMETOOLONG, -E2BIG (too deep). */
int fs_normalize(const char *path, char *out);

/* Resolves the parent directory of a normalized relative path beneath
 * root.  The directory fd is cached for the next call with the same
 * parent (archives and sorted trees list siblings together). */
struct fs_walker {
        int rootfd;  /* borrowed */
        bool create; /* mkdir missing parents */
        mode_t create_mode;
        char cached[FS_MAX_PATH + 1]; /* parent path of cached_fd */
        int cached_fd;                /* -1 when none */
};

void fs_walker_init(struct fs_walker *w, int rootfd, bool create, mode_t create_mode);
void fs_walker_done(struct fs_walker *w);

/* *ret_dirfd is borrowed from the walker (valid until the next call or
 * fs_walker_done); *ret_leaf points into path.  Returns 0, -ELOOP when a
 * parent is a symlink, -ENOTDIR when it is something else, -ENOENT when it
 * is missing and !create, or another -errno. */
int fs_walker_parent(struct fs_walker *w, const char *path, int *ret_dirfd, const char **ret_leaf);


/* Clears every write bit in the tree under dirfd (symlinks untouched). */
int fs_make_readonly(int dirfd);
/* Gives every entry of the tree under dirfd, itself included, to uid:gid
 * (symlinks themselves, never followed; modes kept but for the set-id bits
 * chown clears, which an artifact never has). */
int fs_chown_tree(int dirfd, uid_t uid, gid_t gid);
/* Builds in dest (an empty directory on lower's filesystem) the tree seen
 * at merged, an overlay of upper over lower mounted with redirect_dir=off
 * and metacopy=off: names absent from upper are hard links to lower's
 * files, the rest copies (holes kept); everything owned by uid:gid with
 * its permission bits.  *ret_bytes, *ret_entries: file bytes as stored
 * (a sparse file's holes not counted) and names.
 * 0 or -errno (-ENOTSUP: an entry the packer would not store). */
int fs_overlay_flatten(const char *merged, const char *upper, const char *lower, const char *dest,
                       uid_t uid, gid_t gid, uint64_t *ret_bytes, uint64_t *ret_entries);

/* Builds in dest (an empty directory on src's filesystem) a copy of the
 * tree src that shares its files: new directories with src's permission
 * bits, every regular file a hard link to src's (so neither may ever be
 * written through), symlinks made anew; everything but the shared files
 * owned by uid:gid.  0 or -errno (-ENOTSUP: a device, fifo or socket). */
int fs_clone_tree(const char *src, const char *dest, uid_t uid, gid_t gid);
/* Of the tree under dirfd: *ret_bytes, the sizes of its regular files,
 * each inode once (as extraction counts them: a hard link is free);
 * *ret_entries, its names, the root not included. */
int fs_tree_stats(int dirfd, uint64_t *ret_bytes, uint64_t *ret_entries);

/* Quotes an untrusted name for an error message: non-printable bytes as
 * \xNN, at most ~200 bytes, into out (FS_QUOTE_MAX bytes). */
#define FS_QUOTE_MAX 256
const char *fs_quote(const char *name, char out[static FS_QUOTE_MAX]);

#endif

/* libarchive converts path names through the calling thread's locale, so
 * the same tree would pack to different bytes under LANG=C and
 * LANG=en_US.UTF-8.  Packing and extraction switch the calling thread (only
 * it: uselocale) to C.UTF-8 and back: UTF-8 names are stored as standard
 * pax UTF-8, other bytes as hdrcharset=BINARY, identically everywhere.
 * Falls back to the C locale where C.UTF-8 does not exist. */
#include <locale.h>
locale_t fs_archive_locale_enter(void);
void fs_archive_locale_leave(locale_t old);

/* A new open file description of the directory dirfd (for fdopendir): a
 * dup() would share the read position, and a second readdir pass over
 * the same directory would see nothing.  Returns an fd or -1 (errno). */
int fs_reopen_dir(int dirfd);
