/* A claim's commit, as its jobs' slots see it (claim_gate.h). */
#include "worker/exec/claim_gate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum gate_state { GATE_PENDING, GATE_COMMITTED, GATE_FAILED };

struct claim_gate {
        pthread_mutex_t mu;
        pthread_cond_t decided;
        _Atomic int state; /* enum gate_state; read without mu once decided */
        int fd;
        atomic_uint refs;
};

struct claim_gate *claim_gate_new(unsigned refs)
{
        struct claim_gate *g = calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        g->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (g->fd < 0) {
                free(g);
                return NULL;
        }
        pthread_mutex_init(&g->mu, NULL);
        pthread_cond_init(&g->decided, NULL);
        atomic_init(&g->state, GATE_PENDING);
        atomic_init(&g->refs, refs);
        return g;
}

void claim_gate_decide(struct claim_gate *g, bool committed)
{
        if (!g)
                return;
        pthread_mutex_lock(&g->mu);
        if (atomic_load(&g->state) == GATE_PENDING) {
                atomic_store(&g->state, committed ? GATE_COMMITTED : GATE_FAILED);
                if (committed) {
                        uint64_t one = 1;
                        (void)!write(g->fd, &one, sizeof(one));
                }
                pthread_cond_broadcast(&g->decided);
        }
        pthread_mutex_unlock(&g->mu);
}

bool claim_gate_wait(struct claim_gate *g)
{
        if (!g)
                return true;
        /* Decided once and for all: every later output chunk and event of
         * the job asks again, without the lock. */
        int state = atomic_load(&g->state);
        if (state == GATE_PENDING) {
                pthread_mutex_lock(&g->mu);
                while ((state = atomic_load(&g->state)) == GATE_PENDING)
                        pthread_cond_wait(&g->decided, &g->mu);
                pthread_mutex_unlock(&g->mu);
        }
        return state == GATE_COMMITTED;
}

int claim_gate_fd(const struct claim_gate *g)
{
        return g ? g->fd : -1;
}

void claim_gate_unref(struct claim_gate *g)
{
        if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
                return;
        close(g->fd);
        pthread_cond_destroy(&g->decided);
        pthread_mutex_destroy(&g->mu);
        free(g);
}
