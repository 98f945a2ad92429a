/* Egress allow-list rules: what a job's `"network": {"allow": [...]}` and
 * a queue's cap (`boxcar worker --network-allow QUEUE=RULE,...`) are made
 * of.  One rule is
 *
 *   name:port        pypi.org:443 (exactly this name)
 *   *.name:port      *.githubusercontent.com:443 (any name under it, not
 *                    the name itself)
 *   a.b.c.d/bits:port  10.2.0.0/16:5432 (no bits set past the prefix)
 *   a.b.c.d:port     10.2.0.5:5432 (the same as /32)
 *
 * Names are lowercase letters, digits and '-', in dot-separated labels of
 * 1-63 characters that neither start nor end with '-', at most 253
 * characters, the last label starting with a letter (so an address is
 * never read as a name).  Octets and prefix lengths are written without
 * leading zeros.  Ports are 1-65535.  IPv6 rules do not exist.  The
 * cloud metadata address (169.254.169.254) is never a rule of its own: no
 * rule reaches it (see sandbox/egress_connect.c).
 *
 * The SQL validator (sql/10_spec.sql, boxcar.network_rule_error) applies
 * the same grammar with the same messages. */
#ifndef BC_COMMON_NETALLOW_H
#define BC_COMMON_NETALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NETALLOW_MAX_RULES 64
#define NETALLOW_NAME_MAX 253

struct netallow_rule {
        bool is_cidr;
        bool wildcard;                    /* "*.name": names under name */
        char name[NETALLOW_NAME_MAX + 1]; /* name rules, without "*." */
        uint32_t addr;                    /* CIDR rules, host byte order */
        unsigned prefix;                  /* 0..32 */
        uint16_t port;
        /* The operator let this rule reach private addresses (the worker's
         * --allow-private-egress, the sandbox's --network-allow-private):
         * a name may resolve to one, see sandbox/egress_connect.c.  Never
         * set by netallow_parse; ignored by netallow_covers. */
        bool private_ok;
};

/* 169.254.169.254, the cloud metadata service (host byte order). */
#define NETALLOW_METADATA_ADDR 0xa9fea9feu

enum netallow_problem {
        NETALLOW_OK = 0,
        NETALLOW_SYNTAX,    /* not name:port, *.name:port or a.b.c.d[/bits]:port */
        NETALLOW_PORT,      /* port not 1-65535 */
        NETALLOW_HOST_BITS, /* bits set past the prefix length */
        NETALLOW_METADATA,  /* 169.254.169.254 alone: never reachable */
};

/* Parses one rule into *r.  On NETALLOW_HOST_BITS, r->addr/prefix hold the
 * network the text probably meant (for the message). */
enum netallow_problem netallow_parse(const char *text, struct netallow_rule *r);

/* The message tail for a problem, after "network.allow[i]: "; for
 * NETALLOW_HOST_BITS it names r's network.  Writes into buf. */
const char *netallow_problem_text(enum netallow_problem p, const struct netallow_rule *r,
                                  char *buf, size_t size);

/* Whether everything rule r lets through, cap lets through too (a queue's
 * cap bounding a job's rule): same port, and the same name, a name under a
 * wildcard cap, or a CIDR inside the cap's CIDR. */
bool netallow_covers(const struct netallow_rule *cap, const struct netallow_rule *r);

/* Whether r lets a connection to name (lowercase, no trailing dot) on
 * port through. */
bool netallow_match_name(const struct netallow_rule *r, const char *name, uint16_t port);

/* Whether r lets a connection to the IPv4 address addr (host byte order)
 * on port through. */
bool netallow_match_addr(const struct netallow_rule *r, uint32_t addr, uint16_t port);

/* The rule as text ("*.example.com:443", "10.2.0.0/16:5432"). */
void netallow_format(const struct netallow_rule *r, char *buf, size_t size);

#endif
