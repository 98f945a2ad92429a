/* Small I/O helpers every module needs. */
#ifndef BC_COMMON_IO_H
#define BC_COMMON_IO_H

#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes all len bytes to fd, retrying short writes and EINTR.  Returns 0
 * or a negative errno. */
int bc_write_all(int fd, const void *data, size_t len);

struct bc_error;

/* Reads all of path ("-" or NULL: stdin), at most cap bytes, into a new
 * NUL-terminated buffer (*ret, caller frees; *ret_len excludes the NUL).
 * Errors: BC_IO naming the file, with E2BIG when it exceeds cap. */
int bc_read_all(const char *path, size_t cap, char **ret, size_t *ret_len, struct bc_error *err);

/* Creates directory path and its missing parents, each with mode (unlike
 * mkdir -p, parents get mode too: they exist only for path).  Existing
 * directories are left as they are.  Errors: BC_IO with the errno and a
 * message naming the component that could not be made ("mkdir /a/b:
 * Permission denied", "/a/b: exists and is not a directory"). */
int bc_mkdir_p(const char *path, mode_t mode, struct bc_error *err);

/* A directory stream over the directory dfd, which stays the caller's
 * (closedir closes a new open file description of it, with its own read
 * position).  NULL with errno set. */
DIR *bc_opendir_at(int dfd);

/* Calls remove(dir) for each directory under parent whose "lock" file no
 * live process holds (flock): what a killed worker sharing the parent left,
 * never a running one's. */
void bc_remove_unlocked_dirs(const char *parent, void (*remove)(const char *dir));

/* A child's spawn attributes: its own process group (so a kill of the group
 * reaches all it forks), an empty signal mask and default dispositions
 * (the worker blocks and ignores some for itself). */
#include <spawn.h>
void bc_spawnattr_own_group(posix_spawnattr_t *attr);

/* SHA-256 of len bytes as 64 lowercase hex digits and a NUL. */
void bc_sha256_hex(const void *data, size_t len, char ret_hex[65]);

#endif
