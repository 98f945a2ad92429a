/* One live session: its sandbox, which runs boxcar-session-agent as its
 * only command on a thread of its own for the session's life, and the
 * agent's connection, over which each of the session's jobs is run.
 *
 * The agent connects to a socket the worker listens on in the session's
 * meta directory (mounted read-only at BACKEND_META_DIR inside): the
 * worker never connects to anything inside the sandbox, whose paths the
 * session's jobs control.  The listening socket is closed and unlinked
 * once the agent is connected, so nothing else in the sandbox can take
 * its place later. */
#include "worker/session/session-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "worker/config/config.h"
#include "worker/log/log.h"
#include "worker/workdir/janitor.h"

#define AGENT_NAME "boxcar-session-agent"
#define AGENT_SOCKET "agent.sock"
/* The sandbox made and the agent connected by then, or the start failed. */
#define BOOT_TIMEOUT_MS 30000
/* After its connection closed, the agent (and the sandbox with it) has
 * this long to exit before it is killed. */
#define STOP_GRACE_MS 3000

/* The agent beside the sandbox helper (both installed together). */
static char *agent_path(const struct worker_config *cfg)
{
        const char *helper = cfg->sandbox_helper;
        const char *slash = strrchr(helper, '/');
        char *p = NULL;
        if (!slash)
                return strdup(AGENT_NAME);
        if (asprintf(&p, "%.*s/" AGENT_NAME, (int)(slash - helper), helper) < 0)
                return NULL;
        return p;
}

/* The agent into the session's meta directory: the sandbox shows only
 * that of boxcar's files, whatever its root (an image has no boxcar). */
static int install_agent(const struct session *s, struct bc_error *err)
{
        _cleanup_free_ char *src = agent_path(s->reg->o.cfg), *dst = NULL;
        if (!src || asprintf(&dst, "%s/" AGENT_NAME, s->home.meta) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        _cleanup_fd_ int in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "%s: %m (installed beside %s)",
                                    src, s->reg->o.cfg->sandbox_helper);
        struct stat st;
        if (fstat(in, &st) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "%s: %m", src);
        _cleanup_fd_ int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        if (out < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "%s: %m", dst);
        off_t off = 0;
        while (off < st.st_size) {
                ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
                if (n <= 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, n < 0 ? errno : EIO,
                                            "copy %s: %m", dst);
        }
        return 0;
}

static int listen_agent(const struct session *s, char **ret_path, struct bc_error *err)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/" AGENT_SOCKET, s->home.meta) < 0)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (strlen(path) >= sizeof(a.sun_path))
                return bc_error_set(err, BC_SANDBOX_SETUP, ENAMETOOLONG,
                                    "%s: too long for a unix socket (a shorter --work-dir)", path);
        memcpy(a.sun_path, path, strlen(path) + 1);
        (void)unlink(path);
        _cleanup_fd_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "%s: %m", path);
        /* The agent runs as the job's uid. */
        if (chmod(path, 0666) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "chmod %s: %m", path);
        *ret_path = steal_pointer(&path);
        return steal_fd(&fd);
}

/* The agent's own output (it says little: a failure to start). */
static void on_agent_output(void *ctx, int stream, const char *data, size_t len)
{
        const struct session *s = ctx;
        if (stream == 0 || len == 0)
                return;
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(len < 500 ? len : 500), data);
        log_event(LOG_WARN, "session.agent", "session", s->id, "output", line, NULL);
}

static void *sandbox_thread(void *arg)
{
        struct session *s = arg;
        struct backend_result res;
        struct bc_error err = BC_ERROR_INIT;
        int r = backend_run(s->reg->o.backend, &s->bj, &res, &err);
        if (r < 0)
                log_event(LOG_WARN, "session.sandbox", "session", s->id, "error",
                          bc_error_message(&err), NULL);
        else if (res.proc.exit_code != 0 && !res.proc.cancelled)
                log_event(LOG_WARN, "session.sandbox", "session", s->id, "effect",
                          "the session's sandbox ended", LOG_INT("exit_code", res.proc.exit_code),
                          NULL);
        if (r >= 0)
                backend_result_done(&res);
        bc_error_clear(&err);
        uint64_t one = 1;
        (void)!write(s->done_fd, &one, sizeof(one));
        return NULL;
}

/* Waits for fd to be readable, or the sandbox to end, or timeout_ms. */
static int wait_readable(const struct session *s, int fd, int timeout_ms, struct bc_error *err)
{
        uint64_t deadline = bc_mono_ms() + (uint64_t)timeout_ms;
        for (;;) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
                                       { .fd = s->done_fd, .events = POLLIN } };
                uint64_t now = bc_mono_ms();
                int left = now >= deadline ? 0 : (int)(deadline - now);
                int n = poll(p, 2, left);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "poll: %m");
                if (p[0].revents)
                        return 0;
                if (p[1].revents)
                        return bc_error_set(err, BC_SANDBOX_SETUP, EPIPE,
                                            "the session's sandbox ended before its agent "
                                            "was ready (see the worker's log)");
                if (n == 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, ETIMEDOUT,
                                            "the session's agent did not connect within %d s",
                                            BOOT_TIMEOUT_MS / 1000);
        }
}

static int expect_hello(struct session *s, struct bc_error *err)
{
        struct sw_header h;
        const char *payload;
        int r = session_recv(s, -1, BOOT_TIMEOUT_MS, &h, &payload, err);
        if (r == 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, ETIMEDOUT,
                                    "the session's agent did not say hello");
        if (r < 0)
                return r;
        if (h.type != SA_HELLO || h.len != sizeof(SW_VERSION) ||
            memcmp(payload, SW_VERSION, sizeof(SW_VERSION)) != 0)
                return bc_error_set(
                        err, BC_SANDBOX_SETUP, EPROTO,
                        "the session's agent speaks another protocol (expected \"%s\")",
                        SW_VERSION);
        return 0;
}

int session_boot(struct session *s, struct bc_error *err)
{
        int r = install_agent(s, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *sock_path = NULL;
        _cleanup_fd_ int lfd = listen_agent(s, &sock_path, err);
        if (lfd < 0)
                return lfd;
        s->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->cancel_fd < 0 || s->done_fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "eventfd: %m");
        s->agent_argv[0] = BACKEND_META_DIR "/" AGENT_NAME;
        s->agent_argv[1] = BACKEND_META_DIR "/" AGENT_SOCKET;
        s->agent_argv[2] = NULL;
        s->bj.argv = s->agent_argv;
        /* A backstop: the registry ends a session at its lifetime with a
         * checkpoint, this kills one that did not end then. */
        s->bj.timeout_s = s->reg->o.cfg->session_max_lifetime_s + 120;
        s->bj.cancel_fd = s->cancel_fd;
        s->bj.on_output = on_agent_output;
        s->bj.output_ctx = s;
        s->bj.claim_wait = NULL;
        s->bj.claim_fd = -1;
        if (pthread_create(&s->thread, NULL, sandbox_thread, s) != 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, EAGAIN, "cannot start a thread");
        s->thread_running = true;
        r = wait_readable(s, lfd, BOOT_TIMEOUT_MS, err);
        if (r >= 0) {
                s->sock = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (s->sock < 0)
                        r = bc_error_set(err, BC_SANDBOX_SETUP, errno, "accept: %m");
        }
        (void)unlink(sock_path);
        if (r >= 0)
                r = expect_hello(s, err);
        return r < 0 ? bc_error_prefix(err, "session %s", s->id) : 0;
}

bool session_alive(const struct session *s)
{
        struct pollfd p[2] = { { .fd = s->sock, .events = POLLRDHUP },
                               { .fd = s->done_fd, .events = POLLIN } };
        if (s->sock < 0 || poll(p, 2, 0) < 0)
                return false;
        return !(p[0].revents & (POLLHUP | POLLRDHUP | POLLERR)) && !(p[1].revents & POLLIN);
}

uint32_t session_next_seq(struct session *s)
{
        return ++s->seq;
}

int session_send(struct session *s, const struct dynbuf *frames, struct bc_error *err)
{
        size_t off = 0;
        while (off < frames->len) {
                ssize_t n = send(s->sock, frames->data + off, frames->len - off, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        struct pollfd p = { .fd = s->sock, .events = POLLOUT };
                        (void)poll(&p, 1, 1000);
                        continue;
                }
                if (n <= 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, n < 0 ? errno : EPIPE,
                                            "the session's agent is gone: %s",
                                            strerror(n < 0 ? errno : EPIPE));
                off += (size_t)n;
        }
        return 0;
}

int session_recv(struct session *s, int wait_fd, int timeout_ms, struct sw_header *ret_hdr,
                 const char **ret_payload, struct bc_error *err)
{
        uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : bc_mono_ms() + (uint64_t)timeout_ms;
        for (;;) {
                int r = sw_stream_take(&s->in, ret_hdr, ret_payload);
                if (r < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, EPROTO,
                                            "the session's agent sent a malformed frame");
                if (r > 0)
                        return 1;
                struct pollfd p[2] = { { .fd = s->sock, .events = POLLIN },
                                       { .fd = wait_fd, .events = POLLIN } };
                uint64_t now = bc_mono_ms();
                int left = deadline == UINT64_MAX ? -1
                           : now >= deadline      ? 0
                                                  : (int)(deadline - now);
                int n = poll(p, wait_fd >= 0 ? 2 : 1, left);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "poll: %m");
                if (n == 0 || (wait_fd >= 0 && p[1].revents))
                        return 0;
                char buf[65536];
                ssize_t got = recv(s->sock, buf, sizeof(buf), MSG_DONTWAIT);
                if (got < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (got <= 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, got < 0 ? errno : EPIPE,
                                            "the session's agent is gone (its sandbox ended, or "
                                            "a job of the session killed it)");
                if (sw_stream_feed(&s->in, buf, (size_t)got) < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, EMSGSIZE,
                                            "the session's agent sent an oversized frame");
        }
}

static PGresult *registry_exec(void *ctx, const char *sql, int n, const char *const *p,
                               struct bc_error *err)
{
        return session_db(ctx, sql, n, p, err);
}

/* The workspace as it is now, recorded as the session's version (not a
 * job's): what the session's processes changed since its last job is
 * kept too. */
/* Whether this worker instance still holds s's lease: a final checkpoint
 * of a session another worker may run by now would move its storage's
 * head back. */
static bool still_held(struct session *s)
{
        struct session_registry *r = s->reg;
        struct bc_error err = BC_ERROR_INIT;
        const char *p[] = { s->scope, s->id, r->o.worker_id, r->o.instance };
        PGresult *res = session_db(r,
                                   "select 1 from boxcar.sessions where scope = $1 and id = $2"
                                   " and holder = $3 and holder_instance = $4"
                                   " and held_until > now()",
                                   4, p, &err);
        bool held = res && PQntuples(res) == 1;
        PQclear(res);
        if (!held)
                log_event(LOG_WARN, "session.checkpoint", "session", s->id, "effect",
                          "not saved: this worker no longer holds the session",
                          err.message ? "error" : NULL, bc_error_message(&err), NULL);
        bc_error_clear(&err);
        return held;
}

static void final_checkpoint(struct session *s)
{
        struct session_registry *r = s->reg;
        struct bc_error err = BC_ERROR_INIT;
        struct storage_pack_limits lim;
        storage_pack_limits_default(&lim);
        lim.max_bytes = s->home.pack_max_bytes;
        lim.max_entries = s->home.pack_max_entries;
        const struct store_version *base = s->checkpoint.sha256[0] ? &s->checkpoint : NULL;
        struct store_save_args args = { .dir = s->home.ws,
                                        .upper = s->home.upper,
                                        .base = base,
                                        .tmp_dir = s->home.dir,
                                        .limits = &lim };
        struct store_db db = { registry_exec, r };
        struct store_saved saved = { 0 };
        int rc = store_save_version(r->o.store, &db, &args, &saved, &err);
        if (rc >= 0 && !saved.unchanged)
                rc = store_record_version(&db, s->storage, s->scope, &saved.v,
                                          base ? base->sha256 : NULL, &err);
        /* Cached as the session's next start (here, after an idle end or
         * an eviction) will need it: built from the overlay's lower and
         * upper, its cost the names and changed bytes, not the tree's. */
        if (rc >= 0 && s->home.base_entry && s->home.upper && r->o.store->artifacts) {
                int p = storage_cache_promote(r->o.store->artifacts, s->home.base_entry,
                                              s->home.ws, s->home.upper, saved.stack_id);
                if (p < 0)
                        log_event(LOG_WARN, "session.cache", "session", s->id, "error",
                                  strerror(-p), "effect",
                                  "its next start here downloads its last checkpoint", NULL);
        }
        if (rc < 0)
                log_event(LOG_WARN, "session.checkpoint", "session", s->id, "error",
                          bc_error_message(&err), "effect",
                          "what the session changed after its last job is not saved", NULL);
        else if (!saved.unchanged)
                log_event(LOG_INFO, "session.checkpoint", "session", s->id, "sha256",
                          saved.v.sha256, NULL);
        store_saved_done(&saved);
        bc_error_clear(&err);
}

static void release_lease(struct session *s, const char *reason)
{
        struct session_registry *r = s->reg;
        struct bc_error err = BC_ERROR_INIT;
        const char *p[] = { r->o.worker_id, r->o.instance, s->scope, s->id, reason };
        PGresult *res = session_db(r, "select boxcar.session_release($1, $2, $3, $4, $5)", 5, p,
                                   &err);
        if (!res)
                log_event(LOG_WARN, "session.release", "session", s->id, "error",
                          bc_error_message(&err), "effect",
                          "its next job waits for the lease to lapse", NULL);
        PQclear(res);
        bc_error_clear(&err);
}

static void stop_sandbox(struct session *s)
{
        if (s->sock >= 0) {
                close(s->sock); /* the agent exits at EOF, and the sandbox with it */
                s->sock = -1;
        }
        if (!s->thread_running)
                return;
        struct pollfd p = { .fd = s->done_fd, .events = POLLIN };
        while (poll(&p, 1, STOP_GRACE_MS) < 0 && errno == EINTR)
                ;
        if (!(p.revents & POLLIN)) {
                uint64_t one = 1;
                (void)!write(s->cancel_fd, &one, sizeof(one));
        }
        pthread_join(s->thread, NULL);
        s->thread_running = false;
}

static void free_session(struct session *s)
{
        if (s->home.release)
                janitor_run_later(s->home.release, s->home.resources);
        free(s->home.dir);
        free(s->home.ws);
        free(s->home.meta);
        free(s->home.upper);
        store_version_done(&s->checkpoint);
        spec_free(s->spec);
        if (s->volume_paths)
                for (size_t i = 0; s->volume_paths[i]; i++)
                        free(s->volume_paths[i]);
        free(s->volume_paths);
        free(s->image_path);
        free(s->scratch);
        free(s->image_sha);
        if (s->cancel_fd >= 0)
                close(s->cancel_fd);
        if (s->done_fd >= 0)
                close(s->done_fd);
        sw_stream_done(&s->in);
        free(s->scope);
        free(s->id);
        free(s->storage);
        free(s);
}

void session_stop(struct session *s, const char *reason, bool checkpoint)
{
        /* The sandbox first: nothing writes to the workspace (which stays
         * mounted here until its release) while it is saved and cached. */
        stop_sandbox(s);
        if (checkpoint && !s->broken && s->home.ws && still_held(s))
                final_checkpoint(s);
        if (reason)
                release_lease(s, reason);
        log_event(LOG_INFO, "session.stopped", "session", s->id, "scope", s->scope, "reason",
                  reason ? reason : "lost", NULL);
        free_session(s);
}

const char *session_ws(const struct session *s)
{
        return s->home.ws;
}

const char *session_upper(const struct session *s)
{
        return s->home.upper;
}

const char *session_dir(const struct session *s)
{
        return s->home.dir;
}

const char *session_meta(const struct session *s)
{
        return s->home.meta;
}

const struct store_version *session_checkpoint(const struct session *s)
{
        return s->checkpoint.sha256[0] ? &s->checkpoint : NULL;
}

void session_set_checkpoint(struct session *s, const struct store_version *v)
{
        store_version_done(&s->checkpoint);
        s->checkpoint = *v;
        s->checkpoint.s3_key = v->s3_key ? strdup(v->s3_key) : NULL;
}

void session_pack_limits(const struct session *s, uint64_t *ret_bytes, uint64_t *ret_entries)
{
        *ret_bytes = s->home.pack_max_bytes;
        *ret_entries = s->home.pack_max_entries;
}

void session_set_idle_timeout(struct session *s, double idle_timeout_s)
{
        s->idle_timeout_s = idle_timeout_s;
}

bool session_first_job(const struct session *s)
{
        return s->first_job;
}

bool session_resumed(const struct session *s)
{
        return s->resumed;
}
