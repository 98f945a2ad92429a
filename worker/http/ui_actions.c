/* The dashboard's actions, each a POST of a form with the CSRF token and
 * an id: cancel and retry a job, drain a worker, redrive a webhook
 * delivery.  Refused (403) unless `boxcar ui --actions`, and refused
 * without a same-origin request and the credential's CSRF token. */
#include <stdio.h>
#include <string.h>

#include "worker/db/db.h"
#include "worker/http/ui-internal.h"
#include "worker/log/log.h"

struct action {
        const char *path;
        const char *sql;        /* $1 the id, $2 who asks */
        int nparams;
        bool job;               /* the id is a job's; back to its page */
        const char *back;       /* else the page to go back to */
};

static const struct action actions[] = {
        { "/actions/cancel", "select boxcar.cancel($1::uuid)", 1, true, NULL },
        { "/actions/retry", "select boxcar.retry($1::uuid, 'ui:' || $2)", 2, true, NULL },
        { "/actions/drain", "select boxcar.request_drain($1)", 1, false, "/workers" },
        { "/actions/redrive", "select boxcar.webhook_retry($1)", 1, false, "/webhooks" },
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
        if (!ui_form_value(&r->body, "id", id, sizeof(id)) || !*id ||
            (a->job && !ui_is_uuid(id)))
                return ui_error_page(ui, r, MHD_HTTP_BAD_REQUEST, "missing or malformed id");
        struct bc_error err = BC_ERROR_INIT;
        PGconn *conn = ui_db(ui, &err);
        const char *p[] = { id, r->who };
        _cleanup_pgresult_ PGresult *res = conn ? db_exec(conn, a->sql, a->nparams, p, &err) : NULL;
        /* The operator's actions are an audit trail: what, on what, by
         * whom, and whether it took; never a header, token or form. */
        log_event(res ? LOG_INFO : LOG_WARN, "ui.action", "action", a->path + 9, "id", id, "who",
                  r->who, "error", res ? NULL : bc_error_message(&err), NULL);
        if (!res) {
                enum MHD_Result sent = ui_error_page(ui, r, MHD_HTTP_CONFLICT,
                                                     bc_error_message(&err));
                bc_error_clear(&err);
                return sent;
        }
        char back[300];
        snprintf(back, sizeof(back), "/jobs/%s", id);
        return ui_redirect(r->c, a->job ? back : a->back, NULL);
}
