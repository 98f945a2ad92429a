/* What an accepted connection of --network allow may reach, and the
 * connection from the worker's side (see egress-internal.h).  The real
 * destination is read with getsockname(): a synthetic address stands for
 * the name the DNS responder gave it, any other address for itself.
 *   - A name is resolved here (getaddrinfo: the worker host's resolver) and
 *     each address goes through the SSRF guard (common/netguard.c) unless
 *     --network-private: an allowed public name that resolves to
 *     169.254.169.254 or loopback reaches nothing (checked on the address
 *     connected, so rebinding does not help).
 *   - An address under a CIDR rule is connected as written when it is an
 *     ordinary one or the rule names its special network (10.2.0.0/16:5432,
 *     the queue's cap being the operator's say-so); a wider rule
 *     (0.0.0.0/0:443) does not open loopback or the metadata service.
 * Names are resolved and connected in a short-lived child process, so that
 * the resolver's timeouts never stall the supervisor's loop. */
#include "sandbox/egress-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/netguard.h"

static bool special(uint32_t addr, const char **ret_range)
{
        static const struct netguard none; /* refuses every special address */
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
                        : r->prefix     ? r->addr | (0xffffffffu >> r->prefix)
                                        : 0xffffffffu;
        const char *a = NULL, *b = NULL;
        return special(r->addr, &a) && special(last, &b) && a && b && strcmp(a, b) == 0;
}

/* 1: allowed; 0: no rule; -1: only by rules wider than the special range
 * addr lies in, or than the worker host's own address (*ret_range names
 * it). */
static int addr_allowed(const struct egress_policy *e, uint32_t addr, uint16_t port,
                        const char **ret_range)
{
        int r = 0, local = -1; /* -1: not asked yet */
        for (size_t i = 0; i < e->n_rules; i++) {
                const struct netallow_rule *rule = &e->rules[i];
                if (!netallow_match_addr(rule, addr, port))
                        continue;
                if (e->guard->allow_all)
                        return 1;
                if (special(addr, ret_range)) {
                        if (names_special_network(rule))
                                return 1;
                        r = -1;
                        continue;
                }
                /* An ordinary address that is the worker's own: only a rule
                 * naming it alone (a.b.c.d:port) reaches it, not
                 * 0.0.0.0/0:443 nor the public network it lies in. */
                if (local < 0) {
                        struct sockaddr_in sa = { .sin_family = AF_INET,
                                                  .sin_addr.s_addr = htonl(addr) };
                        local = netguard_host_local((struct sockaddr *)&sa, sizeof(sa));
                }
                if (!local || rule->prefix == 32)
                        return 1;
                *ret_range = NETGUARD_HOST_OWN;
                r = -1;
        }
        return r;
}

static bool name_port_allowed(const struct egress_policy *e, const char *name, uint16_t port)
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
        char addr[NETGUARD_ADDR_TEXT]; /* the first address the guard refused */
        const char *range;
};

/* The first address of res in family that the guard lets through,
 * connected; -1 when none. */
static int connect_family(const struct egress_policy *e, const struct addrinfo *res, int family,
                          struct refusal *no)
{
        for (const struct addrinfo *a = res; a; a = a->ai_next) {
                if (a->ai_family != family)
                        continue;
                const char *range = NULL;
                /* The guard's ranges, then the worker's own addresses: an
                 * allowed name that resolves to the worker's public address
                 * must not reach the services it serves there. */
                if (netguard_permits_connect(e->guard, a->ai_addr, a->ai_addrlen, &range))
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
static int connect_name(const struct egress_policy *e, const char *name, uint16_t port, char *why,
                        size_t size)
{
        char service[8];
        snprintf(service, sizeof(service), "%u", port);
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        if (getaddrinfo(name, service, &hints, &res) != 0) {
                snprintf(why, size, "%s:%u (does not resolve)", name, port);
                return -1;
        }
        struct refusal no = { .addr = "" };
        int fd = connect_family(e, res, AF_INET, &no);
        if (fd < 0)
                fd = connect_family(e, res, AF_INET6, &no);
        freeaddrinfo(res);
        if (fd < 0 && no.addr[0])
                snprintf(why, size, "%s:%u (resolves to %s, %s)", name, port, no.addr,
                         no.range ? no.range : "a special-purpose address");
        return fd;
}

/* A name is resolved and connected in a child process: getaddrinfo may
 * take the resolver's timeouts, which must not stall the supervisor's loop
 * (the job's timeout, a cancel, the other connections).  The child sends
 * the socket (its connect under way) or the refusal back on a socketpair
 * and exits; the supervisor waits on the other end like on any socket. */
static int resolve_in_child(const struct egress_policy *e, const char *name, uint16_t port,
                            struct egress_pending *ret)
{
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return -1;
        pid_t pid = fork();
        if (pid < 0) {
                close(sp[0]);
                close(sp[1]);
                return -1;
        }
        if (pid == 0) {
                /* Dies with the supervisor (a hung resolver included), and
                 * holds none of its sockets: a connection the supervisor
                 * closes must close now, not when this child exits. */
                prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                if (sp[1] > 3)
                        syscall(SYS_close_range, 3u, (unsigned)sp[1] - 1, 0u);
                syscall(SYS_close_range, (unsigned)sp[1] + 1, ~0u, 0u);
                /* The name as written and nothing else: with resolv.conf's
                 * search list (ndots:5, as in Kubernetes, tries it first)
                 * "x.allowed.test" could be answered for
                 * "x.allowed.test.corp.internal", a name no rule allows.
                 * (A trailing dot would do the same for DNS but stop
                 * /etc/hosts from matching.) */
                if (res_init() == 0)
                        _res.options &= ~(unsigned long)(RES_DNSRCH | RES_DEFNAMES);
                struct sbx_msg m = { .type = SBX_MSG_EGRESS };
                int fd = connect_name(e, name, port, m.path, sizeof(m.path));
                (void)sbx_msg_send(sp[1], &m, fd);
                _exit(0);
        }
        close(sp[1]);
        *ret = (struct egress_pending){ .sock = sp[0], .pid = pid };
        return 0;
}

int egress_pending_take(struct egress_pending *p, char *why, size_t size)
{
        struct sbx_msg m;
        int fd = -1;
        int r = sbx_msg_recv(p->sock, &m, &fd);
        if (r == -EAGAIN || r == -EINTR)
                return -EAGAIN;
        if (r == 1 && m.path[0]) {
                m.path[sizeof(m.path) - 1] = '\0';
                snprintf(why, size, "%s", m.path);
        }
        egress_pending_abort(p);
        return r == 1 && fd >= 0 ? fd : (fd >= 0 ? (close(fd), -1) : -1);
}

void egress_pending_abort(struct egress_pending *p)
{
        if (p->sock >= 0)
                close(p->sock);
        if (p->pid > 0) {
                kill(p->pid, SIGKILL);
                while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        *p = (struct egress_pending){ .sock = -1, .pid = 0 };
}

int egress_open_upstream(const struct egress_policy *e, int in, struct egress_pending *pending,
                         char *why, size_t size)
{
        struct sockaddr_in dst;
        socklen_t len = sizeof(dst);
        if (getsockname(in, (struct sockaddr *)&dst, &len) < 0 || dst.sin_family != AF_INET)
                return -1;
        uint32_t addr = ntohl(dst.sin_addr.s_addr);
        uint16_t port = ntohs(dst.sin_port);
        const char *name = egress_names_lookup(e->names, addr);
        if (name) {
                if (!name_port_allowed(e, name, port)) {
                        snprintf(why, size, "%s:%u", name, port);
                        return -1;
                }
                return resolve_in_child(e, name, port, pending) < 0 ? -1 : EGRESS_PENDING;
        }
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &dst.sin_addr, text, sizeof(text));
        const char *range = NULL;
        int ok = addr_allowed(e, addr, port, &range);
        if (ok <= 0) {
                if (ok == 0)
                        snprintf(why, size, "%s:%u", text, port);
                else
                        snprintf(why, size, "%s:%u (%s)", text, port,
                                 range ? range : "special-purpose");
                return -1;
        }
        return connect_to((struct sockaddr *)&dst, len);
}
