/* The sandbox's side of --network allow (see egress-internal.h): local
 * routes over rtnetlink and the sockets the supervisor serves.  Runs in
 * the sandbox's init, in its network namespace, before it drops its
 * capabilities. */
#include "sandbox/egress-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/setup-internal.h"

/* `ip route add local NET/PREFIX dev lo table local`: connections to NET
 * stay in the namespace, on our listeners. */
static int add_local_route(int nl, unsigned ifindex, uint32_t net, unsigned prefix)
{
        struct {
                struct nlmsghdr nh;
                struct rtmsg rt;
                char attrs[64];
        } req;
        memset(&req, 0, sizeof(req));
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        req.nh.nlmsg_type = RTM_NEWROUTE;
        req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
        req.nh.nlmsg_seq = 1;
        req.rt = (struct rtmsg){ .rtm_family = AF_INET,
                                 .rtm_dst_len = (unsigned char)prefix,
                                 .rtm_table = RT_TABLE_LOCAL,
                                 .rtm_protocol = RTPROT_BOOT,
                                 .rtm_scope = RT_SCOPE_HOST,
                                 .rtm_type = RTN_LOCAL };
        uint32_t dst = htonl(net);
        struct rtattr *a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
        a->rta_type = RTA_DST;
        a->rta_len = RTA_LENGTH(sizeof(dst));
        memcpy(RTA_DATA(a), &dst, sizeof(dst));
        req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
        a = (struct rtattr *)((char *)&req + req.nh.nlmsg_len);
        a->rta_type = RTA_OIF;
        a->rta_len = RTA_LENGTH(sizeof(int));
        int oif = (int)ifindex;
        memcpy(RTA_DATA(a), &oif, sizeof(oif));
        req.nh.nlmsg_len += RTA_ALIGN(a->rta_len);
        if (send(nl, &req, req.nh.nlmsg_len, 0) < 0)
                return -errno;
        char buf[1024];
        ssize_t n = recv(nl, buf, sizeof(buf), 0);
        if (n < 0)
                return -errno;
        struct nlmsghdr *h = (struct nlmsghdr *)buf;
        if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_type != NLMSG_ERROR)
                return -EPROTO;
        int e = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
        /* Two rules on one network (or a CIDR on 127/8): one route. */
        return e == -EEXIST ? 0 : e;
}

static int bound_socket(int type, uint32_t addr, uint16_t port)
{
        int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons(port),
                                  .sin_addr.s_addr = htonl(addr) };
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            (type == SOCK_STREAM && listen(fd, 128) < 0)) {
                int e = errno;
                close(fd);
                return -e;
        }
        return fd;
}

int sbx_egress_setup(struct setup_ctx *x, int fds[EGRESS_MAX_FDS])
{
        const struct helper_config *c = x->c;
        x->step = SBX_STEP_NETWORK;
        unsigned lo = if_nametoindex("lo");
        if (lo == 0)
                return setup_fail(x, errno, "lo", "if_nametoindex");
        _cleanup_fd_ int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (nl < 0)
                return setup_fail(x, errno, NULL, "netlink socket");
        int r = add_local_route(nl, lo, EGRESS_SYNTH_NET, EGRESS_SYNTH_PREFIX);
        for (size_t i = 0; r >= 0 && i < c->n_net_rules; i++)
                if (c->net_rules[i].is_cidr)
                        r = add_local_route(nl, lo, c->net_rules[i].addr, c->net_rules[i].prefix);
        if (r < 0)
                return setup_fail(x, -r, NULL, "cannot add the egress routes");
        size_t n = 0;
        r = bound_socket(SOCK_DGRAM, INADDR_LOOPBACK, 53);
        if (r < 0)
                return setup_fail(x, -r, "127.0.0.1:53", "cannot bind the DNS socket");
        fds[n++] = r;
        for (size_t i = 0; i < c->n_net_rules; i++) {
                uint16_t port = c->net_rules[i].port;
                bool seen = false;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = c->net_rules[k].port == port;
                if (seen)
                        continue;
                r = bound_socket(SOCK_STREAM, INADDR_ANY, port);
                if (r < 0) {
                        for (size_t k = 0; k < n; k++)
                                close(fds[k]);
                        return setup_fail(x, -r, NULL, "cannot listen for the egress proxy");
                }
                fds[n++] = r;
        }
        return (int)n;
}
