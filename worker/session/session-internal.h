/* Shared by the session room's files (session.c: one session's sandbox
 * and its agent; registry.c: the sessions a worker holds). */
#ifndef BC_WORKER_SESSION_SESSION_INTERNAL_H
#define BC_WORKER_SESSION_SESSION_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "worker/exec/backend.h"
#include "worker/session/session.h"
#include "worker/spec/spec.h"

enum session_state {
        SESSION_IDLE,     /* live, waiting for its next job */
        SESSION_BUSY,     /* a job has it (session_take .. session_put) */
        SESSION_STOPPING, /* being checkpointed and stopped */
};

struct session {
        struct session_registry *reg;
        struct session *next; /* in the registry's list */
        char *scope, *id, *storage;
        enum session_state state;
        double idle_timeout_s;
        uint64_t started_ms, last_used_ms; /* bc_mono_ms */
        bool resumed, first_job, broken, end_requested;
        uint32_t seq;
        struct session_home home;
        struct store_version checkpoint; /* sha256 "" when none */
        /* The sandbox: backend_run on a thread of its own, for the
         * session's whole life; cancel_fd ends it at once. */
        struct job_spec *spec;
        char **volume_paths;
        char *image_path, *image_sha, *scratch;
        char *agent_argv[3];
        struct backend_job bj;
        pthread_t thread;
        bool thread_running;
        int cancel_fd;
        int done_fd; /* readable once backend_run returned */
        /* The agent's connection. */
        int sock;
        struct sw_stream in;
};

struct session_registry {
        struct session_registry_options o;
        pthread_mutex_t lock;
        pthread_cond_t changed;
        struct session *list;
        size_t n;
        pthread_t thread;
        bool thread_running, stopping;
        uint64_t last_renew_ms;
};

/* ---- session.c ---- */
/* Makes s's sandbox and connects to its agent (s->home, spec and bj
 * filled in); the lease was taken. */
int session_boot(struct session *s, struct bc_error *err);
/* Ends s: a final checkpoint when checkpoint is set (its files are never
 * lost with the sandbox), its lease released with reason, the sandbox
 * stopped, its home released; then frees it.  s is out of the list. */
void session_stop(struct session *s, const char *reason, bool checkpoint);
/* Whether s's sandbox and agent are still there (an idle one can die:
 * its agent killed by a process it left, the OOM killer). */
bool session_alive(const struct session *s);

/* ---- registry.c ---- */
/* One statement on the registry's pool; NULL with err set. */
PGresult *session_db(struct session_registry *r, const char *sql, int n, const char *const *p,
                     struct bc_error *err);

#endif
