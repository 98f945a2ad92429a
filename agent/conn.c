#include "agent/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Queued output the worker has not read yet: past the soft limit the
 * agent stops reading commands' output; past the hard one the worker is
 * taken for broken (it stopped reading altogether). */
#define CONN_SOFT_MAX (1u << 20)
#define CONN_OUT_MAX (64u << 20)
/* One read from the socket: at most a frame's size (sw_stream_feed's rule:
 * taking every whole frame after each feed, it never overflows). */
#define CONN_READ_MAX (256u * 1024)

int conn_open(struct conn *c, const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int r;
        do
                r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        while (r < 0 && errno == EINTR);
        if (r < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        c->fd = fd;
        sw_stream_init(&c->in);
        dynbuf_init(&c->out, CONN_OUT_MAX);
        c->sent = 0;
        c->dead = false;
        return 0;
}

void conn_close(struct conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        sw_stream_done(&c->in);
        dynbuf_done(&c->out);
}

size_t conn_pending(const struct conn *c)
{
        return c->out.len - c->sent;
}

bool conn_backlogged(const struct conn *c)
{
        return conn_pending(c) > CONN_SOFT_MAX;
}

void conn_read(struct conn *c)
{
        static char buf[CONN_READ_MAX];
        ssize_t n = read(c->fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0 || sw_stream_feed(&c->in, buf, (size_t)n) < 0)
                c->dead = true;
}

void conn_flush(struct conn *c)
{
        while (conn_pending(c) > 0) {
                ssize_t n = send(c->fd, c->out.data + c->sent, conn_pending(c), MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0) {
                        c->dead = true;
                        return;
                }
                c->sent += (size_t)n;
        }
        if (c->sent == c->out.len) {
                dynbuf_reset(&c->out);
                c->sent = 0;
        } else if (c->sent > CONN_SOFT_MAX) {
                /* Give back the written head now and then, not at every
                 * partial write. */
                size_t rest = conn_pending(c);
                memmove(c->out.data, c->out.data + c->sent, rest);
                c->out.len = rest;
                c->sent = 0;
        }
}

static void check(struct conn *c, int r)
{
        if (r < 0)
                c->dead = true;
}

void conn_send_hello(struct conn *c)
{
        size_t start;
        int r = sw_frame_begin(&c->out, SA_HELLO, 0, &start);
        if (r == 0)
                r = sw_put_str(&c->out, SW_VERSION);
        if (r == 0)
                r = sw_frame_end(&c->out, start);
        check(c, r);
}

void conn_send_started(struct conn *c, uint32_t seq, int32_t pid)
{
        size_t start;
        int r = sw_frame_begin(&c->out, SA_STARTED, seq, &start);
        if (r == 0)
                r = sw_put_i32(&c->out, pid);
        if (r == 0)
                r = sw_frame_end(&c->out, start);
        check(c, r);
}

void conn_send_output(struct conn *c, uint32_t seq, uint8_t stream, const char *data, size_t len)
{
        while (len > 0 && !c->dead) {
                size_t n = len < SW_OUTPUT_CHUNK ? len : SW_OUTPUT_CHUNK;
                size_t start;
                int r = sw_frame_begin(&c->out, SA_OUTPUT, seq, &start);
                if (r == 0)
                        r = sw_put_u8(&c->out, stream);
                if (r == 0)
                        r = dynbuf_add(&c->out, data, n);
                if (r == 0)
                        r = sw_frame_end(&c->out, start);
                check(c, r);
                data += n;
                len -= n;
        }
}

void conn_send_failure(struct conn *c, uint32_t seq, const char *what, const char *path, int err)
{
        char msg[1024];
        int n = snprintf(msg, sizeof(msg), "%s%s%s: %s\n", what, path ? " " : "", path ? path : "",
                         strerror(err));
        if (n < 0)
                return;
        conn_send_output(c, seq, 2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

void conn_send_exit(struct conn *c, uint32_t seq, const struct sw_exit *x)
{
        check(c, sw_encode_exit(&c->out, seq, x));
}

void conn_send_file_result(struct conn *c, uint32_t seq, const struct sw_file_result *r)
{
        check(c, sw_encode_file_result(&c->out, seq, r));
}

void conn_send_files_done(struct conn *c, uint32_t seq)
{
        size_t start;
        int r = sw_frame_begin(&c->out, SA_FILES_DONE, seq, &start);
        if (r == 0)
                r = sw_frame_end(&c->out, start);
        check(c, r);
}

void conn_send_code_done(struct conn *c, uint32_t seq, const struct sw_code_done *d)
{
        check(c, sw_encode_code_done(&c->out, seq, d));
}
