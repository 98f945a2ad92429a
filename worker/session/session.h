/* Live sessions: sandboxes this worker keeps between a session's jobs
 * (docs/sessions.md).  A session's sandbox runs boxcar-session-agent
 * (agent/) as its only command, for as long as the session lives; each
 * job of the session is a request to that agent over a unix socket
 * (common/session_wire.h), run inside the same namespaces, cgroup and
 * workspace.  The registry holds at most --max-sessions of them, ends
 * idle ones (after a final checkpoint), evicts the least recently used
 * for a new one, and keeps their lease in the database
 * (boxcar.session_renew) so no other worker runs their jobs meanwhile.
 *
 * A session is used by one job at a time (session_take .. session_put);
 * the registry's own thread (ticks, renewals) never touches a busy one. */
#ifndef BC_WORKER_SESSION_SESSION_H
#define BC_WORKER_SESSION_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/session_wire.h"
#include "worker/job/store.h"

struct backend;
struct backend_job;
struct db_pool;
struct metrics;
struct worker_config;
struct session;
struct session_registry;

struct session_registry_options {
        const struct worker_config *cfg;
        const struct backend *backend;
        struct store *store;
        struct metrics *metrics; /* or NULL */
        struct db_pool *db;      /* for leases and final checkpoints */
        const char *worker_id, *instance;
        double lease_s;
};

int session_registry_new(const struct session_registry_options *o, struct session_registry **ret,
                         struct bc_error *err);
/* Stops every session (a final checkpoint each, reason "drain"), then
 * frees.  NULL-safe. */
void session_registry_free(struct session_registry *r);
/* About once a second: idle sessions past their idle_timeout_s and
 * sessions past --session-max-lifetime end (checkpoint, then stop);
 * sessions whose sandbox died are cleaned up. */
void session_registry_tick(struct session_registry *r);
/* With the worker's heartbeat: renews the leases of the sessions held
 * here (boxcar.session_renew); those the database no longer gives this
 * worker are stopped without a checkpoint (another worker may hold them
 * now), those asked to end (boxcar.end_session) end with one. */
void session_registry_renew(struct session_registry *r);
/* Live sessions held here. */
size_t session_registry_count(struct session_registry *r);

/* What a session's sandbox lives in, made by the job that starts it (its
 * directory, workspace, mounts, disk): the session owns it from
 * session_start on and gives it back through release(resources) when it
 * stops.  ws and meta are host paths; upper is the overlay's upper
 * directory of ws (NULL when ws is no overlay). */
struct session_home {
        char *dir, *ws, *meta, *upper;
        void *resources;
        void (*release)(void *resources);
        const struct store_version *checkpoint; /* the version ws starts as, or NULL */
        /* The artifact cache's entry below ws's overlay (held by
         * resources until release), or NULL. */
        const struct storage_cache_entry *base_entry;
        uint64_t pack_max_bytes, pack_max_entries; /* what a checkpoint may hold */
};

/* The live session (scope, id) taken for one job: 1 and *ret (busy until
 * session_put), 0 when it is not live here. */
int session_take(struct session_registry *r, const char *scope, const char *id,
                 struct session **ret);
/* Starts a session's sandbox: home (taken, whatever happens), the spec
 * that starts it (spec_json: parsed again and kept for the session's
 * life), bj (the sandbox's job: spec, paths; its argv, timeout and
 * cancel fd are the session's).  Makes room first (evicting the least
 * recently used idle session); -EBUSY when every session here is busy.
 * On success *ret is taken, as by session_take. */
int session_start(struct session_registry *r, const char *scope, const char *id,
                  double idle_timeout_s, const char *spec_json, struct session_home *home,
                  const struct backend_job *bj, struct session **ret, struct bc_error *err);
/* The job is done with s: idle again, or, when broken (the agent did not
 * answer, a checkpoint failed), stopped without a further checkpoint. */
void session_put(struct session *s, bool broken);

/* ---- a job's dialogue with the session's agent ---- */
/* The next job's number in the session (1, 2, …). */
uint32_t session_next_seq(struct session *s);
/* Sends frames (whole, encoded by sw_encode_*). */
int session_send(struct session *s, const struct dynbuf *frames, struct bc_error *err);
/* The next frame from the agent: 1 with *ret_hdr and *ret_payload (valid
 * until the next call), 0 when wait_fd became readable or timeout_ms
 * passed first (-1: no timeout; wait_fd -1: none), negative with err set
 * when the agent is gone or broke the protocol. */
int session_recv(struct session *s, int wait_fd, int timeout_ms, struct sw_header *ret_hdr,
                 const char **ret_payload, struct bc_error *err);

/* ---- its checkpoints ---- */
const char *session_ws(const struct session *s);
const char *session_upper(const struct session *s);
const char *session_dir(const struct session *s);
const char *session_meta(const struct session *s);
/* The last checkpoint (the version ws was last saved as), or NULL. */
const struct store_version *session_checkpoint(const struct session *s);
void session_set_checkpoint(struct session *s, const struct store_version *v);
void session_pack_limits(const struct session *s, uint64_t *ret_bytes, uint64_t *ret_entries);
/* The session's idle timeout, as its latest job asked. */
void session_set_idle_timeout(struct session *s, double idle_timeout_s);
/* Whether this is the session's first job since its sandbox started, and
 * whether that start resumed from a checkpoint. */
bool session_first_job(const struct session *s);
bool session_resumed(const struct session *s);

#endif
