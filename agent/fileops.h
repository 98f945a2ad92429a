/* One file operation of SW_FILES, done by the agent inside the sandbox:
 * its root is the sandbox's, so no path, symlink or "..", whatever the
 * session planted, leads out of it.  Within it, operations about a path
 * itself never follow a final symlink (STAT and LIST's entries are
 * lstat's, WRITE opens O_NOFOLLOW, REMOVE removes the link and never
 * descends through one); READ and LIST follow one to what it names, as the
 * session's own programs would.  Trailing slashes are dropped first, so
 * "link/" is the link, not its target. */
#ifndef BC_AGENT_FILEOPS_H
#define BC_AGENT_FILEOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/session_wire.h"

/* READ returns at most this much whatever max_read says, so its SA_FILE
 * fits a frame. */
#define FILEOP_READ_MAX (SW_PAYLOAD_MAX - 65536u)

struct fileop_result {
        int err; /* 0, or the errno the operation failed with */
        bool truncated;
        uint64_t size;            /* READ: the file's size; LIST: its entries */
        struct sw_entry *entries; /* each name malloc'ed */
        uint32_t n_entries;
        char *data; /* READ's bytes */
        uint32_t data_len;
};

/* Does op (relative paths from workspace) and fills *ret: always, failure
 * included (ret->err).  Free it with fileop_result_done. */
void fileop_run(const struct sw_file_req *op, const char *workspace, uint32_t max_read,
                struct fileop_result *ret);
void fileop_result_done(struct fileop_result *r);

#endif
