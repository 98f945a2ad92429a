/* What an accepted connection of --network allow may reach, and the
 * connection from the worker's side (see egress-internal.h).  The real
 * destination is read with getsockname(): a synthetic address stands for
 * the name the DNS responder gave it, any other address for itself.
 *   - A name is resolved on the host (egress_resolve.c: cached,
 *     rate-limited, by an unprivileged process charged to the job) and
 *     each address is judged here, on the address connected, so rebinding
 *     does not help: public addresses only, unless a rule matching the
 *     name exactly was marked private by the operator (the worker's
 *     --allow-private-egress): then the private ranges too (10/8,
 *     172.16/12, 192.168/16, 100.64/10, fc00::/7), never loopback,
 *     link-local nor the worker host's own addresses.  A wildcard rule
 *     never reaches a private address, whatever the name resolves to.
 *   - An address under a CIDR rule is connected as written when it is an
 *     ordinary one, the rule names its special network (10.2.0.0/16:5432,
 *     the queue's cap being the operator's say-so) or the rule is marked
 *     private; a wider rule (0.0.0.0/0:443) does not open loopback or
 *     private networks.
 *   - The cloud metadata service (169.254.169.254, fd00:ec2::254) is never
 *     reached: it hands out the host's credentials, which no job needs.
 * --network-private lifts everything but the last. */
#include "sandbox/egress-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/netguard.h"

static bool is_metadata(const struct sockaddr *sa)
{
        static const uint8_t v6[16] = { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 };
        static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
        if (sa->sa_family == AF_INET)
                return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) ==
                       NETALLOW_METADATA_ADDR;
        if (sa->sa_family != AF_INET6)
                return false;
        const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        uint32_t v4 = (uint32_t)a[12] << 24 | (uint32_t)a[13] << 16 | (uint32_t)a[14] << 8 | a[15];
        return memcmp(a, v6, 16) == 0 ||
               (memcmp(a, mapped, 12) == 0 && v4 == NETALLOW_METADATA_ADDR);
}
#define METADATA_RANGE "the cloud metadata service, never reached"

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
        if (addr == NETALLOW_METADATA_ADDR) {
                *ret_range = METADATA_RANGE;
                return -1;
        }
        for (size_t i = 0; i < e->n_rules; i++) {
                const struct netallow_rule *rule = &e->rules[i];
                if (!netallow_match_addr(rule, addr, port))
                        continue;
                if (e->guard->allow_all || rule->private_ok)
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

enum name_reach { NAME_REFUSED, NAME_PUBLIC, NAME_PRIVATE };

/* Whether a rule lets name:port through, and how far: NAME_PRIVATE when
 * one that matches it exactly (no wildcard) is marked private. */
static enum name_reach name_port_allowed(const struct egress_policy *e, const char *name,
                                         uint16_t port)
{
        enum name_reach r = NAME_REFUSED;
        for (size_t i = 0; i < e->n_rules; i++) {
                const struct netallow_rule *rule = &e->rules[i];
                if (!netallow_match_name(rule, name, port))
                        continue;
                if (rule->private_ok && !rule->wildcard)
                        return NAME_PRIVATE;
                r = NAME_PUBLIC;
        }
        return r;
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
        char addr[NETGUARD_ADDR_TEXT]; /* the first address refused */
        const char *range;
};

/* Whether the address of a name may be connected to; *range says why not. */
static bool name_addr_permitted(const struct egress_policy *e, enum name_reach reach,
                                const struct sockaddr *sa, socklen_t len, const char **range)
{
        if (is_metadata(sa)) {
                *range = METADATA_RANGE;
                return false;
        }
        if (e->guard->allow_all)
                return true;
        /* The guard's ranges, then the worker's own addresses: an allowed
         * name that resolves to the worker's address must not reach the
         * services it serves there, private or not. */
        if (reach == NAME_PRIVATE && netguard_permits(e->private_guard, sa, len, range)) {
                if (!netguard_host_local(sa, len))
                        return true;
                *range = NETGUARD_HOST_OWN;
                return false;
        }
        return netguard_permits_connect(e->guard, sa, len, range);
}

/* The first address of a in family that may be connected to, connected;
 * -1 when none. */
static int connect_family(const struct egress_policy *e, enum name_reach reach,
                          const struct egress_addrs *a, int family, uint16_t port,
                          struct refusal *no)
{
        for (uint32_t i = 0; i < a->n; i++) {
                if (a->a[i].family != family)
                        continue;
                struct sockaddr_storage ss = { 0 };
                socklen_t len;
                if (family == AF_INET) {
                        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
                        sin->sin_family = AF_INET;
                        sin->sin_port = htons(port);
                        memcpy(&sin->sin_addr, a->a[i].addr, 4);
                        len = sizeof(*sin);
                } else {
                        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
                        sin6->sin6_family = AF_INET6;
                        sin6->sin6_port = htons(port);
                        memcpy(&sin6->sin6_addr, a->a[i].addr, 16);
                        len = sizeof(*sin6);
                }
                const char *range = NULL;
                if (name_addr_permitted(e, reach, (struct sockaddr *)&ss, len, &range))
                        return connect_to((struct sockaddr *)&ss, len);
                if (!no->addr[0]) {
                        netguard_addr_text((struct sockaddr *)&ss, len, no->addr);
                        no->range = range;
                }
        }
        return -1;
}

/* A name's addresses: the first one permitted connected (IPv4 first: the
 * job asked for an IPv4 address).  -1 (refused and recorded) otherwise. */
static int connect_addrs(const struct egress_policy *e, const char *name, uint16_t port,
                         const struct egress_addrs *a, char *why, size_t size)
{
        if (a->err == EGRESS_ERR_RESOLVER) {
                snprintf(
                        why, size,
                        "%s:%u (the resolver could not join the job's cgroup or drop its privileges)",
                        name, port);
                return -1;
        }
        if (a->err || a->n == 0) {
                snprintf(why, size, "%s:%u (does not resolve)", name, port);
                return -1;
        }
        enum name_reach reach = name_port_allowed(e, name, port);
        struct refusal no = { .addr = "" };
        int fd = connect_family(e, reach, a, AF_INET, port, &no);
        if (fd < 0)
                fd = connect_family(e, reach, a, AF_INET6, port, &no);
        if (fd < 0 && no.addr[0])
                snprintf(why, size, "%s:%u (resolves to %s, %s)", name, port, no.addr,
                         no.range ? no.range : "a special-purpose address");
        return fd;
}

/* A name: from the cache, or looked up by a resolver process (its
 * timeouts must not stall the supervisor's loop: the job's timeout, a
 * cancel, the other connections); the answer is waited for like any
 * socket. */
static int open_name(const struct egress_policy *e, const char *name, uint16_t port,
                     struct egress_pending *ret, char *why, size_t size)
{
        const struct egress_addrs *cached = egress_resolver_cached(e->resolver, name);
        if (cached)
                return connect_addrs(e, name, port, cached, why, size);
        int sock = -1;
        pid_t pid = 0;
        int r = egress_resolver_start(e->resolver, name, &sock, &pid);
        if (r == -EBUSY) {
                snprintf(why, size, EGRESS_RATE_LIMITED " (%d, then %d a second): %s:%u refused",
                         EGRESS_LOOKUP_BURST, EGRESS_LOOKUPS_PER_S, name, port);
                return -1;
        }
        if (r < 0)
                return -1;
        *ret = (struct egress_pending){ .sock = sock, .pid = pid, .port = port };
        snprintf(ret->name, sizeof(ret->name), "%s", name);
        return EGRESS_PENDING;
}

int egress_pending_take(const struct egress_policy *e, struct egress_pending *p, char *why,
                        size_t size)
{
        struct egress_addrs a;
        int r = egress_resolver_read(p->sock, &a);
        if (r == -EAGAIN)
                return -EAGAIN;
        int fd = -1;
        if (r == 1) {
                egress_resolver_store(e->resolver, p->name, &a);
                fd = connect_addrs(e, p->name, p->port, &a, why, size);
        } else {
                /* Killed before answering: the job's cgroup (out of memory,
                 * its end). */
                snprintf(why, size, "%s:%u (the resolver died)", p->name, p->port);
        }
        egress_pending_abort(p);
        return fd;
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
        p->sock = -1;
        p->pid = 0;
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
                if (name_port_allowed(e, name, port) == NAME_REFUSED) {
                        snprintf(why, size, "%s:%u", name, port);
                        return -1;
                }
                return open_name(e, name, port, pending, why, size);
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
