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

/* Room for a handoff: config, stdout, stderr, status, three rw trees and
 * 64 read-only binds, within the kernel's SCM_MAX_FD (253). */
#define FDS_MAX SBX_MSG_FDS_MAX

int sbx_msg_send_fds(int sock, const struct sbx_msg *m, const int *fds, size_t n)
{
        if (n > FDS_MAX)
                return -E2BIG;
        struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
        union {
                char buf[CMSG_SPACE(sizeof(int) * FDS_MAX)];
                struct cmsghdr align;
        } u;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (n > 0) {
                memset(&u, 0, sizeof(u));
                mh.msg_control = u.buf;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        for (;;) {
                ssize_t k = sendmsg(sock, &mh, MSG_NOSIGNAL);
                if (k == (ssize_t)sizeof(*m))
                        return 0;
                if (k >= 0)
                        return -EIO;
                if (errno != EINTR)
                        return -errno;
        }
}

int sbx_msg_send(int sock, const struct sbx_msg *m, int fd)
{
        return sbx_msg_send_fds(sock, m, &fd, fd >= 0 ? 1 : 0);
}

static void close_all(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

int sbx_msg_recv_fds(int sock, struct sbx_msg *ret, int *fds, size_t max, size_t *ret_n)
{
        struct sbx_msg m;
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        union {
                char buf[CMSG_SPACE(sizeof(int) * FDS_MAX)];
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
        int got[FDS_MAX];
        size_t k = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < cnt && k < FDS_MAX; i++)
                        memcpy(&got[k++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
        if (n != (ssize_t)sizeof(m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || k > max) {
                close_all(got, k);
                return -EBADMSG;
        }
        m.path[sizeof(m.path) - 1] = '\0';
        m.message[sizeof(m.message) - 1] = '\0';
        memcpy(fds, got, sizeof(int) * k);
        *ret_n = k;
        *ret = m;
        return 1;
}

int sbx_msg_recv(int sock, struct sbx_msg *ret, int *ret_fd)
{
        int fds[FDS_MAX];
        size_t n = 0;
        int r = sbx_msg_recv_fds(sock, ret, fds, FDS_MAX, &n);
        if (r <= 0)
                return r;
        if (ret_fd)
                *ret_fd = n ? fds[0] : -1;
        close_all(fds + (ret_fd && n ? 1 : 0), n - (ret_fd && n ? 1 : 0));
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
