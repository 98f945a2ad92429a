#include "worker/db/db_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "worker/db/db.h"

struct db_pool {
        pthread_mutex_t lock;
        pthread_cond_t freed;
        char *url, *application_name;
        unsigned size;
        PGconn **conns; /* NULL: not opened yet, or dropped when lost */
        bool *taken;
};

struct db_pool *db_pool_new(const char *url, const char *application_name, unsigned size)
{
        struct db_pool *p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->freed, NULL);
        p->size = size ? size : 1;
        p->url = strdup(url ? url : "");
        p->application_name = strdup(application_name);
        p->conns = calloc(p->size, sizeof(*p->conns));
        p->taken = calloc(p->size, sizeof(*p->taken));
        if (!p->url || !p->application_name || !p->conns || !p->taken) {
                db_pool_free(p);
                return NULL;
        }
        return p;
}

void db_pool_free(struct db_pool *p)
{
        if (!p)
                return;
        for (unsigned i = 0; p->conns && i < p->size; i++)
                PQfinish(p->conns[i]);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->freed);
        free(p->conns);
        free(p->taken);
        free(p->url);
        free(p->application_name);
        free(p);
}

/* A free entry, an open connection's first (no connect while one is open). */
static int free_entry(const struct db_pool *p)
{
        int empty = -1;
        for (unsigned i = 0; i < p->size; i++) {
                if (p->taken[i])
                        continue;
                if (p->conns[i])
                        return (int)i;
                if (empty < 0)
                        empty = (int)i;
        }
        return empty;
}

PGconn *db_pool_get(struct db_pool *p, struct bc_error *err)
{
        pthread_mutex_lock(&p->lock);
        int i;
        while ((i = free_entry(p)) < 0)
                pthread_cond_wait(&p->freed, &p->lock);
        p->taken[i] = true;
        PGconn *conn = p->conns[i];
        pthread_mutex_unlock(&p->lock);
        /* Connecting (or finding a connection lost) happens outside the
         * lock: the other entries stay usable meanwhile. */
        if (conn && db_connection_lost(conn)) {
                PQfinish(conn);
                conn = NULL;
        }
        if (!conn)
                conn = db_connect(p->url, p->application_name, err);
        pthread_mutex_lock(&p->lock);
        p->conns[i] = conn;
        if (!conn) {
                p->taken[i] = false;
                pthread_cond_signal(&p->freed);
        }
        pthread_mutex_unlock(&p->lock);
        return conn;
}

void db_pool_put(struct db_pool *p, PGconn *conn)
{
        if (!conn)
                return;
        pthread_mutex_lock(&p->lock);
        for (unsigned i = 0; i < p->size; i++) {
                if (p->conns[i] == conn) {
                        p->taken[i] = false;
                        pthread_cond_signal(&p->freed);
                        break;
                }
        }
        pthread_mutex_unlock(&p->lock);
}

PGresult *db_pool_exec(struct db_pool *p, const char *sql, int nparams, const char *const *params,
                       struct bc_error *err)
{
        PGconn *conn = db_pool_get(p, err);
        if (!conn)
                return NULL;
        PGresult *res = db_exec_hot(conn, sql, nparams, params, err);
        db_pool_put(p, conn);
        return res;
}
