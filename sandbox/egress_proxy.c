/* The supervisor's side of --network allow (see egress-internal.h): the
 * DNS socket and the listeners of the sandbox's namespace, served from the
 * worker's namespace.  Each accepted connection goes to egress_connect.c,
 * which decides and connects; then its bytes are copied both ways through
 * two bounded buffers and counted.  Refusals are counted and the first
 * distinct ones named.  Single-threaded, on the supervisor's poll loop. */
#include "sandbox/egress-internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/netguard.h"
#include "sandbox/sandbox.h"

struct half {
        uint8_t *buf;
        size_t len, off;
        bool eof; /* the reading side is done */
};

struct conn {
        int in, out;                   /* the job's side (-1: free slot), the host's side */
        struct egress_pending pending; /* a name being resolved: out is -1 */
        bool connecting;
        struct half up, down; /* in -> out, out -> in */
};

struct sbx_egress {
        struct netallow_rule *rules;
        size_t n_rules;
        struct netguard guard;         /* zero: special addresses refused */
        struct netguard private_guard; /* the private ranges let through */
        struct egress_resolver *resolver;
        struct egress_policy pol; /* the above, for egress_connect.c */
        int fds[EGRESS_MAX_FDS];  /* [0] DNS, then the listeners */
        size_t n_fds;
        struct conn conns[EGRESS_MAX_CONNS];
        size_t polled[EGRESS_MAX_CONNS]; /* the conns of the last poll, in order */
        size_t n_polled;
        struct egress_names names;
        uint64_t bytes_out, bytes_in, connections, refused;
        char *refused_list[EGRESS_REFUSED_KEPT + 1]; /* + the rate limit's */
        size_t n_refused_list;
        bool draining; /* the job is gone: sbx_egress_drain */
};

static void refuse(struct sbx_egress *e, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void refuse(struct sbx_egress *e, const char *fmt, ...)
{
        e->refused++;
        char buf[NETALLOW_NAME_MAX + 128];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        /* The rate limit's refusals are one entry, the first one's. */
        bool limited = strncmp(buf, EGRESS_RATE_LIMITED, strlen(EGRESS_RATE_LIMITED)) == 0;
        for (size_t i = 0; i < e->n_refused_list; i++)
                if (strcmp(e->refused_list[i], buf) == 0 ||
                    (limited && strncmp(e->refused_list[i], EGRESS_RATE_LIMITED,
                                        strlen(EGRESS_RATE_LIMITED)) == 0))
                        return;
        if (e->n_refused_list < (size_t)EGRESS_REFUSED_KEPT + (limited ? 1 : 0)) {
                char *s = strdup(buf);
                if (s)
                        e->refused_list[e->n_refused_list++] = s;
        }
}

/* What a name marked private may resolve to: the private networks, not
 * loopback, link-local or the other special ranges. */
#define PRIVATE_RANGES "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7"

struct sbx_egress *sbx_egress_new(const struct helper_config *c, const int *fds, size_t n,
                                  struct sbx_cgroup *cg)
{
        struct sbx_egress *e = calloc(1, sizeof(*e));
        struct bc_error err = { 0 };
        if (e) {
                e->rules = malloc(c->n_net_rules * sizeof(*e->rules) + 1);
                /* The job's own host ids when the sandbox has them: the
                 * lookups are then charged to the job's per-user limits
                 * too, and share an id with no other job. */
                uid_t uid = c->host.own ? c->host.uid : EGRESS_RESOLVER_UID;
                gid_t gid = c->host.own ? c->host.gid : EGRESS_RESOLVER_GID;
                e->resolver = egress_resolver_new(cg, uid, gid);
        }
        if (!e || !e->rules || !e->resolver || n == 0 || n > EGRESS_MAX_FDS ||
            netguard_allow_list(&e->private_guard, PRIVATE_RANGES, &err) < 0) {
                bc_error_clear(&err);
                if (e) {
                        free(e->rules);
                        egress_resolver_free(e->resolver);
                }
                free(e);
                for (size_t i = 0; i < n; i++)
                        close(fds[i]);
                return NULL;
        }
        memcpy(e->rules, c->net_rules, c->n_net_rules * sizeof(*e->rules));
        e->n_rules = c->n_net_rules;
        e->guard.allow_all = c->net_private;
        e->pol = (struct egress_policy){ .rules = e->rules,
                                         .n_rules = e->n_rules,
                                         .guard = &e->guard,
                                         .private_guard = &e->private_guard,
                                         .names = &e->names,
                                         .resolver = e->resolver };
        memcpy(e->fds, fds, n * sizeof(int));
        e->n_fds = n;
        for (size_t i = 0; i < EGRESS_MAX_CONNS; i++)
                e->conns[i] = (struct conn){ .in = -1, .out = -1, .pending.sock = -1 };
        return e;
}

static void conn_close(struct conn *k)
{
        if (k->in >= 0)
                close(k->in);
        if (k->out >= 0)
                close(k->out);
        egress_pending_abort(&k->pending);
        free(k->up.buf);
        free(k->down.buf);
        *k = (struct conn){ .in = -1, .out = -1, .pending.sock = -1 };
}

void sbx_egress_free(struct sbx_egress *e)
{
        if (!e)
                return;
        for (size_t i = 0; i < EGRESS_MAX_CONNS; i++)
                if (e->conns[i].in >= 0)
                        conn_close(&e->conns[i]);
        for (size_t i = 0; i < e->n_fds; i++)
                close(e->fds[i]);
        for (size_t i = 0; i < e->n_refused_list; i++)
                free(e->refused_list[i]);
        egress_names_free(&e->names);
        egress_resolver_free(e->resolver);
        free(e->rules);
        free(e);
}

void sbx_egress_status(const struct sbx_egress *e, struct sandbox_status *st)
{
        st->has_network = true;
        st->net_bytes_out = e->bytes_out;
        st->net_bytes_in = e->bytes_in;
        st->net_connections = e->connections;
        st->net_refused = e->refused;
        st->net_refused_list = calloc(e->n_refused_list + 1, sizeof(char *));
        for (size_t i = 0; st->net_refused_list && i < e->n_refused_list; i++)
                if ((st->net_refused_list[st->n_net_refused_list] = strdup(e->refused_list[i])))
                        st->n_net_refused_list++;
}

/* ---- DNS ------------------------------------------------------------------ */

static void on_dns(struct sbx_egress *e)
{
        for (int i = 0; i < 64; i++) { /* a burst, then the others get their turn */
                uint8_t q[513], out[EGRESS_DNS_OUT];
                struct sockaddr_storage peer;
                socklen_t plen = sizeof(peer);
                ssize_t n = recvfrom(e->fds[0], q, sizeof(q), 0, (struct sockaddr *)&peer, &plen);
                if (n < 0)
                        return;
                char name[NETALLOW_NAME_MAX + 1];
                bool refused = false;
                size_t len = egress_dns_answer(e->rules, e->n_rules, &e->names, q, (size_t)n, out,
                                               name, &refused);
                if (refused)
                        refuse(e, "%s (DNS)", name);
                if (len)
                        (void)sendto(e->fds[0], out, len, MSG_DONTWAIT, (struct sockaddr *)&peer,
                                     plen);
        }
}

static void on_listener(struct sbx_egress *e, int lfd)
{
        for (int i = 0; i < 16; i++) {
                int in = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (in < 0)
                        return;
                /* The job's side of a connection is on this host: small
                 * fixed kernel buffers cost it no throughput, and they
                 * bound what a job that stops reading (or whose server
                 * stops reading) parks in the supervisor's sockets.
                 * Autotuned, each grows to megabytes (tcp_wmem, tcp_rmem),
                 * charged to the worker's memory, not the job's: 64
                 * connections that never read held 4 MiB each. */
                int buf = EGRESS_SOCKBUF;
                (void)setsockopt(in, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
                (void)setsockopt(in, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
                struct conn *k = NULL;
                for (size_t j = 0; j < EGRESS_MAX_CONNS && !k; j++)
                        if (e->conns[j].in < 0)
                                k = &e->conns[j];
                uint8_t *up = k ? malloc(EGRESS_BUF) : NULL, *down = k ? malloc(EGRESS_BUF) : NULL;
                if (!k || !up || !down) {
                        free(up);
                        free(down);
                        refuse(e, "more than %d connections at once", EGRESS_MAX_CONNS);
                        close(in);
                        continue;
                }
                char why[NETALLOW_NAME_MAX + 128] = "";
                struct egress_pending pending = { .sock = -1 };
                int out = egress_open_upstream(&e->pol, in, &pending, why, sizeof(why));
                if (why[0])
                        refuse(e, "%s", why);
                if (out < 0 && out != EGRESS_PENDING) {
                        free(up);
                        free(down);
                        close(in); /* the job sees its connection closed */
                        continue;
                }
                if (out >= 0)
                        e->connections++;
                *k = (struct conn){ .in = in,
                                    .out = out < 0 ? -1 : out,
                                    .pending = pending,
                                    .connecting = true,
                                    .up = { .buf = up },
                                    .down = { .buf = down } };
        }
}

/* ---- Copying --------------------------------------------------------------- */

size_t sbx_egress_poll(struct sbx_egress *e, struct pollfd *p)
{
        size_t n = 0;
        for (size_t i = 0; i < e->n_fds; i++)
                p[n++] = (struct pollfd){ .fd = e->draining ? -1 : e->fds[i], .events = POLLIN };
        e->n_polled = 0;
        for (size_t i = 0; i < EGRESS_MAX_CONNS; i++) {
                struct conn *k = &e->conns[i];
                if (k->in < 0)
                        continue;
                e->polled[e->n_polled++] = i;
                short ein = 0, eout = 0;
                if (k->pending.sock >= 0) {
                        p[n++] = (struct pollfd){ .fd = -1 };
                        p[n++] = (struct pollfd){ .fd = k->pending.sock, .events = POLLIN };
                        continue;
                }
                if (k->connecting) {
                        eout = POLLOUT;
                } else {
                        if (k->up.len == 0 && !k->up.eof)
                                ein |= POLLIN;
                        if (k->up.len > 0)
                                eout |= POLLOUT;
                        /* Draining, the job is gone: it takes no answer. */
                        if (!e->draining && k->down.len > 0)
                                ein |= POLLOUT;
                        if (!e->draining && k->down.len == 0 && !k->down.eof)
                                eout |= POLLIN;
                }
                /* A side we want nothing from is not polled: its POLLHUP
                 * would wake us again and again (a job that closed while
                 * the server has yet to answer). */
                p[n++] = (struct pollfd){ .fd = ein ? k->in : -1, .events = ein };
                p[n++] = (struct pollfd){ .fd = eout ? k->out : -1, .events = eout };
        }
        return n;
}

/* Moves what from's buffer can take, then what it holds, to `to`.
 * Returns -1 when the connection is broken. */
static int pump(int from, int to, struct half *h, uint64_t *count)
{
        if (h->len == 0 && !h->eof) {
                ssize_t n = read(from, h->buf, EGRESS_BUF);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -1;
                if (n == 0) {
                        h->eof = true;
                        shutdown(to, SHUT_WR);
                } else if (n > 0) {
                        h->len = (size_t)n;
                        h->off = 0;
                        *count += (uint64_t)n;
                }
        }
        while (h->len > 0) {
                ssize_t n = send(to, h->buf + h->off, h->len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -1;
                h->off += (size_t)n;
                h->len -= (size_t)n;
                if (h->len == 0 && h->eof)
                        shutdown(to, SHUT_WR);
        }
        return 0;
}

static void on_conn(struct sbx_egress *e, struct conn *k, short rin, short rout)
{
        if (k->pending.sock >= 0) {
                char why[NETALLOW_NAME_MAX + 128] = "";
                int fd = egress_pending_take(&e->pol, &k->pending, why, sizeof(why));
                if (fd == -EAGAIN)
                        return;
                if (why[0])
                        refuse(e, "%s", why);
                if (fd < 0) {
                        conn_close(k);
                        return;
                }
                k->out = fd;
                e->connections++;
                return; /* connecting: polled for POLLOUT next */
        }
        if (k->connecting) {
                if (!rout)
                        return;
                int err = 0;
                socklen_t l = sizeof(err);
                if (getsockopt(k->out, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err) {
                        conn_close(k);
                        return;
                }
                k->connecting = false;
        }
        bool broken = (rin & POLLERR) || (rout & POLLERR);
        if (!broken && (rin || rout))
                broken = pump(k->in, k->out, &k->up, &e->bytes_out) < 0 ||
                         (!e->draining && pump(k->out, k->in, &k->down, &e->bytes_in) < 0);
        bool up_done = k->up.eof && !k->up.len;
        if (broken || (up_done && (e->draining || (k->down.eof && !k->down.len))))
                conn_close(k);
}

void sbx_egress_dispatch(struct sbx_egress *e, const struct pollfd *p, size_t n)
{
        size_t i = 0;
        for (size_t f = 0; f < e->n_fds && i < n; f++, i++) {
                if (!p[i].revents)
                        continue;
                if (f == 0)
                        on_dns(e);
                else
                        on_listener(e, e->fds[f]);
        }
        /* Connections in the order sbx_egress_poll listed them; those
         * accepted above (into slots that were free then) are not in p. */
        for (size_t c = 0; c < e->n_polled && i + 1 < n; c++, i += 2) {
                struct conn *k = &e->conns[e->polled[c]];
                if (k->in >= 0 && (p[i].revents || p[i + 1].revents))
                        on_conn(e, k, p[i].revents, p[i + 1].revents);
        }
}

/* ---- After the job ------------------------------------------------------ */

void sbx_egress_drain(struct sbx_egress *e, int timeout_ms)
{
        e->draining = true;
        uint64_t deadline = bc_mono_ms() + (uint64_t)timeout_ms;
        for (;;) {
                struct pollfd p[EGRESS_MAX_POLL];
                size_t n = sbx_egress_poll(e, p);
                int64_t left = (int64_t)(deadline - bc_mono_ms());
                if (e->n_polled == 0 || left <= 0)
                        return;
                int r = poll(p, n, (int)left);
                if (r < 0 && errno != EINTR)
                        return;
                if (r > 0)
                        sbx_egress_dispatch(e, p, n);
        }
}
