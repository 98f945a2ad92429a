/* SW_FILES: a request's operations, done in order, one SA_FILE each, then
 * SA_FILES_DONE.  A request is done a few operations per turn of the loop,
 * and only while the worker keeps up with the answers (conn_backlogged):
 * a thousand reads of large files never sit in the agent's memory at once,
 * and commands' output and KILLs are served in between. */
#ifndef BC_AGENT_FILES_H
#define BC_AGENT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "common/session_wire.h"

struct files_req {
        struct files_req *next;
        uint32_t seq;
        char *payload; /* a copy: req's strings point into it */
        struct sw_files req;
        uint32_t done; /* operations answered */
};

/* Queues a SW_FILES payload (a malformed one is answered at once: one
 * SA_FILE with EBADMSG, then SA_FILES_DONE). */
void files_start(struct agent *a, uint32_t seq, const char *payload, size_t len);
/* Does the next few operations of the oldest request: true when some are
 * still to do. */
bool files_step(struct agent *a);
void files_free_all(struct agent *a);

#endif
