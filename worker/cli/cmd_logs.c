/* `boxcar logs [-f] [--json] [--raw|--safe] ID`: a job's output as it was
 * written, stdout to stdout and stderr to stderr (--json: one object per
 * stored chunk); -f follows until the job finishes.  A job's output is
 * hostile text: on a terminal its control sequences are shown, not obeyed
 * (term_safe.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dynbuf.h"
#include "common/io.h"
#include "common/utf8.h"
#include "worker/cli/cli.h"
#include "worker/cli/term_safe.h"
#include "worker/db/api.h"
#include "worker/db/db.h"

const char logs_usage[] =
        "usage: boxcar logs [--database-url URL] [-f|--follow] [--json] [--raw|--safe] ID\n"
        "\n"
        "Prints the job's output as the worker stored it while the job ran (stdout to\n"
        "stdout, stderr to stderr, in order; at most the worker's --max-log-bytes).\n"
        "On a terminal, control characters are shown instead of obeyed: ESC and the\n"
        "other C0 controls but newline and tab (a lone CR too) and DEL as ^X (as cat -v),\n"
        "C1 controls U+0080..U+009F as \\u0080, bytes that are not UTF-8 as \\xNN.  Piped\n"
        "or redirected, the bytes pass unchanged.\n"
        "\n"
        "  -f, --follow           keep printing until the job finishes, then exit with the\n"
        "                         job's exit code (1 when it failed without one)\n"
        "  --json                 one JSON object per stored chunk, all on stdout:\n"
        "                         {\"attempt\", \"seq\", \"stream\": \"stdout\"|\"stderr\",\n"
        "                         \"data\": TEXT}, or \"data_base64\" instead of \"data\" for\n"
        "                         a chunk that is not whole UTF-8 text (a character cut\n"
        "                         between chunks, binary output, a NUL byte)\n"
        "  --raw                  the exact bytes, even on a terminal\n"
        "  --safe                 control characters shown, even piped\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

struct cursor {
        int attempt, seq;
        bool json;
        bool safe[3];              /* by stream (1 stdout, 2 stderr): neutralise */
        struct term_safe state[3]; /* by stream */
};

/* Writes a chunk of stream (1 or 2) to its descriptor, neutralised when
 * it goes to a terminal (or --safe); data NULL: the stream's end. */
static int write_chunk(struct cursor *c, int stream, const unsigned char *data, size_t len,
                       struct bc_error *err)
{
        int fd = stream == 2 ? STDERR_FILENO : STDOUT_FILENO;
        if (!c->safe[fd]) {
                if (data)
                        bc_write_all(fd, data, len);
                return 0;
        }
        _cleanup_(dynbuf_donep) struct dynbuf out;
        dynbuf_init(&out, 4 * len + 64);
        int r = data ? term_safe_feed(&c->state[fd], data, len, &out)
                     : term_safe_end(&c->state[fd], &out);
        if (r < 0)
                return bc_error_set(err, BC_INTERNAL, -r, "out of memory");
        bc_write_all(fd, out.data, out.len);
        return 0;
}

/* The end of the output: what a stream held back (a cut character, a CR). */
static int end_streams(struct cursor *c, struct bc_error *err)
{
        if (c->json)
                return 0;
        if (write_chunk(c, 1, NULL, 0, err) < 0 || write_chunk(c, 2, NULL, 0, err) < 0)
                return -ENOMEM;
        return 0;
}

/* False when out of memory. */
static bool print_chunk_json(int attempt, int seq, int stream, const unsigned char *data,
                             size_t len)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "attempt", attempt);
        cJSON_AddNumberToObject(o, "seq", seq);
        cJSON_AddStringToObject(o, "stream", stream == 2 ? "stderr" : "stdout");
        bool text = utf8_valid((const char *)data, len);
        _cleanup_free_ char *s = text ? strndup((const char *)data, len)
                                      : malloc(4 * ((len + 2) / 3) + 1);
        if (!s) {
                cJSON_Delete(o);
                return false;
        }
        if (!text)
                EVP_EncodeBlock((unsigned char *)s, data, (int)len);
        cJSON_AddStringToObject(o, text ? "data" : "data_base64", s);
        return cli_print_json(o);
}

/* Prints every chunk after the cursor; returns how many, or negative. */
static int print_new(PGconn *conn, const char *id, struct cursor *c, struct bc_error *err)
{
        int total = 0;
        for (;;) {
                _cleanup_(api_log_chunks_done) struct api_log_chunks chunks = { 0 };
                if (api_job_logs_after(conn, id, c->attempt, c->seq, &chunks, err) < 0)
                        return -EPROTO;
                for (size_t i = 0; i < chunks.n; i++) {
                        const struct api_log_chunk *k = &chunks.rows[i];
                        if (c->json) {
                                if (!print_chunk_json(k->attempt, k->seq, k->stream, k->data,
                                                      k->len))
                                        return bc_error_set(err, BC_INTERNAL, ENOMEM,
                                                            "out of memory");
                        } else if (write_chunk(c, k->stream, k->data, k->len, err) < 0) {
                                return -ENOMEM;
                        }
                        c->attempt = k->attempt;
                        c->seq = k->seq;
                }
                total += (int)chunks.n;
                if (chunks.n < API_LOG_CHUNKS_MAX)
                        return total;
        }
}

/* Returns -1 while the job runs, else the exit status to end with. */
static int final_status(PGconn *conn, const char *id, struct bc_error *err)
{
        struct api_job_state st;
        int found = api_job_state(conn, id, &st, err);
        if (found < 0)
                return -2;
        if (found == 0) {
                bc_error_set(err, BC_NOT_FOUND, ENOENT, "job %s not found", id);
                return -2;
        }
        if (strcmp(st.status, "succeeded") == 0)
                return 0;
        if (strcmp(st.status, "failed") == 0 || strcmp(st.status, "cancelled") == 0) {
                int code = st.has_exit_code ? st.exit_code : 1;
                return code > 0 && code < 256 ? code : 1;
        }
        return -1;
}

/* Frees the notifications libpq holds; whether there were any. */
static bool drop_notifies(PGconn *conn)
{
        bool any = false;
        for (PGnotify *n = PQnotifies(conn); n; n = PQnotifies(conn)) {
                any = true;
                PQfreemem(n);
        }
        return any;
}

static int follow(PGconn *conn, const char *id, struct cursor *c, struct bc_error *err)
{
        if (db_exec_script(conn, "listen boxcar_logs", err) < 0)
                return -2;
        for (;;) {
                int st = final_status(conn, id, err);
                if (st == -2 || print_new(conn, id, c, err) < 0)
                        return -2;
                if (st >= 0)
                        return end_streams(c, err) < 0 ? -2 : st;
                /* A batch's notification that came during the queries above
                 * was read with their results: libpq holds it, and the
                 * socket has nothing for poll() to see.  Query again. */
                if (drop_notifies(conn))
                        continue;
                /* Woken by the job's batches; the timeout catches its end. */
                struct pollfd pfd = { .fd = PQsocket(conn), .events = POLLIN };
                poll(&pfd, 1, 500);
                if (!PQconsumeInput(conn)) {
                        db_conn_error(conn, err);
                        return -2;
                }
                drop_notifies(conn);
        }
}

int cmd_logs(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, logs_usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        bool json = cli_take_json(&argc, argv);
        bool raw = cli_take_flag(&argc, argv, "--raw");
        bool safe = cli_take_flag(&argc, argv, "--safe");
        if (raw && safe) {
                fprintf(stderr, "boxcar logs: --raw and --safe exclude each other\n");
                return 2;
        }
        bool f = argc == 3 && (strcmp(argv[1], "-f") == 0 || strcmp(argv[1], "--follow") == 0);
        if (argc != 2 && !f) {
                fputs(logs_usage, stderr);
                return 2;
        }
        const char *id = argv[argc - 1];
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        struct cursor c = { .json = json };
        for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
                c.safe[fd] = safe || (!raw && isatty(fd));
        int st = 0;
        if (!conn)
                st = -2;
        else if (f)
                st = follow(conn, id, &c, &err);
        else if (final_status(conn, id, &err) == -2 || print_new(conn, id, &c, &err) < 0 ||
                 end_streams(&c, &err) < 0)
                st = -2;
        if (st == -2) {
                int code = cli_fail("logs", &err);
                bc_error_clear(&err);
                return code;
        }
        return st;
}
