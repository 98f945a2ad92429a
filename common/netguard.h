/* The worker's own outgoing requests (webhook posts, volume URLs from job
 * specs) must not reach the worker's own network: loopback, private and
 * link-local ranges (169.254.169.254 hands out cloud credentials), unique
 * local IPv6, CGNAT, multicast and the other special-purpose ranges.  The
 * URL comes from whoever wrote the job spec; the worker is the one whose
 * network position would be used (server-side request forgery).
 *
 * The check is made on the address libcurl is about to connect to, in its
 * open-socket callback: after DNS resolution, for every address tried, for
 * every redirect hop and for a proxy.  A name that resolves to a public
 * address at one moment and to 127.0.0.1 the next (DNS rebinding) is
 * judged by the address actually used.
 *
 * An operator opts in with allow_all (--allow-private-urls) or a list of
 * CIDRs that are let through (--allow-url-cidr). */
#ifndef BC_COMMON_NETGUARD_H
#define BC_COMMON_NETGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <curl/curl.h>

#include "common/error.h"

#define NETGUARD_MAX_CIDRS 64
/* Room for an address as text ("ffff:...:255.255.255.255"). */
#define NETGUARD_ADDR_TEXT 64

struct netguard_cidr {
        uint8_t addr[16]; /* IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d) */
        unsigned prefix;  /* 0..128, counted on the 16 bytes */
};

/* Plain data; zero-initialised it refuses every special address. */
struct netguard {
        bool allow_all; /* --allow-private-urls: no check */
        size_t n_allow;
        struct netguard_cidr allow[NETGUARD_MAX_CIDRS];
};

/* Adds "10.2.0.0/16", "fd00::/8" or a single address ("10.2.3.4", a /32 or
 * /128) to g's allow list.  Host bits set ("10.2.3.4/16") are refused, as a
 * likely typo.  BC_USAGE naming the text on a malformed CIDR or a full
 * list. */
int netguard_allow_cidr(struct netguard *g, const char *cidr, struct bc_error *err);

/* The same for a comma-separated list ("10.2.0.0/16,fd00::/8"). */
int netguard_allow_list(struct netguard *g, const char *list, struct bc_error *err);

/* Whether sa may be connected to.  When not, *ret_range (if not NULL) is
 * set to the refused range's description ("loopback 127.0.0.0/8"), a
 * static string.  Addresses of families other than IPv4/IPv6 are refused
 * ("not an IP address"). */
bool netguard_permits(const struct netguard *g, const struct sockaddr *sa, socklen_t len,
                      const char **ret_range);

/* Whether sa is an address of this host itself (the kernel's route to it
 * is `local`, as `ip route get` says): a connection there reaches the
 * worker's own services (its database, S3, metrics, anything bound to
 * 0.0.0.0) however public the address looks, which no range can know.
 * True when the kernel cannot be asked: fail closed.  ::ffff:a.b.c.d is
 * asked as a.b.c.d. */
bool netguard_host_local(const struct sockaddr *sa, socklen_t len);
#define NETGUARD_HOST_OWN "an address of the worker host"

/* netguard_permits, and then an ordinary address that is this host's own
 * (netguard_host_local) is refused too (*ret_range NETGUARD_HOST_OWN),
 * unless allow_all or the allow list lets it through.  What to call on
 * the address about to be connected. */
bool netguard_permits_connect(const struct netguard *g, const struct sockaddr *sa, socklen_t len,
                              const char **ret_range);

/* The address of sa as text ("10.0.0.1", "fe80::1"), or "?". */
void netguard_addr_text(const struct sockaddr *sa, socklen_t len,
                        char out[static NETGUARD_ADDR_TEXT]);

/* Per-transfer state of the curl hook: the guard (not owned; NULL lets
 * everything through) and the first refusal seen. */
struct netguard_curl {
        const struct netguard *guard;
        bool refused;
        char addr[NETGUARD_ADDR_TEXT];
        const char *range;
};

/* Installs the open-socket callback on c with ctx as its state (ctx must
 * outlive the transfers; it is reset here).  Refused addresses make the
 * connect fail (CURLE_COULDNT_CONNECT once every address was refused).
 * Call again after curl_easy_reset(). */
void netguard_curl_attach(CURL *c, struct netguard_curl *ctx);

/* The message for a refusal recorded in ctx: "refused to connect to
 * 127.0.0.1 (loopback 127.0.0.0/8): boxcar does not send requests from job
 * specs to internal addresses unless the worker runs with
 * --allow-private-urls or --allow-url-cidr".  Heap string the caller
 * frees; NULL when out of memory. */
char *netguard_curl_message(const struct netguard_curl *ctx);

#endif
