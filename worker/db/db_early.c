/* A hot statement whose rows the worker acts on before its transaction
 * is durable (the claim): BEGIN, the statement, a Flush, COMMIT and a Sync
 * go out together in one pipeline.  The server executes the statement and,
 * at the Flush, sends its rows at once; then it commits, which waits for
 * the WAL to reach the disk (an fdatasync), and answers the COMMIT: about
 * 0.15 ms after the rows, in the queue-sandbox bench.  The caller prepares
 * the rows' work meanwhile and starts nothing until db_early_commit says
 * the commit held.
 *
 * A connection that cannot pipeline (one already in a pipeline) runs the
 * statement as db_exec_hot does, committed when it returns. */
#include "worker/db/db.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Reads what is left of the pipeline up to its Sync, then leaves pipeline
 * mode; false when the connection broke meanwhile. */
static bool finish_pipeline(PGconn *conn)
{
        /* A NULL comes between two statements' results; a run of them
         * means libpq has nothing more to give. */
        for (int idle = 0; idle < 8;) {
                PGresult *res = PQgetResult(conn);
                if (!res) {
                        if (PQstatus(conn) == CONNECTION_BAD)
                                return false;
                        idle++;
                        continue;
                }
                idle = 0;
                ExecStatusType st = PQresultStatus(res);
                PQclear(res);
                if (st == PGRES_PIPELINE_SYNC)
                        return PQexitPipelineMode(conn) == 1;
                if (PQstatus(conn) == CONNECTION_BAD)
                        return false;
        }
        return false;
}

/* A statement that failed in the pipeline leaves its explicit transaction
 * open and aborted after the Sync (the server skips the COMMIT): ended
 * here, or every later statement on the connection would fail ("current
 * transaction is aborted"), and a pooler would keep its server session. */
static void end_transaction(PGconn *conn)
{
        if (PQtransactionStatus(conn) == PQTRANS_INERROR ||
            PQtransactionStatus(conn) == PQTRANS_INTRANS)
                PQclear(PQexec(conn, "rollback"));
}

/* The next statement's result (and the NULL after it), or NULL when the
 * connection broke. */
static PGresult *next_result(PGconn *conn)
{
        PGresult *res = PQgetResult(conn);
        if (res && PQresultStatus(res) != PGRES_PIPELINE_SYNC) {
                PGresult *end = PQgetResult(conn);
                PQclear(end);
        }
        return res;
}

static bool send_all(PGconn *conn, const char *name, const char *sql, int nparams,
                     const char *const *params)
{
        bool named = name != NULL;
        return PQsendQueryParams(conn, "begin", 0, NULL, NULL, NULL, NULL, 0) &&
               (named ? PQsendQueryPrepared(conn, name, nparams, params, NULL, NULL, 0)
                      : PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0)) &&
               PQsendFlushRequest(conn) &&
               PQsendQueryParams(conn, "commit", 0, NULL, NULL, NULL, NULL, 0) &&
               PQpipelineSync(conn);
}

PGresult *db_exec_early(PGconn *conn, const char *sql, int nparams, const char *const *params,
                        bool *ret_pending, struct bc_error *err)
{
        *ret_pending = false;
        char name[DB_HOT_NAME_MAX];
        /* Prepared outside the pipeline: PQprepare cannot run in one. */
        bool named = conn && db_hot_prepare(conn, sql, nparams, name);
        if (!conn || PQpipelineStatus(conn) != PQ_PIPELINE_OFF || !PQenterPipelineMode(conn))
                return db_exec_hot(conn, sql, nparams, params, err);
        if (!send_all(conn, named ? name : NULL, sql, nparams, params)) {
                db_conn_error(conn, err);
                if (PQpipelineStatus(conn) != PQ_PIPELINE_OFF && finish_pipeline(conn))
                        end_transaction(conn);
                return NULL;
        }
        PGresult *begin = next_result(conn);
        bool began = begin && PQresultStatus(begin) == PGRES_COMMAND_OK;
        PQclear(begin);
        PGresult *res = began ? next_result(conn) : NULL;
        ExecStatusType st = PQresultStatus(res);
        if (res && (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)) {
                *ret_pending = true;
                return res;
        }
        bool again = res && db_hot_unusable(conn, res);
        if (res && !again)
                db_result_error(conn, res, err);
        else if (!res)
                db_conn_error(conn, err);
        PQclear(res);
        /* The COMMIT is skipped (the transaction failed): it commits nothing. */
        if (!finish_pipeline(conn)) {
                if (!err->message)
                        db_conn_error(conn, err);
                return NULL;
        }
        end_transaction(conn);
        /* Its prepared statement was not in this session: unnamed now. */
        return again ? db_exec_hot(conn, sql, nparams, params, err) : NULL;
}

int db_early_commit(PGconn *conn, struct bc_error *err)
{
        PGresult *res = next_result(conn);
        bool committed = res && PQresultStatus(res) == PGRES_COMMAND_OK &&
                         strcmp(PQcmdStatus(res), "COMMIT") == 0;
        if (!res)
                db_conn_error(conn, err);
        else if (PQresultStatus(res) != PGRES_COMMAND_OK)
                db_result_error(conn, res, err);
        else if (!committed)
                bc_error_set(err, BC_DATABASE, EPROTO, "the transaction was rolled back (%s)",
                             PQcmdStatus(res));
        PQclear(res);
        /* Committed, then the connection broke: the commit holds. */
        if (finish_pipeline(conn))
                end_transaction(conn);
        return committed ? 0 : -EPROTO;
}
