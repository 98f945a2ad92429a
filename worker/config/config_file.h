/* The worker's configuration file (/etc/boxcar/worker.conf): the grammar
 * only.  What the keys mean is worker/config/config.c's business. */
#ifndef BC_WORKER_CONFIG_CONFIG_FILE_H
#define BC_WORKER_CONFIG_CONFIG_FILE_H

#include <stdbool.h>

#include "common/error.h"

#define CONFIG_FILE_DEFAULT "/etc/boxcar/worker.conf"

/* Called once per "key = value" line, in file order; a negative return
 * stops the reading and is returned by config_file_read (err set). */
typedef int (*config_file_entry_fn)(const char *key, const char *value, const char *path,
                                    unsigned line, void *ctx, struct bc_error *err);

/* Reads PATH line by line:
 *   - blank lines and lines whose first non-blank character is '#' or ';'
 *     are ignored (no comment after a value: '#' is common in URLs);
 *   - any other line is KEY = VALUE, blanks around both trimmed; KEY is
 *     lower-case letters, digits and '-'; VALUE may be wrapped in double
 *     quotes to keep blanks at its ends (no escapes inside);
 *   - a key given twice is an error.
 * A missing file is -ENOENT with err set, unless missing_ok (then 0 and no
 * call).  Syntax errors are BC_USAGE naming PATH:LINE. */
int config_file_read(const char *path, bool missing_ok, config_file_entry_fn fn, void *ctx,
                     struct bc_error *err);

#endif
