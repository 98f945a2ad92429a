/* The dashboard's actions, each a POST of a form with the CSRF token and
 * an id: cancel and retry a job, drain a worker, end a session, redrive a
 * webhook delivery.  Refused (403) unless `boxcar ui --actions`, and refused
 * without a same-origin request and the credential's CSRF token. */
#include <stdio.h>
#include <string.h>

#include "worker/db/api.h"
#include "worker/http/ui-internal.h"
#include "worker/log/log.h"

/* Each runs its SQL API call with the form's id and who asks. */
static int cancel(PGconn *conn, const char *id, const char *who, struct bc_error *err)
{
        (void)who;
        char status[API_STATUS_MAX];
        return api_cancel(conn, id, status, err);
}

static int retry(PGconn *conn, const char *id, const char *who, struct bc_error *err)
{
        char by[sizeof(((struct ui_req *)NULL)->who) + 3];
        snprintf(by, sizeof(by), "ui:%s", who);
        _cleanup_(api_json_rows_done) struct api_json_rows job = { 0 };
        return api_retry(conn, id, by, &job, err);
}

/* A worker already gone is no error here: its page shows its state. */
static int drain(PGconn *conn, const char *id, const char *who, struct bc_error *err)
{
        (void)who;
        int r = api_request_drain(conn, id, err);
        return r < 0 ? r : 0;
}

/* SCOPE/ID: neither part is empty nor has a '/' (a scope is a queue
 * name's first part, a session id has none).  An unknown session is
 * refused by boxcar.end_session, naming it. */
static bool session_key_ok(const char *key)
{
        const char *slash = strchr(key, '/');
        return slash && slash != key && slash[1] && !strchr(slash + 1, '/') &&
               (size_t)(slash - key) < API_SCOPE_MAX;
}

static int end_session(PGconn *conn, const char *key, const char *who, struct bc_error *err)
{
        (void)who;
        char scope[API_SCOPE_MAX], state[API_STATUS_MAX];
        const char *slash = strchr(key, '/');
        memcpy(scope, key, (size_t)(slash - key));
        scope[slash - key] = '\0';
        return api_end_session(conn, scope, slash + 1, state, err);
}

static int redrive(PGconn *conn, const char *id, const char *who, struct bc_error *err)
{
        (void)who;
        char status[API_STATUS_MAX];
        return api_webhook_retry(conn, id, status, err);
}

struct action {
        const char *path;
        int (*call)(PGconn *conn, const char *id, const char *who, struct bc_error *err);
        bool (*id_ok)(const char *id); /* the form's id is well formed; NULL: any */
        bool job;                      /* the id is a job's; back to its page */
        const char *back;              /* else the page to go back to */
};

static const struct action actions[] = {
        { "/actions/cancel", cancel, ui_is_uuid, true, NULL },
        { "/actions/retry", retry, ui_is_uuid, true, NULL },
        { "/actions/drain", drain, NULL, false, "/workers" },
        { "/actions/end-session", end_session, session_key_ok, false, "/sessions" },
        { "/actions/redrive", redrive, NULL, false, "/webhooks" },
};

static const struct action *find(const char *url)
{
        for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
                if (strcmp(url, actions[i].path) == 0)
                        return &actions[i];
        return NULL;
}

bool ui_action_path(const char *url)
{
        return find(url) != NULL;
}

enum MHD_Result ui_action(struct ui *ui, struct ui_req *r)
{
        const struct action *a = find(r->url);
        if (!ui->actions)
                return ui_error_page(ui, r, MHD_HTTP_FORBIDDEN,
                                     "read-only: this dashboard was started without --actions");
        const char *reason = NULL;
        if (!ui_auth_csrf_ok(r, &reason))
                return ui_error_page(ui, r, MHD_HTTP_FORBIDDEN, reason);
        char id[256];
        if (!ui_form_value(&r->body, "id", id, sizeof(id)) || !*id || (a->id_ok && !a->id_ok(id)))
                return ui_error_page(ui, r, MHD_HTTP_BAD_REQUEST, "missing or malformed id");
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = ui_db(ui, &err);
        bool done = conn && a->call(conn, id, r->who, &err) >= 0;
        /* The operator's actions are an audit trail: what, on what, by
         * whom, and whether it took; never a header, token or form. */
        log_event(done ? LOG_INFO : LOG_WARN, "ui.action", "action", a->path + 9, "id", id, "who",
                  r->who, "error", done ? NULL : bc_error_message(&err), NULL);
        if (!done) {
                enum MHD_Result sent = ui_error_page(ui, r, MHD_HTTP_CONFLICT,
                                                     bc_error_message(&err));
                bc_error_clear(&err);
                return sent;
        }
        char back[300];
        snprintf(back, sizeof(back), "/jobs/%s", id);
        return ui_redirect(r->c, a->job ? back : a->back, NULL);
}
