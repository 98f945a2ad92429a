/* Removing a tree that someone else may have filled: never following a
 * symlink, bounded in depth, and through directories made read-only. */
#ifndef BC_COMMON_RMTREE_H
#define BC_COMMON_RMTREE_H

/* Removes name under dirfd recursively without following symlinks, making
 * read-only directories writable first.  -ENOENT is success; -ELOOP past
 * 512 levels. */
int fs_rm_rf_at(int dirfd, const char *name);
int fs_rm_rf(const char *path);
/* Empties a directory, keeping it. */
int fs_empty_dir(int dirfd);

#endif
