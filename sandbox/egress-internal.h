/* A sandbox with --network allow: its own network namespace, whose only
 * way out is the supervisor.
 *
 * Inside the namespace (egress_routes.c, run by the sandbox's init while
 * it still has its capabilities): loopback up, `local` routes for a
 * synthetic range (EGRESS_SYNTH_NET, one address per allowed name) and for
 * each allowed CIDR, a TCP listener on 0.0.0.0 for each allowed port and a
 * UDP DNS socket on 127.0.0.1:53 (the resolver glibc and musl use when
 * there is no resolv.conf, as in every sandbox).  A connect() to an
 * allowed address lands on a listener; anything else finds no route
 * (ENETUNREACH: no default route, no other interface, no IPv6 but ::1) or
 * no listener (ECONNREFUSED).  The sockets go to the supervisor over the
 * setup socket (SBX_MSG_EGRESS) before the job runs.
 *
 * The supervisor (egress_proxy.c, egress_dns.c) lives in the worker's
 * network namespace and out of the job's reach: it answers DNS for allowed
 * names only (each with its synthetic address), accepts, reads the real
 * destination with getsockname(), checks it against the rules, connects
 * from the host's side (names resolved there, each address through the
 * SSRF guard, common/netguard.c, unless --network-private) and copies
 * bytes both ways, counting them.  Refused attempts are counted and the
 * first EGRESS_REFUSED_KEPT distinct ones named in the status. */
#ifndef BC_SANDBOX_EGRESS_INTERNAL_H
#define BC_SANDBOX_EGRESS_INTERNAL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/netallow.h"
#include "sandbox/helper-internal.h"

/* 100.127.0.0/16, inside CGNAT space (which the SSRF guard refuses on the
 * host side anyway): name number i (1..) is 100.127.(i >> 8).(i & 255). */
#define EGRESS_SYNTH_NET 0x647f0000u
#define EGRESS_SYNTH_PREFIX 16
#define EGRESS_MAX_NAMES 4096
/* Connections open at once per job; beyond, new ones are closed. */
#define EGRESS_MAX_CONNS 64
/* Each direction of a connection: one buffer of this size. */
#define EGRESS_BUF (64 * 1024)
/* SO_SNDBUF and SO_RCVBUF of the job's side of a connection (the kernel
 * doubles it): not autotuned, see on_listener. */
#define EGRESS_SOCKBUF (256 * 1024)
#define EGRESS_REFUSED_KEPT 20
/* DNS socket + one listener per distinct port. */
#define EGRESS_MAX_FDS (1 + NETALLOW_MAX_RULES)

struct setup_ctx;

/* In the sandbox: routes and sockets for c's rules; fds[0] the DNS
 * socket, then the listeners.  Returns the count or a setup_fail(). */
int sbx_egress_setup(struct setup_ctx *x, int fds[EGRESS_MAX_FDS]);

struct sbx_egress;
struct sandbox_status;

/* The supervisor's side, for c's rules; takes the n fds (closed on
 * failure).  cg: the job's cgroup, which the name resolvers join (not
 * owned; outlives the proxy).  NULL when out of memory. */
struct sbx_cgroup;
struct sbx_egress *sbx_egress_new(const struct helper_config *c, const int *fds, size_t n,
                                  struct sbx_cgroup *cg);
/* Most pollfds sbx_egress_poll fills. */
#define EGRESS_MAX_POLL (EGRESS_MAX_FDS + 2 * EGRESS_MAX_CONNS)
/* Fills p (room for EGRESS_MAX_POLL) with what e waits on; returns the count. */
size_t sbx_egress_poll(struct sbx_egress *e, struct pollfd *p);
/* Handles the events of the pollfds sbx_egress_poll filled. */
void sbx_egress_dispatch(struct sbx_egress *e, const struct pollfd *p, size_t n);
/* Once the job is gone: what it had sent still goes out, as the kernel
 * would deliver a closed socket's data (a job that writes and exits
 * without waiting: `echo > /dev/tcp/...`), for at most timeout_ms, in
 * case the name is still resolving or the server is slow to take it;
 * the servers' answers are dropped, nothing new is accepted. */
#define EGRESS_DRAIN_MS 2000
void sbx_egress_drain(struct sbx_egress *e, int timeout_ms);
/* The counters and the refused attempts into st (strings copied). */
void sbx_egress_status(const struct sbx_egress *e, struct sandbox_status *st);
/* Closes every socket and frees e.  NULL-safe. */
void sbx_egress_free(struct sbx_egress *e);

/* egress_connect.c: the job's accepted connection `in` (on a listener of
 * the sandbox) checked against the rules and connected from here.  Returns
 * the host-side socket (connect in progress), or -1; why gets the refused
 * target ("pypi.org:8080", "10.0.0.5:443", "x.org:443 (resolves to
 * 127.0.0.1, loopback 127.0.0.0/8)") when the rules refused it, "" when
 * the connection merely failed. */
struct netguard;
struct egress_names;
struct egress_resolver;
struct egress_policy {
        const struct netallow_rule *rules;
        size_t n_rules;
        const struct netguard *guard;         /* allow_all: --network-private */
        const struct netguard *private_guard; /* lets the private ranges through */
        const struct egress_names *names;
        struct egress_resolver *resolver; /* the names' cache and rate limit */
};
/* A name being resolved by a resolver process: wait for sock to be
 * readable, then egress_pending_take. */
struct egress_pending {
        int sock; /* -1: none */
        pid_t pid;
        uint16_t port;
        char name[NETALLOW_NAME_MAX + 1];
};
#define EGRESS_PENDING (-2)
/* Returns the socket (connecting), EGRESS_PENDING (a name: *pending is
 * set), or -1. */
int egress_open_upstream(const struct egress_policy *p, int in, struct egress_pending *pending,
                         char *why, size_t size);
/* The resolver's answer, checked and connected: the socket (connecting),
 * -EAGAIN (not yet), or -1 (why says why when refused).  Once answered,
 * the resolver is reaped and *p cleared. */
int egress_pending_take(const struct egress_policy *e, struct egress_pending *p, char *why,
                        size_t size);
/* Kills and reaps the resolver, closes the socket.  Idempotent. */
void egress_pending_abort(struct egress_pending *p);

/* egress_resolve.c: names are resolved (getaddrinfo, the worker host's
 * resolver) by short-lived processes that are charged to the job (moved
 * into its cgroup), run as EGRESS_RESOLVER_UID/GID without capabilities,
 * with no_new_privs, the job's seccomp filter and one refusing exec,
 * ptrace, signals and listening sockets, and only resolve: the
 * supervisor checks each address and connects.  Answers are cached for
 * EGRESS_CACHE_TTL_MS (getaddrinfo gives no TTL; every connection checks
 * the addresses it uses, so a cached answer opens nothing a fresh one
 * would not), at most EGRESS_CACHE_MAX names; lookups that miss the cache
 * are rate-limited per job (a token bucket of EGRESS_LOOKUP_BURST,
 * refilled at EGRESS_LOOKUPS_PER_S): beyond it the connection is refused. */
#define EGRESS_CACHE_TTL_MS 30000
#define EGRESS_CACHE_MAX 256
#define EGRESS_LOOKUPS_PER_S 10
#define EGRESS_LOOKUP_BURST 50
#define EGRESS_ADDRS_MAX 16
/* The refusal of a lookup over the limit: one entry for them all, kept
 * in the status even once EGRESS_REFUSED_KEPT others are. */
#define EGRESS_RATE_LIMITED "name lookups over the rate limit"
/* The resolver's host ids when the sandbox has none of its own (an
 * unprivileged helper cannot switch to them anyway): nobody's.  Chosen in
 * sbx_egress_new; a root helper's sandbox gives its own (helper_config's
 * host). */
#define EGRESS_RESOLVER_UID 65534
#define EGRESS_RESOLVER_GID 65534
/* egress_addrs.err when the resolver could not join the job's cgroup or
 * give up its privileges: it resolved nothing. */
#define EGRESS_ERR_RESOLVER (-10000)
struct egress_addrs {
        int err; /* 0, getaddrinfo's EAI_*, or EGRESS_ERR_RESOLVER */
        uint32_t n;
        struct {
                uint8_t family; /* AF_INET, AF_INET6 */
                uint8_t addr[16];
        } a[EGRESS_ADDRS_MAX];
};
struct sbx_cgroup;
/* cg: the job's cgroup (not owned; may be NULL or have no controllers);
 * uid, gid: the host ids the resolvers run as (a root helper's). */
struct egress_resolver *egress_resolver_new(struct sbx_cgroup *cg, uid_t uid, gid_t gid);
void egress_resolver_free(struct egress_resolver *r);
/* The cached answer for name, or NULL. */
const struct egress_addrs *egress_resolver_cached(struct egress_resolver *r, const char *name);
void egress_resolver_store(struct egress_resolver *r, const char *name,
                           const struct egress_addrs *a);
/* Starts a lookup of name: 0 and *ret_sock and *ret_pid (the answer comes on
 * the socket, read with egress_resolver_read), -EBUSY over the rate
 * limit, or -errno. */
int egress_resolver_start(struct egress_resolver *r, const char *name, int *ret_sock,
                          pid_t *ret_pid);
/* 1 and *ret on an answer, -EAGAIN when none yet, -EIO when the resolver
 * died without one. */
int egress_resolver_read(int sock, struct egress_addrs *ret);

/* egress_dns.c: the answer to one DNS query in q (n bytes, at most 512)
 * into out (room for EGRESS_DNS_OUT bytes); returns its length, 0 to drop
 * the query.  name gets the name asked (lowercase, no trailing dot, other
 * bytes as '?') or "", *ret_refused whether it is outside the rules. */
#define EGRESS_DNS_OUT (512 + 16)
struct egress_names {
        char *name[EGRESS_MAX_NAMES]; /* [0] unused: i -> 100.127.i */
        size_t n;                     /* next free: starts at 1 */
};
size_t egress_dns_answer(const struct netallow_rule *rules, size_t n_rules,
                         struct egress_names *names, const uint8_t *q, size_t n, uint8_t *out,
                         char name[NETALLOW_NAME_MAX + 1], bool *ret_refused);
/* The name behind a synthetic address (host byte order), or NULL. */
const char *egress_names_lookup(const struct egress_names *names, uint32_t addr);
void egress_names_free(struct egress_names *names);

#endif
