#include "worker/db/db.h"

#include "common/dynbuf.h"
#include "common/secret_mask.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Server NOTICEs ("schema already exists, skipping") are not for users. */
static void ignore_notice(void *arg, const char *message)
{
        (void)arg;
        (void)message;
}

#define URL_PIECES_MAX 32

struct url_pieces {
        const char *p[URL_PIECES_MAX];
        size_t n[URL_PIECES_MAX];
        size_t count;
};

static void add_piece(struct url_pieces *s, const char *p, size_t n)
{
        if (n && s->count < URL_PIECES_MAX) {
                s->p[s->count] = p;
                s->n[s->count++] = n;
        }
}

/* What of url an error may not show: the URL, its user:password and
 * password (found by text, so that a URL libpq cannot parse is covered:
 * the last '@' ends them), the password's parts between characters a
 * parser splits at, and each password= value (key=value form, or a URI's
 * query). */
static void url_secret_pieces(const char *url, struct url_pieces *s)
{
        add_piece(s, url, strlen(url));
        const char *scheme = strstr(url, "://");
        const char *at = scheme ? strrchr(scheme + 3, '@') : NULL;
        if (at) {
                const char *auth = scheme + 3;
                add_piece(s, auth, (size_t)(at - auth));
                const char *colon = memchr(auth, ':', (size_t)(at - auth));
                if (colon) {
                        add_piece(s, colon + 1, (size_t)(at - colon - 1));
                        for (const char *f = colon + 1; f < at;) {
                                size_t n = strcspn(f, "/?#&=:@");
                                if (n > (size_t)(at - f))
                                        n = (size_t)(at - f);
                                add_piece(s, f, n);
                                f += n + 1;
                        }
                }
        }
        for (const char *kw = strstr(url, "password="); kw; kw = strstr(kw + 1, "password=")) {
                const char *v = kw + strlen("password=");
                if (*v == '\'') {
                        const char *end = strchr(v + 1, '\'');
                        size_t n = end ? (size_t)(end - v - 1) : strlen(v + 1);
                        add_piece(s, v + 1, n);
                } else {
                        add_piece(s, v, strcspn(v, " &"));
                }
        }
}

static int add_to_dynbuf(void *ctx, const char *p, size_t n)
{
        return dynbuf_add(ctx, p, n);
}

/* Replaces in err's message every piece of url that may be secret with
 * "***" (common/secret_mask.h: pieces under 4 bytes are left). */
static void redact_url_pieces(struct bc_error *err, const char *url)
{
        if (!err || !err->message)
                return;
        struct url_pieces s = { 0 };
        url_secret_pieces(url, &s);
        struct secret_mask *m = secret_mask_new(s.p, s.n, s.count);
        struct dynbuf b;
        size_t len = strlen(err->message);
        dynbuf_init(&b, len + 1);
        if (!m || secret_mask_write(m, err->message, len, add_to_dynbuf, &b) < 0 ||
            secret_mask_flush(m, add_to_dynbuf, &b) < 0) {
                dynbuf_reset(&b);
                dynbuf_addstr(&b, "cannot connect (the message is withheld: out of memory)");
        }
        secret_mask_free(m);
        char *masked = dynbuf_steal(&b);
        if (masked) {
                free(err->message);
                err->message = masked;
        }
}

PGconn *db_connect(const char *url, const char *application_name, struct bc_error *err)
{
        /* No URL: an empty conninfo, so libpq applies its own conventions
         * (PGHOST, PGDATABASE, PGSERVICE, ~/.pgpass ...) as psql does. */
        bool from_env = !url || !*url;
        /* Keywords before "dbname" are defaults: the expanded URL overrides
         * them.  Over TCP, a path that drops packets without a word (a cut
         * link, a NAT or load balancer that forgot the connection) fails a
         * statement after 10 s without an acknowledgement, not after the
         * kernel's retransmissions (about 15 minutes), and an idle
         * connection (LISTEN) is probed: the worker reconnects instead of
         * hanging.  A slow statement is not cut: the server's kernel
         * acknowledges it at once. */
        const char *keys[] = { "application_name",
                               "connect_timeout",
                               "keepalives",
                               "keepalives_idle",
                               "keepalives_interval",
                               "keepalives_count",
                               "tcp_user_timeout",
                               "dbname",
                               NULL };
        const char *vals[] = { application_name,    "5", "1", "10", "5", "3", "10000",
                               from_env ? "" : url, NULL };
        PGconn *conn = PQconnectdbParams(keys, vals, 1);
        if (!conn) {
                bc_error_set(err, BC_DATABASE, ENOMEM, "connect: out of memory");
                return NULL;
        }
        if (PQstatus(conn) != CONNECTION_OK) {
                /* libpq's message names host and port; for a URL it could
                 * not parse it quotes the URL or its part ("invalid
                 * percent-encoded token: \"pa%zzword\""): masked. */
                db_conn_error(conn, err);
                if (!from_env)
                        redact_url_pieces(err, url);
                if (err)
                        err->errnum = ECONNREFUSED;
                if (from_env)
                        bc_error_prefix(err, "connect (no DATABASE_URL or --database-url: "
                                             "libpq defaults and PG* variables)");
                else
                        bc_error_prefix(err, "connect");
                PQfinish(conn);
                return NULL;
        }
        PQsetNoticeProcessor(conn, ignore_notice, NULL);
        db_prepared_attach(conn);
        /* No session settings (search_path…): through PgBouncer in transaction
         * mode they would leak to other clients' sessions.  Every call names
         * the boxcar schema, and pg_catalog, searched first, cannot be
         * shadowed by objects in public. */
        return conn;
}

/* libpq's messages span lines ("...\n\tThis probably means..."): one line
 * fits a log event. */
static void flatten(char *msg)
{
        size_t n = strlen(msg);
        while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
                msg[--n] = '\0';
        /* Line breaks and the indentation after them become one space. */
        char *out = msg;
        for (const char *p = msg; *p; p++) {
                bool space = *p == '\n' || *p == '\t' || *p == ' ';
                if (space && out > msg && out[-1] == ' ')
                        continue;
                *out++ = space ? ' ' : *p;
        }
        *out = '\0';
}

int db_conn_error(PGconn *conn, struct bc_error *err)
{
        int r = bc_error_set(err, BC_DATABASE, ECONNRESET, "%s", PQerrorMessage(conn));
        if (err && err->message)
                flatten(err->message);
        return r;
}

/* The server's message and HINT, on one line.  DETAIL is left out (for a
 * constraint violation it is the whole row, spec included) and so is
 * CONTEXT (the PL/pgSQL call stack, noise to a user). */
void db_result_error(PGconn *conn, const PGresult *res, struct bc_error *err)
{
        const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
        const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
        int errnum = db_connection_lost(conn) ? ECONNRESET : EPROTO;
        if (strcmp(db_sqlstate(res), "3F000") == 0) {
                /* Every statement names the boxcar schema: it is the one missing. */
                bc_error_set(err, BC_CONFIG, ENOENT,
                             "schema boxcar not found: run boxcar migrate");
                return;
        }
        if (primary && strcmp(db_sqlstate(res), "42883") == 0 && strstr(primary, "boxcar.")) {
                /* A function of the SQL API this binary calls is missing. */
                bc_error_set(err, BC_CONFIG, EPROTO,
                             "%s: the database schema is older than this "
                             "boxcar: run boxcar migrate",
                             primary);
                return;
        }
        if (primary && hint)
                bc_error_set(err, BC_DATABASE, errnum, "%s (hint: %s)", primary, hint);
        else if (primary)
                bc_error_set(err, BC_DATABASE, errnum, "%s", primary);
        else
                bc_error_set(err, BC_DATABASE, errnum, "%s", PQerrorMessage(conn));
        if (err && err->message) {
                flatten(err->message);
                /* libpq prefixes "ERROR:  " (one space once flattened). */
                if (strncmp(err->message, "ERROR: ", 7) == 0)
                        memmove(err->message, err->message + 7, strlen(err->message + 7) + 1);
        }
}

PGresult *db_exec(PGconn *conn, const char *sql, int nparams, const char *const *params,
                  struct bc_error *err)
{
        PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
        ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
                return res;
        db_result_error(conn, res, err);
        PQclear(res);
        return NULL;
}

int db_exec_script(PGconn *conn, const char *sql, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = PQexec(conn, sql);
        ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
                return 0;
        db_result_error(conn, res, err);
        return -EPROTO;
}

bool db_connection_lost(PGconn *conn)
{
        return !conn || PQstatus(conn) != CONNECTION_OK;
}

const char *db_sqlstate(const PGresult *res)
{
        const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        return s ? s : "";
}

char *db_url_redact(const char *url)
{
        struct dynbuf b;
        dynbuf_init(&b, 65536);
        const char *p = url ? url : "";
        /* URI form: scheme://user:password@host */
        const char *scheme = strstr(p, "://");
        if (scheme) {
                const char *auth = scheme + 3;
                size_t auth_len = strcspn(auth, "/?");
                const char *at = memchr(auth, '@', auth_len);
                const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
                if (colon) {
                        dynbuf_add(&b, p, (size_t)(colon + 1 - p));
                        dynbuf_addstr(&b, "***");
                        p = at;
                }
        }
        /* key=value form, and ?password= in URIs. */
        for (const char *kw = strstr(p, "password="); kw; kw = strstr(p, "password=")) {
                const char *v = kw + strlen("password=");
                dynbuf_add(&b, p, (size_t)(v - p));
                dynbuf_addstr(&b, "***");
                p = v + strcspn(v, " &");
        }
        dynbuf_addstr(&b, p);
        return dynbuf_steal(&b);
}
