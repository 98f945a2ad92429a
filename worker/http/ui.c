/* `boxcar ui`: the web dashboard, its own process beside the workers.
 *
 * Its own command rather than a route of a worker's --metrics-addr: that
 * endpoint is unauthenticated by design (Prometheus and probes scrape it)
 * and lives in every replica's process, next to running jobs; the
 * dashboard needs credentials, a database connection of its own and
 * write access to the queue, and one of it is enough for a cluster.  It
 * shares the address parsing (worker/http/server.h) and libmicrohttpd.
 * Its command line is read by worker/cli/cmd_ui.c. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/io.h"
#include "worker/db/db.h"
#include "worker/http/server.h"
#include "worker/http/ui-internal.h"
#include "worker/http/ui.h"
#include "worker/log/log.h"

PGconn *ui_db(struct ui *ui, struct bc_error *err)
{
        if (ui->conn && PQstatus(ui->conn) == CONNECTION_OK)
                return ui->conn;
        PQfinish(ui->conn);
        ui->conn = db_connect(ui->db_url, "boxcar-ui", err);
        return ui->conn;
}

enum MHD_Result ui_fail(struct ui *ui, struct ui_req *r, unsigned status, struct bc_error *err)
{
        enum MHD_Result sent = ui_error_page(ui, r, status, bc_error_message(err));
        bc_error_clear(err);
        return sent;
}

/* ---- requests ---- */

static bool is_page(const char *accept)
{
        return accept && strstr(accept, "text/html");
}

static enum MHD_Result unauthenticated(struct ui_req *r)
{
        const char *accept = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_ACCEPT);
        if (strcmp(r->method, MHD_HTTP_METHOD_GET) == 0 && is_page(accept))
                return ui_redirect(r->c, "/login", NULL);
        static const char msg[] = "authentication required\n";
        return ui_send(r->c, MHD_HTTP_UNAUTHORIZED, "text/plain; charset=utf-8", (char *)msg,
                       strlen(msg), MHD_RESPMEM_PERSISTENT, UI_CHALLENGE);
}

static enum MHD_Result serve_asset(struct MHD_Connection *c, const char *type, const char *text)
{
        return ui_send(c, MHD_HTTP_OK, type, (char *)text, strlen(text), MHD_RESPMEM_PERSISTENT,
                       NULL);
}

/* url is PREFIX + a job id + SUFFIX: the id into out. */
static bool job_subpath(const char *url, const char *prefix, const char *suffix, char out[37])
{
        size_t pl = strlen(prefix), sl = strlen(suffix);
        if (strncmp(url, prefix, pl) != 0 || strlen(url) != pl + 36 + sl ||
            strcmp(url + pl + 36, suffix) != 0)
                return false;
        memcpy(out, url + pl, 36);
        out[36] = '\0';
        return ui_is_uuid(out);
}

static enum MHD_Result route_get(struct ui *ui, struct ui_req *r)
{
        char id[37];
        if (strcmp(r->url, "/") == 0)
                return ui_page_queues(ui, r);
        if (strcmp(r->url, "/queue") == 0)
                return ui_page_queue(ui, r);
        if (strcmp(r->url, "/jobs") == 0)
                return ui_page_jobs(ui, r);
        if (job_subpath(r->url, "/jobs/", "", id))
                return ui_page_job(ui, r, id);
        if (job_subpath(r->url, "/api/jobs/", "/log", id))
                return ui_api_log(ui, r, id);
        if (strcmp(r->url, "/workers") == 0)
                return ui_page_workers(ui, r);
        if (strcmp(r->url, "/sessions") == 0)
                return ui_page_sessions(ui, r);
        if (strcmp(r->url, "/schedules") == 0)
                return ui_page_schedules(ui, r);
        if (strcmp(r->url, "/webhooks") == 0)
                return ui_page_webhooks(ui, r);
        if (strcmp(r->url, "/static/app.js") == 0)
                return serve_asset(r->c, "text/javascript; charset=utf-8", ui_app_js);
        return ui_error_page(ui, r, MHD_HTTP_NOT_FOUND, "no such page");
}

static enum MHD_Result route(struct ui *ui, struct ui_req *r)
{
        bool get = strcmp(r->method, MHD_HTTP_METHOD_GET) == 0 ||
                   strcmp(r->method, MHD_HTTP_METHOD_HEAD) == 0;
        bool post = strcmp(r->method, MHD_HTTP_METHOD_POST) == 0;
        if (!get && !post)
                return ui_send_text(r->c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
        if (get && strcmp(r->url, "/static/style.css") == 0)
                return serve_asset(r->c, "text/css; charset=utf-8", ui_style_css);
        if (!ui->token && !ui_auth_host_ok(r))
                return ui_send_text(r->c, MHD_HTTP_MISDIRECTED_REQUEST,
                                    "without auth only a loopback Host is served\n");
        if (r->body_too_big)
                return ui_send_text(r->c, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
        if (strcmp(r->url, "/login") == 0) {
                if (post)
                        return ui_auth_login(ui, r);
                return ui->token ? ui_login_page(r->c, MHD_HTTP_OK, NULL)
                                 : ui_redirect(r->c, "/", NULL);
        }
        ui_auth_identify(ui, r);
        if (r->auth == UI_AUTH_NONE)
                return unauthenticated(r);
        if (get)
                return route_get(ui, r);
        if (strcmp(r->url, "/logout") == 0)
                return ui_auth_logout(ui, r);
        if (strcmp(r->url, "/actions/bulk") == 0)
                return ui_bulk(ui, r);
        if (ui_action_path(r->url))
                return ui_action(ui, r);
        return ui_send_text(r->c, MHD_HTTP_NOT_FOUND, "no such action\n");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
        (void)version;
        struct ui *ui = cls;
        struct ui_req *r = *req_cls;
        if (!r) {
                r = calloc(1, sizeof(*r));
                if (!r)
                        return MHD_NO;
                dynbuf_init(&r->body, UI_BODY_MAX);
                *req_cls = r;
                return MHD_YES;
        }
        if (*upload_data_size) {
                if (dynbuf_add(&r->body, upload_data, *upload_data_size) < 0)
                        r->body_too_big = true;
                *upload_data_size = 0;
                return MHD_YES;
        }
        r->c = c;
        r->method = method;
        r->url = url;
        return route(ui, r);
}

static void completed(void *cls, struct MHD_Connection *c, void **req_cls,
                      enum MHD_RequestTerminationCode toe)
{
        (void)cls;
        (void)c;
        (void)toe;
        struct ui_req *r = *req_cls;
        if (r) {
                dynbuf_done(&r->body);
                free(r);
        }
        *req_cls = NULL;
}

/* ---- the server's life ---- */

static int read_token(const struct ui_options *a, char **ret, struct bc_error *err)
{
        char *t = NULL;
        if (a->token_file) {
                size_t len = 0;
                if (bc_read_all(a->token_file, 4096, &t, &len, err) < 0)
                        return bc_error_prefix(err, "--token-file");
                t[strcspn(t, "\r\n")] = '\0';
        } else if (a->token_env) {
                t = strdup(a->token_env);
                if (!t)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        if (t && strlen(t) < UI_TOKEN_MIN) {
                free(t);
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "the token must have at least %d characters", UI_TOKEN_MIN);
        }
        *ret = t;
        return 0;
}

static bool is_loopback(const struct sockaddr_storage *ss, bool any)
{
        if (any)
                return false;
        if (ss->ss_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static int setup(struct ui *ui, const struct ui_options *a, struct sockaddr_storage *ss, bool *any,
                 struct bc_error *err)
{
        if (http_parse_addr(a->listen, ss, any, err) < 0)
                return bc_error_prefix(err, "--listen");
        ui->loopback = is_loopback(ss, *any);
        ui->actions = a->actions;
        ui->user = a->user;
        ui->secure_cookie = a->secure_cookie;
        if (a->no_auth && (a->token_file || a->token_env))
                return bc_error_set(
                        err, BC_USAGE, EINVAL,
                        "--no-auth and a token (--token-file, BOXCAR_UI_TOKEN) exclude "
                        "each other");
        if (a->no_auth && !ui->loopback)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--no-auth is allowed only on a loopback address "
                                    "(127.0.0.1, [::1], localhost), not %s",
                                    a->listen);
        if (!a->no_auth) {
                if (read_token(a, &ui->token, err) < 0)
                        return -EINVAL;
                if (!ui->token)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "no token: set BOXCAR_UI_TOKEN or --token-file "
                                            "(or --no-auth on a loopback address)");
        }
        if (getrandom(ui->key, sizeof(ui->key), 0) != (ssize_t)sizeof(ui->key))
                return bc_error_set(err, BC_INTERNAL, errno, "getrandom: %s", strerror(errno));
        return 0;
}

static struct MHD_Daemon *start(struct ui *ui, struct sockaddr_storage *ss, bool any)
{
        unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
        if (ss->ss_family == AF_INET6)
                flags |= any ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
        return MHD_start_daemon(flags, 0, NULL, NULL, handle, ui, MHD_OPTION_SOCK_ADDR,
                                (const struct sockaddr *)ss, MHD_OPTION_NOTIFY_COMPLETED,
                                completed, ui, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
}

static int serve(struct ui *ui, const struct ui_options *a, struct sockaddr_storage *ss, bool any,
                 struct bc_error *err)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        /* Blocked before the server's thread starts, so it inherits the
         * mask and the signals reach sigwait below. */
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        struct MHD_Daemon *d = start(ui, ss, any);
        if (!d)
                return bc_error_set(err, BC_CONFIG, EADDRNOTAVAIL,
                                    "--listen %s: cannot listen there (in use, or not an address "
                                    "of this host)",
                                    a->listen);
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        log_event(LOG_INFO, "ui.listening", "listen", a->listen,
                  LOG_INT("port", info ? info->port : 0), "auth",
                  ui->token ? "token" : "none (loopback)", "mode",
                  ui->actions ? "actions" : "read-only", NULL);
        int sig = 0;
        sigwait(&set, &sig);
        MHD_stop_daemon(d);
        log_event(LOG_INFO, "ui.stopped", NULL);
        return 0;
}

int ui_run(const struct ui_options *o, struct bc_error *err)
{
        struct ui *ui = calloc(1, sizeof(*ui));
        struct sockaddr_storage ss;
        bool any = false;
        if (!ui)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        ui->db_url = o->db_url;
        int r = setup(ui, o, &ss, &any, err);
        if (r >= 0)
                r = ui_db(ui, err) ? 0 : -ECONNREFUSED;
        if (r >= 0)
                r = serve(ui, o, &ss, any, err);
        PQfinish(ui->conn);
        if (ui->token)
                explicit_bzero(ui->token, strlen(ui->token));
        free(ui->token);
        free(ui);
        return r;
}
