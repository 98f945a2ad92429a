/* The agent's one connection to the worker: frames in (a sw_stream), frames
 * out (a capped buffer written as the socket takes it), and the senders of
 * each frame the agent says.  Everything here is non-blocking: the agent's
 * loop polls conn.fd and calls conn_read / conn_flush. */
#ifndef BC_AGENT_CONN_H
#define BC_AGENT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dynbuf.h"
#include "common/session_wire.h"

struct conn {
        int fd;
        struct sw_stream in;
        struct dynbuf out; /* frames not yet (wholly) written */
        size_t sent;       /* bytes of out already written */
        /* The worker is gone (EOF, a socket error) or broken (a frame
         * over SW_PAYLOAD_MAX, more queued than CONN_OUT_MAX): the agent
         * winds up. */
        bool dead;
};

/* Connects to the worker's socket at path (blocking), then makes the
 * socket non-blocking.  0 or a negative errno (-ENAMETOOLONG when path
 * does not fit a sockaddr_un). */
int conn_open(struct conn *c, const char *path);
void conn_close(struct conn *c);

/* Bytes queued and not yet written. */
size_t conn_pending(const struct conn *c);
/* More queued than the worker has read by CONN_SOFT_MAX: the agent stops
 * reading its commands' output until it drains, so a command that writes
 * faster than the worker reads blocks on its pipe instead of growing the
 * agent's memory. */
bool conn_backlogged(const struct conn *c);

/* Reads what the socket has into c->in (EOF or an error: c->dead). */
void conn_read(struct conn *c);
/* Writes what the socket takes of the queue (an error: c->dead). */
void conn_flush(struct conn *c);

/* Senders: each queues one frame (SA_OUTPUT: as many as len needs, each at
 * most SW_OUTPUT_CHUNK bytes).  A frame that cannot be queued marks the
 * connection dead: the caller goes on, the loop ends. */
void conn_send_hello(struct conn *c);
void conn_send_started(struct conn *c, uint32_t seq, int32_t pid);
void conn_send_output(struct conn *c, uint32_t seq, uint8_t stream, const char *data, size_t len);
/* A line of the agent's own on job seq's stderr, for a command that could
 * not start: "WHAT PATH: strerror(err)\n" (PATH NULL: "WHAT: ...").  Cut
 * at 1 KiB. */
void conn_send_failure(struct conn *c, uint32_t seq, const char *what, const char *path, int err);
void conn_send_exit(struct conn *c, uint32_t seq, const struct sw_exit *x);
void conn_send_file_result(struct conn *c, uint32_t seq, const struct sw_file_result *r);
void conn_send_files_done(struct conn *c, uint32_t seq);
void conn_send_code_done(struct conn *c, uint32_t seq, const struct sw_code_done *d);

#endif
