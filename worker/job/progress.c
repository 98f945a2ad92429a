/* Progress lines checked, rate-limited and stored (progress.h). */
#include "worker/job/progress.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json_strict.h"

static const char *const reason_name[PROGRESS_N_REFUSALS] = {
        [PROGRESS_TOO_LONG] = "too_long",
        [PROGRESS_NOT_JSON] = "not_json",
        [PROGRESS_NOT_OBJECT] = "not_object",
};

void progress_init(struct progress *p, progress_store_fn *store, progress_warn_fn *warn, void *ctx)
{
        memset(p, 0, sizeof(*p));
        p->store = store;
        p->warn = warn;
        p->ctx = ctx;
}

/* The first refusal of each kind is said; the others only counted. */
static void refuse(struct progress *p, enum progress_refusal why, const char *message)
{
        if (p->refused[why]++ || !p->warn)
                return;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "reason", reason_name[why]);
        cJSON_AddNumberToObject(d, "line", (double)p->lines);
        cJSON_AddStringToObject(d, "message", message);
        cJSON_AddStringToObject(d, "note",
                                "further lines refused for this reason are only counted");
        _cleanup_free_ char *json = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
        if (json)
                p->warn(p->ctx, "progress_refused", json);
}

static void store_pending(struct progress *p, uint64_t now_ms, bool last)
{
        struct bc_error err = BC_ERROR_INIT;
        int r = p->store ? p->store(p->ctx, p->pending, &err) : 0;
        bc_error_clear(&err);
        if (r < 0 && !last) {
                p->next_store_ms = now_ms + PROGRESS_RETRY_MS;
                return;
        }
        if (r < 0)
                p->failed++;
        else
                p->stored++;
        free(p->pending);
        p->pending = NULL;
        p->next_store_ms = now_ms + PROGRESS_INTERVAL_MS;
}

/* One whole line (no newline), within the cap. */
static void take_line(struct progress *p, const char *s, size_t len, uint64_t now_ms)
{
        p->lines++;
        size_t start = 0;
        while (start < len && (s[start] == ' ' || s[start] == '\t' || s[start] == '\r'))
                start++;
        if (start == len)
                return; /* a blank line says nothing */
        const char *problem = NULL;
        if (json_strict_check(s, len, PROGRESS_MAX_DEPTH, &problem) < 0) {
                char message[160];
                snprintf(message, sizeof(message), "not one JSON value: %s", problem);
                refuse(p, PROGRESS_NOT_JSON, message);
                return;
        }
        if (s[start] != '{') {
                refuse(p, PROGRESS_NOT_OBJECT, "a report must be a JSON object ({...})");
                return;
        }
        char *report = strndup(s, len);
        if (!report)
                return;
        if (p->pending)
                p->replaced++;
        free(p->pending);
        p->pending = report;
        progress_tick(p, now_ms);
}

void progress_feed(struct progress *p, const char *data, size_t len, uint64_t now_ms)
{
        while (len) {
                const char *nl = memchr(data, '\n', len);
                size_t n = nl ? (size_t)(nl - data) : len;
                if (!p->overlong && p->len + n > PROGRESS_LINE_MAX) {
                        /* Dropped from here to its newline, as it comes. */
                        p->overlong = true;
                        p->len = 0;
                }
                if (!p->overlong) {
                        memcpy(p->line + p->len, data, n);
                        p->len += n;
                }
                if (nl) {
                        if (p->overlong) {
                                p->lines++;
                                char message[96];
                                snprintf(message, sizeof(message),
                                         "a line is at most %d bytes; this one was dropped",
                                         PROGRESS_LINE_MAX);
                                refuse(p, PROGRESS_TOO_LONG, message);
                        } else {
                                take_line(p, p->line, p->len, now_ms);
                        }
                        p->len = 0;
                        p->overlong = false;
                        n++;
                }
                data += n;
                len -= n;
        }
}

void progress_tick(struct progress *p, uint64_t now_ms)
{
        if (p->pending && now_ms >= p->next_store_ms)
                store_pending(p, now_ms, false);
}

void progress_finish(struct progress *p, uint64_t now_ms)
{
        if (p->len || p->overlong)
                progress_feed(p, "\n", 1, now_ms);
        if (p->pending)
                store_pending(p, now_ms, true);
        uint64_t refused = 0;
        for (size_t i = 0; i < PROGRESS_N_REFUSALS; i++)
                refused += p->refused[i];
        if (!refused || !p->warn)
                return;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "lines", (double)p->lines);
        cJSON_AddNumberToObject(d, "stored", (double)p->stored);
        cJSON_AddNumberToObject(d, "replaced", (double)p->replaced);
        cJSON *r = cJSON_AddObjectToObject(d, "refused");
        for (size_t i = 0; i < PROGRESS_N_REFUSALS; i++)
                cJSON_AddNumberToObject(r, reason_name[i], (double)p->refused[i]);
        _cleanup_free_ char *json = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
        if (json)
                p->warn(p->ctx, "progress_counts", json);
}

void progress_done(struct progress *p)
{
        if (!p)
                return;
        free(p->pending);
        p->pending = NULL;
}
