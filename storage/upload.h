/* Signed calls on one S3 object, made by the worker itself (header auth,
 * retried as storage_upload is): the conditional PUT behind storage_upload
 * and storage_tree_upload, and a GET of a small object into memory.
 * Internal to storage/. */
#ifndef BC_STORAGE_UPLOAD_H
#define BC_STORAGE_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/storage.h"

/* Stores size bytes under key, read with pread from fd (its position
 * untouched) or, when mem is not NULL, from mem: HEAD first, nothing sent
 * when an object of that size exists, else PUT with If-None-Match: *
 * (412: someone stored it meanwhile).  payload_sha256 is the hex SHA-256
 * of the bytes (S3 checks it).  *ret_uploaded tells whether bytes were
 * sent.  BC_UPLOAD_FAILED when it gives up. */
int s3_put_object(const struct storage_config *cfg, const char *key, int fd, const void *mem,
                  uint64_t size, const char *payload_sha256, const char *content_type,
                  bool *ret_uploaded, struct bc_error *err);

/* The object under key, at most max bytes (more is BC_FETCH_FAILED), into
 * *ret_buf (the caller frees it; NUL-terminated past *ret_len).  A key
 * that does not exist is BC_NOT_FOUND; transfer failures, after retries,
 * BC_FETCH_FAILED. */
int s3_get_object(const struct storage_config *cfg, const char *key, size_t max, char **ret_buf,
                  size_t *ret_len, struct bc_error *err);

#endif
