/* A fixed number of database connections shared by a worker's job slots,
 * so that a replica needs the same few connections whatever its
 * concurrency (as River and Oban pool theirs).  A slot holds one only for
 * the statement it runs, never across a download or a job's run. */
#ifndef BC_WORKER_DB_DB_POOL_H
#define BC_WORKER_DB_DB_POOL_H

#include <libpq-fe.h>

#include "common/error.h"

struct db_pool;

/* A pool of at most size connections to url, opened on first use. */
struct db_pool *db_pool_new(const char *url, const char *application_name, unsigned size);
void db_pool_free(struct db_pool *p);

/* A connection of the pool's, waiting while all are taken, (re)connected
 * when it is missing or lost; NULL with err set when the database cannot be
 * reached.  Give it back with db_pool_put. */
PGconn *db_pool_get(struct db_pool *p, struct bc_error *err);
void db_pool_put(struct db_pool *p, PGconn *conn);

/* db_exec_hot on a connection of the pool's, held only for the statement. */
PGresult *db_pool_exec(struct db_pool *p, const char *sql, int nparams, const char *const *params,
                       struct bc_error *err);

#endif
