#include "common/netguard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every address is compared as 16 bytes: IPv4 as ::ffff:a.b.c.d, so one
 * table covers AF_INET and IPv4-mapped AF_INET6 alike (a socket given
 * ::ffff:127.0.0.1 talks to 127.0.0.1). */
#define V4(a, b, c, d, len)                                                          \
        {                                                                            \
                { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d }, 96 + (len) \
        }

struct special {
        struct netguard_cidr net;
        const char *what;
};

/* IANA's special-purpose registries (RFC 6890 and successors): nothing a
 * job spec has a reason to reach, much that an attacker would like to. */
static const struct special specials[] = {
        { V4(0, 0, 0, 0, 8), "\"this network\" 0.0.0.0/8" },
        { V4(10, 0, 0, 0, 8), "private 10.0.0.0/8" },
        { V4(100, 64, 0, 0, 10), "shared address space (CGNAT) 100.64.0.0/10" },
        { V4(127, 0, 0, 0, 8), "loopback 127.0.0.0/8" },
        { V4(169, 254, 0, 0, 16), "link-local 169.254.0.0/16 (cloud metadata)" },
        { V4(172, 16, 0, 0, 12), "private 172.16.0.0/12" },
        { V4(192, 0, 0, 0, 24), "IETF protocol assignments 192.0.0.0/24" },
        { V4(192, 0, 2, 0, 24), "documentation 192.0.2.0/24" },
        { V4(192, 88, 99, 0, 24), "6to4 relay anycast 192.88.99.0/24" },
        { V4(192, 168, 0, 0, 16), "private 192.168.0.0/16" },
        { V4(198, 18, 0, 0, 15), "benchmarking 198.18.0.0/15" },
        { V4(198, 51, 100, 0, 24), "documentation 198.51.100.0/24" },
        { V4(203, 0, 113, 0, 24), "documentation 203.0.113.0/24" },
        { V4(224, 0, 0, 0, 4), "multicast 224.0.0.0/4" },
        { V4(240, 0, 0, 0, 4), "reserved 240.0.0.0/4 (broadcast included)" },
        { { { 0 }, 128 }, "unspecified ::" },
        { { { [15] = 1 }, 128 }, "loopback ::1" },
        { { { 0 }, 96 }, "IPv4-compatible ::/96" },
        { { { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48 }, "local-use NAT64 64:ff9b:1::/48" },
        { { { 0x01, 0 }, 64 }, "discard-only 100::/64" },
        { { { 0x20, 0x01, 0x0d, 0xb8 }, 32 }, "documentation 2001:db8::/32" },
        { { { 0x20, 0x01, 0 }, 23 }, "IETF protocol assignments 2001::/23 (Teredo included)" },
        { { { 0x3f, 0xff }, 20 }, "documentation 3fff::/20" },
        { { { 0x5f, 0x00 }, 16 }, "segment routing 5f00::/16" },
        { { { 0xfc }, 7 }, "unique local fc00::/7" },
        { { { 0xfe, 0x80 }, 10 }, "link-local fe80::/10" },
        { { { 0xfe, 0xc0 }, 10 }, "site-local fec0::/10" },
        { { { 0xff }, 8 }, "multicast ff00::/8" },
};

static bool in_net(const uint8_t a[16], const struct netguard_cidr *n)
{
        unsigned full = n->prefix / 8, bits = n->prefix % 8;
        if (memcmp(a, n->addr, full) != 0)
                return false;
        if (!bits)
                return true;
        uint8_t mask = (uint8_t)(0xff << (8 - bits));
        return (a[full] & mask) == (n->addr[full] & mask);
}

/* The IPv4 address inside a translation prefix, as ::ffff:a.b.c.d: NAT64
 * (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48) reach an IPv4 host, which
 * is then judged like that host. */
static bool embedded_v4(const uint8_t a[16], uint8_t ret[16])
{
        static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
        const uint8_t *v4 = NULL;
        if (memcmp(a, nat64, 12) == 0)
                v4 = a + 12;
        else if (a[0] == 0x20 && a[1] == 0x02)
                v4 = a + 2;
        if (!v4)
                return false;
        memset(ret, 0, 10);
        ret[10] = ret[11] = 0xff;
        memcpy(ret + 12, v4, 4);
        return true;
}

static bool to_bytes(const struct sockaddr *sa, socklen_t len, uint8_t ret[16])
{
        if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
                const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
                memset(ret, 0, 10);
                ret[10] = ret[11] = 0xff;
                memcpy(ret + 12, &s4->sin_addr, 4);
                return true;
        }
        if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
                memcpy(ret, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
                return true;
        }
        return false;
}

static bool allowed_by_list(const struct netguard *g, const uint8_t a[16])
{
        for (size_t i = 0; i < g->n_allow; i++)
                if (in_net(a, &g->allow[i]))
                        return true;
        return false;
}

static const char *special_of(const uint8_t a[16])
{
        for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
                if (in_net(a, &specials[i].net))
                        return specials[i].what;
        return NULL;
}

bool netguard_permits(const struct netguard *g, const struct sockaddr *sa, socklen_t len,
                      const char **ret_range)
{
        if (g && g->allow_all)
                return true;
        uint8_t a[16], v4[16];
        if (!sa || !to_bytes(sa, len, a)) {
                if (ret_range)
                        *ret_range = "not an IP address";
                return false;
        }
        bool has_v4 = embedded_v4(a, v4);
        if (g && (allowed_by_list(g, a) || (has_v4 && allowed_by_list(g, v4))))
                return true;
        const char *what = special_of(a);
        if (!what && has_v4)
                what = special_of(v4);
        if (what && ret_range)
                *ret_range = what;
        return !what;
}

/* See netguard.h: asked as `ip route get` does (RTM_GETROUTE). */
bool netguard_host_local(const struct sockaddr *sa, socklen_t len)
{
        struct {
                struct nlmsghdr nh;
                struct rtmsg rt;
                char attrs[32];
        } req;
        memset(&req, 0, sizeof(req));
        const void *dst = NULL;
        size_t dlen = 0;
        uint8_t family = AF_INET;
        if (!sa) {
                return true;
        } else if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
                dst = &((const struct sockaddr_in *)sa)->sin_addr;
                dlen = 4;
        } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
                const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
                /* ::ffff:a.b.c.d is connected over IPv4: ask about a.b.c.d. */
                bool mapped = IN6_IS_ADDR_V4MAPPED(a6);
                dst = mapped ? (const void *)(a6->s6_addr + 12) : (const void *)a6;
                dlen = mapped ? 4 : 16;
                family = mapped ? AF_INET : AF_INET6;
        } else {
                return true;
        }
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        req.nh.nlmsg_type = RTM_GETROUTE;
        req.nh.nlmsg_flags = NLM_F_REQUEST;
        req.rt.rtm_family = family;
        req.rt.rtm_dst_len = (unsigned char)(dlen * 8);
        struct rtattr *a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
        a->rta_type = RTA_DST;
        a->rta_len = (unsigned short)RTA_LENGTH(dlen);
        memcpy(RTA_DATA(a), dst, dlen);
        req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
        int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (nl < 0)
                return true;
        union {
                struct nlmsghdr nh;
                char buf[4096];
        } ans;
        ssize_t n = -1;
        if (send(nl, &req, req.nh.nlmsg_len, 0) >= 0)
                while ((n = recv(nl, &ans, sizeof(ans), 0)) < 0 && errno == EINTR)
                        ;
        close(nl);
        if (n < 0 || !NLMSG_OK(&ans.nh, (size_t)n))
                return true;
        if (ans.nh.nlmsg_type == NLMSG_ERROR) /* no route at all: not ours */
                return ((struct nlmsgerr *)NLMSG_DATA(&ans.nh))->error == 0;
        return ans.nh.nlmsg_type != RTM_NEWROUTE ||
               ((struct rtmsg *)NLMSG_DATA(&ans.nh))->rtm_type == RTN_LOCAL;
}

bool netguard_permits_connect(const struct netguard *g, const struct sockaddr *sa, socklen_t len,
                              const char **ret_range)
{
        if (!netguard_permits(g, sa, len, ret_range))
                return false;
        if (g && g->allow_all)
                return true;
        uint8_t a[16], v4[16];
        if (g && to_bytes(sa, len, a) &&
            (allowed_by_list(g, a) || (embedded_v4(a, v4) && allowed_by_list(g, v4))))
                return true;
        if (!netguard_host_local(sa, len))
                return true;
        if (ret_range)
                *ret_range = NETGUARD_HOST_OWN;
        return false;
}

void netguard_addr_text(const struct sockaddr *sa, socklen_t len,
                        char out[static NETGUARD_ADDR_TEXT])
{
        const void *src = NULL;
        if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
                src = &((const struct sockaddr_in *)sa)->sin_addr;
        else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
                src = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (!src || !inet_ntop(sa->sa_family, src, out, NETGUARD_ADDR_TEXT))
                snprintf(out, NETGUARD_ADDR_TEXT, "?");
}

/* ---- allow list ---------------------------------------------------------- */

static int parse_cidr(const char *text, struct netguard_cidr *ret)
{
        char buf[NETGUARD_ADDR_TEXT];
        size_t n = strcspn(text, "/");
        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, text, n);
        buf[n] = '\0';
        struct netguard_cidr c = { { 0 }, 0 };
        unsigned max;
        struct in_addr a4;
        if (inet_pton(AF_INET, buf, &a4) == 1) {
                c.addr[10] = c.addr[11] = 0xff;
                memcpy(c.addr + 12, &a4, 4);
                max = 32;
        } else if (inet_pton(AF_INET6, buf, c.addr) == 1) {
                max = 128;
        } else {
                return -EINVAL;
        }
        unsigned len = max;
        if (text[n] == '/') {
                const char *p = text + n + 1;
                size_t digits = strspn(p, "0123456789");
                if (digits == 0 || digits > 3 || p[digits] != '\0')
                        return -EINVAL;
                len = (unsigned)atoi(p);
                if (len > max)
                        return -EINVAL;
        }
        c.prefix = len + (128 - max);
        /* Host bits must be zero: "10.2.3.4/16" is more likely a typo for
         * a /32 or for 10.2.0.0/16 than either. */
        struct netguard_cidr masked = c;
        for (unsigned bit = c.prefix; bit < 128; bit++)
                masked.addr[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
        if (memcmp(masked.addr, c.addr, 16) != 0)
                return -EINVAL;
        *ret = c;
        return 0;
}

int netguard_allow_cidr(struct netguard *g, const char *cidr, struct bc_error *err)
{
        struct netguard_cidr c;
        if (!cidr || parse_cidr(cidr, &c) < 0)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "'%s' is not a CIDR (e.g. 10.2.0.0/16, fd00::/8 or one "
                                    "address; host bits must be zero)",
                                    cidr ? cidr : "");
        if (g->n_allow >= NETGUARD_MAX_CIDRS)
                return bc_error_set(err, BC_USAGE, E2BIG, "more than %d CIDRs allowed",
                                    NETGUARD_MAX_CIDRS);
        g->allow[g->n_allow++] = c;
        return 0;
}

int netguard_allow_list(struct netguard *g, const char *list, struct bc_error *err)
{
        for (const char *p = list;;) {
                size_t n = strcspn(p, ",");
                char item[NETGUARD_ADDR_TEXT + 8];
                if (n >= sizeof(item))
                        return bc_error_set(err, BC_USAGE, EINVAL, "'%.*s' is not a CIDR",
                                            (int)(n > 80 ? 80 : n), p);
                memcpy(item, p, n);
                item[n] = '\0';
                int r = netguard_allow_cidr(g, item, err);
                if (r < 0)
                        return r;
                p += n;
                if (*p == '\0')
                        return 0;
                p++;
        }
}
