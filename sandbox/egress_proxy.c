/* The supervisor's side of --network allow (see egress-internal.h): the
 * DNS socket and the listeners of the sandbox's namespace, served from the
 * worker's namespace.  Each accepted connection is checked on where the
 * job really connected (getsockname: the synthetic address of a name, or
 * an address under a CIDR rule, and the port), connected from here and
 * copied both ways through two bounded buffers.  Names are resolved here,
 * and an address the SSRF guard refuses (loopback, private, link-local,
 * ...) is not connected unless --network-private: an allowed public name
 * that resolves to 169.254.169.254 reaches nothing.  An address under a
 * CIDR rule is connected as written when the rule names its special
 * network (10.2.0.0/16) or the address is an ordinary one; a wider rule
 * (0.0.0.0/0) does not open loopback or the metadata service.  Single-threaded, on
 * the supervisor's poll loop; getaddrinfo blocks that loop (this job's
 * proxy only) while it resolves. */
#include "sandbox/egress-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/netguard.h"
#include "sandbox/sandbox.h"

struct half {
        uint8_t *buf;
        size_t len, off;
        bool eof;  /* the reading side is done */
};

struct conn {
        int in, out;     /* the job's side, the host's side; -1: free slot */
        bool connecting;
        struct half up, down;  /* in -> out, out -> in */
};

struct sbx_egress {
        struct netallow_rule *rules;
        size_t n_rules;
        struct netguard guard;  /* zero: special addresses refused */
        int fds[EGRESS_MAX_FDS];  /* [0] DNS, then the listeners */
        size_t n_fds;
        struct conn conns[EGRESS_MAX_CONNS];
        size_t polled[EGRESS_MAX_CONNS];  /* the conns of the last poll, in order */
        size_t n_polled;
        struct egress_names names;
        uint64_t bytes_out, bytes_in, connections, refused;
        char *refused_list[EGRESS_REFUSED_KEPT];
        size_t n_refused_list;
};

static void refuse(struct sbx_egress *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct sbx_egress *e, const char *fmt, ...)
{
        e->refused++;
        char buf[NETALLOW_NAME_MAX + 128];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        for (size_t i = 0; i < e->n_refused_list; i++)
                if (strcmp(e->refused_list[i], buf) == 0)
                        return;
        if (e->n_refused_list < EGRESS_REFUSED_KEPT) {
                char *s = strdup(buf);
                if (s)
                        e->refused_list[e->n_refused_list++] = s;
        }
}

struct sbx_egress *sbx_egress_new(const struct helper_config *c, const int *fds, size_t n)
{
        struct sbx_egress *e = calloc(1, sizeof(*e));
        if (e)
                e->rules = malloc(c->n_net_rules * sizeof(*e->rules) + 1);
        if (!e || !e->rules || n == 0 || n > EGRESS_MAX_FDS) {
                if (e)
                        free(e->rules);
                free(e);
                for (size_t i = 0; i < n; i++)
                        close(fds[i]);
                return NULL;
        }
        memcpy(e->rules, c->net_rules, c->n_net_rules * sizeof(*e->rules));
        e->n_rules = c->n_net_rules;
        e->guard.allow_all = c->net_private;
        memcpy(e->fds, fds, n * sizeof(int));
        e->n_fds = n;
        for (size_t i = 0; i < EGRESS_MAX_CONNS; i++)
                e->conns[i].in = e->conns[i].out = -1;
        return e;
}

static void conn_close(struct conn *k)
{
        if (k->in >= 0)
                close(k->in);
        if (k->out >= 0)
                close(k->out);
        free(k->up.buf);
        free(k->down.buf);
        *k = (struct conn){ .in = -1, .out = -1 };
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
        for (int i = 0; i < 64; i++) {  /* a burst, then the others get their turn */
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

/* ---- Connecting ------------------------------------------------------------ */

static bool special(uint32_t addr, const char **ret_range)
{
        static const struct netguard none;  /* refuses every special address */
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(addr) };
        return !netguard_permits(&none, (struct sockaddr *)&sa, sizeof(sa), ret_range);
}

/* Whether a CIDR rule names a special-purpose network itself: all of it
 * inside one such range (10.2.0.0/16:5432, 127.0.0.1:8080).  The queue's
 * cap let the job ask for exactly that network.  A wider rule
 * (0.0.0.0/0:443) reaches its special addresses only with
 * --network-private: "anything on 443" does not mean the metadata service. */
static bool names_special_network(const struct netallow_rule *r)
{
        uint32_t last = r->prefix >= 32 ? r->addr
                        : r->prefix ? r->addr | (0xffffffffu >> r->prefix) : 0xffffffffu;
        const char *a = NULL, *b = NULL;
        return special(r->addr, &a) && special(last, &b) && a && b && strcmp(a, b) == 0;
}

/* 1: allowed; 0: no rule; -1: only by rules wider than the special range
 * addr lies in (*ret_range names it). */
static int addr_allowed(const struct sbx_egress *e, uint32_t addr, uint16_t port,
                        const char **ret_range)
{
        int r = 0;
        for (size_t i = 0; i < e->n_rules; i++) {
                if (!netallow_match_addr(&e->rules[i], addr, port))
                        continue;
                if (e->guard.allow_all || !special(addr, ret_range) ||
                    names_special_network(&e->rules[i]))
                        return 1;
                r = -1;
        }
        return r;
}

static bool name_port_allowed(const struct sbx_egress *e, const char *name, uint16_t port)
{
        for (size_t i = 0; i < e->n_rules; i++)
                if (netallow_match_name(&e->rules[i], name, port))
                        return true;
        return false;
}

static int connect_to(const struct sockaddr *sa, socklen_t len)
{
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -1;
        if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
                close(fd);
                return -1;
        }
        return fd;
}

struct refusal {
        char addr[NETGUARD_ADDR_TEXT];  /* the first address the guard refused */
        const char *range;
};

/* The first address of res in family that the guard lets through,
 * connected; -1 when none. */
static int connect_family(const struct sbx_egress *e, const struct addrinfo *res, int family,
                          struct refusal *no)
{
        for (const struct addrinfo *a = res; a; a = a->ai_next) {
                if (a->ai_family != family)
                        continue;
                const char *range = NULL;
                if (netguard_permits(&e->guard, a->ai_addr, a->ai_addrlen, &range))
                        return connect_to(a->ai_addr, a->ai_addrlen);
                if (!no->addr[0]) {
                        netguard_addr_text(a->ai_addr, a->ai_addrlen, no->addr);
                        no->range = range;
                }
        }
        return -1;
}

/* A name: resolved on the host, the first address the guard lets through
 * connected (IPv4 first: the job asked for an IPv4 address).  -1 (refused
 * and recorded) otherwise. */
static int connect_name(struct sbx_egress *e, const char *name, uint16_t port)
{
        char service[8];
        snprintf(service, sizeof(service), "%u", port);
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        if (getaddrinfo(name, service, &hints, &res) != 0) {
                refuse(e, "%s:%u (does not resolve)", name, port);
                return -1;
        }
        struct refusal no = { .addr = "" };
        int fd = connect_family(e, res, AF_INET, &no);
        if (fd < 0)
                fd = connect_family(e, res, AF_INET6, &no);
        freeaddrinfo(res);
        if (fd < 0 && no.addr[0])
                refuse(e, "%s:%u (resolves to %s, %s)", name, port, no.addr,
                       no.range ? no.range : "a special-purpose address");
        return fd;
}

/* Where the job's accepted connection was going, and the host-side socket
 * for it when the rules allow it; -1 when refused (recorded) or failed. */
static int open_upstream(struct sbx_egress *e, int in)
{
        struct sockaddr_in dst;
        socklen_t len = sizeof(dst);
        if (getsockname(in, (struct sockaddr *)&dst, &len) < 0 || dst.sin_family != AF_INET)
                return -1;
        uint32_t addr = ntohl(dst.sin_addr.s_addr);
        uint16_t port = ntohs(dst.sin_port);
        const char *name = egress_names_lookup(&e->names, addr);
        if (name) {
                if (!name_port_allowed(e, name, port)) {
                        refuse(e, "%s:%u", name, port);
                        return -1;
                }
                return connect_name(e, name, port);
        }
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &dst.sin_addr, text, sizeof(text));
        const char *range = NULL;
        int ok = addr_allowed(e, addr, port, &range);
        if (ok <= 0) {
                if (ok == 0)
                        refuse(e, "%s:%u", text, port);
                else
                        refuse(e, "%s:%u (%s)", text, port, range ? range : "special-purpose");
                return -1;
        }
        return connect_to((struct sockaddr *)&dst, len);
}

static void on_listener(struct sbx_egress *e, int lfd)
{
        for (int i = 0; i < 16; i++) {
                int in = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (in < 0)
                        return;
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
                int out = open_upstream(e, in);
                if (out < 0) {
                        free(up);
                        free(down);
                        close(in);  /* the job sees its connection reset */
                        continue;
                }
                e->connections++;
                *k = (struct conn){ .in = in, .out = out, .connecting = true,
                                    .up = { .buf = up }, .down = { .buf = down } };
        }
}

/* ---- Copying --------------------------------------------------------------- */

size_t sbx_egress_poll(struct sbx_egress *e, struct pollfd *p)
{
        size_t n = 0;
        for (size_t i = 0; i < e->n_fds; i++)
                p[n++] = (struct pollfd){ .fd = e->fds[i], .events = POLLIN };
        e->n_polled = 0;
        for (size_t i = 0; i < EGRESS_MAX_CONNS; i++) {
                struct conn *k = &e->conns[i];
                if (k->in < 0)
                        continue;
                e->polled[e->n_polled++] = i;
                short ein = 0, eout = 0;
                if (k->connecting) {
                        eout = POLLOUT;
                } else {
                        if (k->up.len == 0 && !k->up.eof)
                                ein |= POLLIN;
                        if (k->down.len > 0)
                                ein |= POLLOUT;
                        if (k->down.len == 0 && !k->down.eof)
                                eout |= POLLIN;
                        if (k->up.len > 0)
                                eout |= POLLOUT;
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
                         pump(k->out, k->in, &k->down, &e->bytes_in) < 0;
        if (broken || (k->up.eof && k->down.eof && !k->up.len && !k->down.len))
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
