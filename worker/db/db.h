/* libpq helpers: connecting with sane defaults, running the SQL API with
 * parameters, and telling a lost connection from a failed statement. */
#ifndef BC_WORKER_DB_DB_H
#define BC_WORKER_DB_DB_H

#include <stdbool.h>
#include <libpq-fe.h>

#include "common/cleanup.h"
#include "common/error.h"

BC_DEFINE_CLEANUP(PGresult *, PQclear)
BC_DEFINE_CLEANUP(PGconn *, PQfinish)
#define _cleanup_pgresult_ _cleanup_(PQclearp)
#define _cleanup_pgconn_ _cleanup_(PQfinishp)

/* Opens a connection to url (a libpq URI or key=value string; NULL or ""
 * for libpq's defaults: PGHOST, PGDATABASE ..., ~/.pgpass) with an
 * application_name and a connect timeout unless the URL sets them.
 * Returns the connection (caller PQfinish()es it) or NULL with err set. */
PGconn *db_connect(const char *url, const char *application_name, struct bc_error *err);

/* Runs sql with text parameters (NULL entries are SQL NULLs).  Returns the
 * result when it is COMMAND_OK or TUPLES_OK (caller PQclear()s it), else
 * NULL with err set to BC_DATABASE and the server's message. */
PGresult *db_exec(PGconn *conn, const char *sql, int nparams, const char *const *params,
                  struct bc_error *err);

/* db_exec for the statements run for every job: prepared once per
 * connection (see db_prepared.c), unnamed where that cannot be. */
PGresult *db_exec_hot(PGconn *conn, const char *sql, int nparams, const char *const *params,
                      struct bc_error *err);

/* db_exec_hot for a statement whose rows the caller acts on while its
 * transaction commits (db_early.c).  With *ret_pending, the rows came
 * before the commit: nothing may start on them until db_early_commit
 * returns 0, and the connection runs nothing else until then.  Without,
 * they were committed when they came. */
PGresult *db_exec_early(PGconn *conn, const char *sql, int nparams, const char *const *params,
                        bool *ret_pending, struct bc_error *err);
/* 0 when the pending transaction committed; negative when it did not, or
 * when its answer was lost (err says which: db_connection_lost). */
int db_early_commit(PGconn *conn, struct bc_error *err);

/* For a hot statement sent in a pipeline (PQsendQueryPrepared), where
 * nothing can be prepared on the way: prepares it now, outside one, and
 * names it; false: send it unnamed. */
#define DB_HOT_NAME_MAX 32
bool db_hot_prepare(PGconn *conn, const char *sql, int nparams, char name[DB_HOT_NAME_MAX]);
/* True when res failed because the prepared statement is not usable on
 * this connection's session (db_exec_hot's fallback): preparing is off
 * for the connection from now on; run the statement again. */
bool db_hot_unusable(PGconn *conn, const PGresult *res);

/* Gives a connection from db_connect its prepared statements' state. */
void db_prepared_attach(PGconn *conn);

/* Sets err from a failed result: the server's message and hint on one
 * line (a missing schema or function says to run boxcar migrate). */
void db_result_error(PGconn *conn, const PGresult *res, struct bc_error *err);

/* Runs a script of several statements (migration files); no parameters. */
int db_exec_script(PGconn *conn, const char *sql, struct bc_error *err);

/* Sets err from the connection's last error, on one line; returns -ECONNRESET. */
int db_conn_error(PGconn *conn, struct bc_error *err);

/* True when the connection is gone (server restart, network), as opposed
 * to a statement error on a healthy connection. */
bool db_connection_lost(PGconn *conn);

/* SQLSTATE of a failed result's error, or "" when there is none. */
const char *db_sqlstate(const PGresult *res);

/* A copy of url fit for logs: the password replaced by "***" (both URI and
 * key=value forms).  Caller frees. */
char *db_url_redact(const char *url);

#endif
