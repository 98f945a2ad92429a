#include "agent/relay.h"

#include <errno.h>
#include <unistd.h>

/* One drain of a pipe reads at most this much. */
#define RELAY_DRAIN_MAX (1u << 20)

static char relay_buf[SW_OUTPUT_CHUNK];

void relay_read(struct conn *c, uint32_t seq, struct relay *r, bool drain)
{
        size_t total = 0;
        while (r->fd >= 0 && total < RELAY_DRAIN_MAX) {
                ssize_t n = read(r->fd, relay_buf, sizeof(relay_buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        close(r->fd);
                        r->fd = -1;
                        return;
                }
                if (seq != 0)
                        conn_send_output(c, seq, r->stream, relay_buf, (size_t)n);
                total += (size_t)n;
                if (!drain)
                        return;
        }
}

void leftovers_init(struct leftovers *l)
{
        for (size_t i = 0; i < LEFTOVERS_MAX; i++)
                l->fd[i] = -1;
        l->clock = 0;
}

void leftovers_add(struct leftovers *l, struct relay *r)
{
        if (r->fd < 0)
                return;
        size_t slot = 0;
        for (size_t i = 0; i < LEFTOVERS_MAX; i++) {
                if (l->fd[i] < 0) {
                        slot = i;
                        break;
                }
                if (l->added[i] < l->added[slot])
                        slot = i;
        }
        if (l->fd[slot] >= 0)
                close(l->fd[slot]);
        l->fd[slot] = r->fd;
        l->added[slot] = ++l->clock;
        r->fd = -1;
}

void leftovers_read(int *slot)
{
        for (;;) {
                ssize_t n = read(*slot, relay_buf, sizeof(relay_buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        close(*slot);
                        *slot = -1;
                }
                /* One read per turn of the loop: a busy writer shares the
                 * agent with everything else. */
                return;
        }
}

void leftovers_done(struct leftovers *l)
{
        for (size_t i = 0; i < LEFTOVERS_MAX; i++)
                if (l->fd[i] >= 0)
                        close(l->fd[i]);
        leftovers_init(l);
}
