/* The network namespace of a sandbox without network: an empty one with
 * its loopback up.  The child makes it with its clone, or a cold
 * supervisor running as root makes it while the child builds its root
 * (sbx_netns_make), and hands it over with GO. */
#include "sandbox/netns-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"

int sbx_loopback_up(void)
{
        _cleanup_fd_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return -errno;
        return 0;
}

int sbx_netns_make(int *ret_fd)
{
        _cleanup_fd_ int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (own < 0 || unshare(CLONE_NEWNET) < 0)
                return -errno;
        int r = sbx_loopback_up();
        int fd = r < 0 ? -1 : open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (r >= 0 && fd < 0)
                r = -errno;
        /* Back to our own: staying in the new one would cut the egress
         * proxy and anything else of ours off the host's network. */
        if (setns(own, CLONE_NEWNET) < 0)
                _exit(SBX_EXIT_INTERNAL);
        if (r < 0)
                return r;
        *ret_fd = fd;
        return 0;
}
