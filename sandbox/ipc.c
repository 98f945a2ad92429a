/* Messages between the supervisor and the sandboxed side (crun's idea: a
 * child reports its setup error to the parent over a socket before it
 * _exits, so the failure names its step and path).  SOCK_SEQPACKET keeps
 * one message per datagram and carries the workspace fd (SCM_RIGHTS). */
#include "sandbox/helper-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sbx_msg_send(int sock, const struct sbx_msg *m, int fd)
{
        struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                memset(&u, 0, sizeof(u));
                mh.msg_control = u.buf;
                mh.msg_controllen = sizeof(u.buf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        for (;;) {
                ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
                if (n == (ssize_t)sizeof(*m))
                        return 0;
                if (n >= 0)
                        return -EIO;
                if (errno != EINTR)
                        return -errno;
        }
}

int sbx_msg_recv(int sock, struct sbx_msg *ret, int *ret_fd)
{
        struct sbx_msg m;
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = u.buf,
                .msg_controllen = sizeof(u.buf),
        };
        ssize_t n;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return 0;
        int fd = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t)sizeof(m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                if (fd >= 0)
                        close(fd);
                return -EBADMSG;
        }
        m.path[sizeof(m.path) - 1] = '\0';
        m.message[sizeof(m.message) - 1] = '\0';
        if (ret_fd)
                *ret_fd = fd;
        else if (fd >= 0)
                close(fd);
        *ret = m;
        return 1;
}

void sbx_msg_error(struct sbx_msg *m, enum sbx_msg_type type, enum sbx_step step, int errnum,
                   const char *path, const char *fmt, ...)
{
        memset(m, 0, sizeof(*m));
        m->type = type;
        m->step = step;
        m->errnum = errnum;
        if (path)
                snprintf(m->path, sizeof(m->path), "%s", path);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->message, sizeof(m->message), fmt, ap);
        va_end(ap);
}
