/* The statements a worker runs for every job (claim, report, live output,
 * events) are prepared once per connection: parsing, resolving and
 * planning `select … from boxcar.claim($1, …)` again at every call cost
 * the database about 0.2 ms per statement (pgbench, one claim + one report
 * per job: 0.96 -> 0.74 ms and 1.45 -> 1.17 ms).
 *
 * Behind PgBouncer in transaction mode a connection's statements may land
 * on another server session, where the prepared one does not exist: the
 * first such answer turns preparing off for that connection and the
 * statement runs unnamed, as everything did before.  Names are the hash of
 * the text, so a session that already has one (another client's, through
 * the pooler) has that very statement. */
#include "worker/db/db.h"

#include <inttypes.h>
#include <libpq-events.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct statements prepared per connection; more run unnamed. */
#define MAX_PREPARED 16

struct prepared {
        bool off;
        unsigned n;
        uint64_t names[MAX_PREPARED];
};

static int on_event(PGEventId id, void *info, void *pass)
{
        (void)pass;
        if (id == PGEVT_CONNRESET) {
                struct prepared *p = PQinstanceData(((PGEventConnReset *)info)->conn, on_event);
                if (p)
                        p->n = 0; /* a new server session has none */
        } else if (id == PGEVT_CONNDESTROY) {
                free(PQinstanceData(((PGEventConnDestroy *)info)->conn, on_event));
        }
        return 1;
}

void db_prepared_attach(PGconn *conn)
{
        struct prepared *p = calloc(1, sizeof(*p));
        if (!p)
                return; /* statements run unnamed */
        if (!PQregisterEventProc(conn, on_event, "boxcar-prepared", NULL) ||
            !PQsetInstanceData(conn, on_event, p))
                free(p);
}

static uint64_t text_hash(const char *s)
{
        uint64_t h = 1469598103934665603ull; /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h;
}

static bool known(const struct prepared *p, uint64_t name)
{
        for (unsigned i = 0; i < p->n; i++)
                if (p->names[i] == name)
                        return true;
        return false;
}

/* Prepares sql as name on conn: true when it is there to run (made now,
 * or already in the session: the same text). */
static bool prepare(PGconn *conn, struct prepared *p, uint64_t hash, const char *name,
                    const char *sql, int nparams)
{
        if (known(p, hash))
                return true;
        if (p->n == MAX_PREPARED)
                return false;
        PGresult *res = PQprepare(conn, name, sql, nparams, NULL);
        bool ok = PQresultStatus(res) == PGRES_COMMAND_OK ||
                  strcmp(db_sqlstate(res), "42P05") == 0; /* duplicate_prepared_statement */
        PQclear(res);
        if (ok)
                p->names[p->n++] = hash;
        return ok;
}

bool db_hot_prepare(PGconn *conn, const char *sql, int nparams, char name[DB_HOT_NAME_MAX])
{
        struct prepared *p = conn ? PQinstanceData(conn, on_event) : NULL;
        if (!p || p->off)
                return false;
        uint64_t hash = text_hash(sql);
        snprintf(name, DB_HOT_NAME_MAX, "boxcar_%016" PRIx64, hash);
        return prepare(conn, p, hash, name, sql, nparams);
}

bool db_hot_unusable(PGconn *conn, const PGresult *res)
{
        struct prepared *p = conn ? PQinstanceData(conn, on_event) : NULL;
        /* 26000: not in this server session (a pooler in transaction mode);
         * 0A000: its result type changed under it (a migration). */
        const char *state = db_sqlstate(res);
        if (!p || (strcmp(state, "26000") != 0 && strcmp(state, "0A000") != 0))
                return false;
        p->off = true;
        return true;
}

PGresult *db_exec_hot(PGconn *conn, const char *sql, int nparams, const char *const *params,
                      struct bc_error *err)
{
        char name[DB_HOT_NAME_MAX];
        /* A statement that cannot be prepared (preparing off, a function
         * missing before a migrate, a lost connection) runs unnamed: its
         * error is told there. */
        if (!db_hot_prepare(conn, sql, nparams, name))
                return db_exec(conn, sql, nparams, params, err);
        PGresult *res = PQexecPrepared(conn, name, nparams, params, NULL, NULL, 0);
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
                return res;
        if (db_hot_unusable(conn, res)) {
                PQclear(res);
                return db_exec(conn, sql, nparams, params, err);
        }
        db_result_error(conn, res, err);
        PQclear(res);
        return NULL;
}
