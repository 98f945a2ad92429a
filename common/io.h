/* Small I/O helpers every module needs. */
#ifndef BC_COMMON_IO_H
#define BC_COMMON_IO_H

#include <stddef.h>

/* Writes all len bytes to fd, retrying short writes and EINTR.  Returns 0
 * or a negative errno. */
int bc_write_all(int fd, const void *data, size_t len);

/* SHA-256 of len bytes as 64 lowercase hex digits and a NUL. */
void bc_sha256_hex(const void *data, size_t len, char ret_hex[65]);

#endif
