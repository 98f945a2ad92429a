/* How a job ended, in the words the queue stores: the result object
 * (exit, signal, limits hit, output tails), the error {code, message},
 * and what to do with the row (complete, retry, release, drop). */
#include "worker/job/job-internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/utf8.h"
#include "worker/exec/claim_gate.h"

void claimed_job_free(struct claimed_job *job)
{
        if (!job)
                return;
        free(job->queue);
        free(job->spec_json);
        claim_gate_unref(job->gate);
        free(job);
}

void job_outcome_done(struct job_outcome *o)
{
        if (!o)
                return;
        free(o->result_json);
        free(o->error_json);
        free(o->error_code);
        free(o->artifact_json);
        free(o->logs_json);
        memset(o, 0, sizeof(*o));
}

void job_outcome_set_error(struct job_outcome *o, enum bc_code code, const char *message)
{
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", bc_code_name(code));
        cJSON_AddStringToObject(e, "message", message);
        free(o->error_json);
        free(o->error_code);
        o->error_json = cJSON_PrintUnformatted(e);
        o->error_code = strdup(bc_code_name(code));
        cJSON_Delete(e);
}

static void add_stream(cJSON *res, const char *name, const struct tailbuf *t)
{
        size_t len = 0;
        _cleanup_free_ char *raw = tailbuf_copy(t, &len);
        _cleanup_free_ char *text = raw ? utf8_sanitize(raw, len) : NULL;
        char key[32];
        cJSON_AddStringToObject(res, name, text ? text : "");
        snprintf(key, sizeof(key), "%s_truncated", name);
        cJSON_AddBoolToObject(res, key, tailbuf_truncated(t));
        snprintf(key, sizeof(key), "%s_bytes", name);
        cJSON_AddNumberToObject(res, key, (double)t->total);
}

cJSON *job_result_json(const struct backend_result *r)
{
        const struct proc_outcome *p = &r->proc;
        cJSON *res = cJSON_CreateObject();
        if (!res)
                return NULL;
        cJSON_AddNumberToObject(res, "exit_code", p->exit_code);
        if (p->signal)
                cJSON_AddNumberToObject(res, "signal", p->signal);
        else
                cJSON_AddNullToObject(res, "signal");
        cJSON_AddBoolToObject(res, "timed_out", p->timed_out);
        cJSON_AddBoolToObject(res, "oom_killed", r->oom_killed);
        cJSON_AddNumberToObject(res, "wall_ms", (double)p->wall_ms);
        cJSON_AddNumberToObject(res, "cpu_ms", (double)p->cpu_ms);
        cJSON_AddNumberToObject(res, "max_rss_kb", (double)p->max_rss_kb);
        char when[64];
        struct tm tm;
        gmtime_r(&p->started_at.tv_sec, &tm);
        snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 p->started_at.tv_nsec / 1000);
        cJSON_AddStringToObject(res, "started_at", when);
        cJSON_AddStringToObject(res, "sandbox", r->backend);
        if (r->has_network) {
                cJSON *net = cJSON_AddObjectToObject(res, "network");
                cJSON_AddNumberToObject(net, "bytes_out", (double)r->net_bytes_out);
                cJSON_AddNumberToObject(net, "bytes_in", (double)r->net_bytes_in);
                cJSON_AddNumberToObject(net, "connections", (double)r->net_connections);
                cJSON_AddNumberToObject(net, "refused", (double)r->net_refused);
        }
        add_stream(res, "stdout", &p->out);
        add_stream(res, "stderr", &p->err);
        return res;
}

void job_outcome_decide(const struct job_spec *spec, const struct backend_result *r, int stop,
                        struct job_outcome *o)
{
        const struct proc_outcome *p = &r->proc;
        char msg[128];
        o->action = JOB_COMPLETE;
        if (stop == JOB_STOP_DRAIN || stop == JOB_STOP_LOST) {
                o->action = stop == JOB_STOP_DRAIN ? JOB_RELEASE : JOB_DROP;
        } else if (p->cancelled) {
                o->status = "cancelled";
                job_outcome_set_error(o, BC_CANCELLED, "cancelled while running");
        } else if (r->oom_killed) {
                o->status = "failed";
                snprintf(msg, sizeof(msg), "killed for exceeding its %llu MiB memory limit",
                         (unsigned long long)spec->limits.memory_mb);
                job_outcome_set_error(o, BC_OOM, msg);
                if (spec->retry_on & SPEC_RETRY_OOM)
                        o->action = JOB_RETRY;
        } else if (p->timed_out) {
                o->status = "failed";
                snprintf(msg, sizeof(msg), "killed after the %gs timeout", spec->limits.timeout_s);
                job_outcome_set_error(o, BC_TIMEOUT, msg);
                if (spec->retry_on & SPEC_RETRY_TIMEOUT)
                        o->action = JOB_RETRY;
        } else if (p->exit_code != 0) {
                o->status = "failed";
                if (p->signal)
                        snprintf(msg, sizeof(msg), "killed by signal %d (%s)", p->signal,
                                 strsignal(p->signal));
                else
                        snprintf(msg, sizeof(msg), "exited with status %d", p->exit_code);
                job_outcome_set_error(o, BC_NONZERO_EXIT, msg);
                if (spec->retry_on & SPEC_RETRY_NONZERO_EXIT)
                        o->action = JOB_RETRY;
        } else {
                o->status = "succeeded";
        }
}

void job_outcome_fail(struct job_outcome *o, const struct bc_error *err, enum bc_code infra)
{
        enum bc_code code = err->code;
        if (code == BC_DATABASE || code == BC_INTERNAL || code == BC_IO || code == BC_CONFIG ||
            code == BC_OK || code == BC_NOT_FOUND || code == BC_USAGE)
                code = infra;
        bool final = code == BC_BAD_SPEC || code == BC_CHECKSUM_MISMATCH ||
                     code == BC_BAD_ARCHIVE || code == BC_WORKSPACE_LIMIT;
        o->action = final ? JOB_COMPLETE : JOB_RETRY;
        o->status = "failed";
        job_outcome_set_error(o, code, bc_error_message(err));
}
