/* A bounded ring of NBUF input chunks between the packer (producer) and
 * one compressor thread (consumer).  The producer fills bufs[tail] while it
 * is not queued; count says how many chunks are queued for deflate. */
#include "storage/gzpipe.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/io.h"

#define NBUF 4
#define CHUNK (1024 * 1024)
#define OUTBUF (256 * 1024)

struct gzpipe {
        pthread_t thread;
        pthread_mutex_t mu;
        pthread_cond_t cv;
        unsigned char *bufs[NBUF];
        size_t len[NBUF];
        unsigned head, tail, count;
        bool done, stop;
        int errnum; /* the compressor's first error */
        int fd;
        EVP_MD_CTX *sha;
        uint64_t size;
        z_stream z;
        unsigned char *out;
};

/* Writes and hashes what deflate put in the output buffer. */
static int write_out(struct gzpipe *g)
{
        size_t n = OUTBUF - g->z.avail_out;
        if (!n)
                return 0;
        int r = bc_write_all(g->fd, g->out, n);
        if (r < 0)
                return r;
        EVP_DigestUpdate(g->sha, g->out, n);
        g->size += n;
        return 0;
}

static int emit(struct gzpipe *g, int flush, const unsigned char *in, size_t len)
{
        g->z.next_in = (unsigned char *)in;
        g->z.avail_in = (uInt)len;
        do {
                g->z.next_out = g->out;
                g->z.avail_out = OUTBUF;
                int zr = deflate(&g->z, flush);
                if (zr == Z_STREAM_ERROR)
                        return -EIO;
                int r = write_out(g);
                if (r < 0)
                        return r;
        } while (g->z.avail_out == 0); /* full output: more may be pending */
        return 0;
}

static int finish_stream(struct gzpipe *g)
{
        for (;;) {
                g->z.next_out = g->out;
                g->z.avail_out = OUTBUF;
                int zr = deflate(&g->z, Z_FINISH);
                int r = write_out(g);
                if (r < 0)
                        return r;
                if (zr == Z_STREAM_END)
                        return 0;
                if (zr != Z_OK && zr != Z_BUF_ERROR)
                        return -EIO;
        }
}

static void *run(void *arg)
{
        struct gzpipe *g = arg;
        pthread_mutex_lock(&g->mu);
        for (;;) {
                while (g->count == 0 && !g->done && !g->stop)
                        pthread_cond_wait(&g->cv, &g->mu);
                if (g->stop || (g->count == 0 && g->done))
                        break;
                unsigned i = g->head;
                pthread_mutex_unlock(&g->mu);
                int r = g->errnum ? 0 : emit(g, Z_NO_FLUSH, g->bufs[i], g->len[i]);
                pthread_mutex_lock(&g->mu);
                if (r < 0 && !g->errnum)
                        g->errnum = -r;
                g->len[i] = 0;
                g->head = (g->head + 1) % NBUF;
                g->count--;
                pthread_cond_broadcast(&g->cv);
        }
        bool finish = g->done && !g->stop && !g->errnum;
        pthread_mutex_unlock(&g->mu);
        if (finish) {
                int r = finish_stream(g);
                if (r < 0)
                        g->errnum = -r;
        }
        return NULL;
}

static void free_pipe(struct gzpipe *g)
{
        deflateEnd(&g->z);
        for (unsigned i = 0; i < NBUF; i++)
                free(g->bufs[i]);
        free(g->out);
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g);
}

int gzpipe_start(struct gzpipe **ret, int fd, EVP_MD_CTX *sha, int level)
{
        struct gzpipe *g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->fd = fd;
        g->sha = sha;
        pthread_mutex_init(&g->mu, NULL);
        pthread_cond_init(&g->cv, NULL);
        /* windowBits 15 + 16: a gzip wrapper; zlib writes time 0, no name. */
        if (deflateInit2(&g->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
                pthread_mutex_destroy(&g->mu);
                pthread_cond_destroy(&g->cv);
                free(g);
                return -ENOMEM;
        }
        g->out = malloc(OUTBUF);
        bool ok = g->out != NULL;
        for (unsigned i = 0; i < NBUF; i++)
                ok = ok && (g->bufs[i] = malloc(CHUNK)) != NULL;
        if (!ok) {
                free_pipe(g);
                return -ENOMEM;
        }
        int r = pthread_create(&g->thread, NULL, run, g);
        if (r != 0) {
                free_pipe(g);
                return -r;
        }
        *ret = g;
        return 0;
}

/* Queues the chunk being filled; waits for a free one. */
static int push(struct gzpipe *g)
{
        pthread_mutex_lock(&g->mu);
        g->count++;
        g->tail = (g->tail + 1) % NBUF;
        pthread_cond_broadcast(&g->cv);
        while (g->count == NBUF && !g->errnum)
                pthread_cond_wait(&g->cv, &g->mu);
        int e = g->errnum;
        pthread_mutex_unlock(&g->mu);
        return e ? -e : 0;
}

int gzpipe_write(struct gzpipe *g, const void *buf, size_t len)
{
        const unsigned char *p = buf;
        while (len) {
                unsigned t = g->tail;
                size_t n = CHUNK - g->len[t];
                if (n > len)
                        n = len;
                memcpy(g->bufs[t] + g->len[t], p, n);
                g->len[t] += n;
                p += n;
                len -= n;
                if (g->len[t] == CHUNK) {
                        int r = push(g);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int gzpipe_finish(struct gzpipe *g, uint64_t *ret_size)
{
        int r = 0;
        if (g->len[g->tail])
                r = push(g);
        pthread_mutex_lock(&g->mu);
        g->done = true;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
        if (r == 0 && g->errnum)
                r = -g->errnum;
        *ret_size = g->size;
        free_pipe(g);
        return r;
}

void gzpipe_abort(struct gzpipe *g)
{
        if (!g)
                return;
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
        free_pipe(g);
}
