/* The helper's status object, written by boxcar-sandbox and read by the
 * worker:
 *
 *   {"exit_code": 0, "signal": 0, "timed_out": false, "oom_killed": false,
 *    "cancelled": false, "wall_ms": 12, "cpu_ms": 3, "max_rss_kb": 1234,
 *    "setup_us": 800,
 *    "setup_error": {"step": "mount", "path": "/usr", "errno": 2,
 *                    "message": "..."},          only when setup failed
 *    "exec_error": {"path": "python4", "errno": 2, "message": "..."},
 *                                                only when exec failed
 *    "sandbox_killed": true}                     only when the sandbox's init
 *                                                was killed from outside
 * The helper writes it with status_write.c (no JSON library in the
 * helper, which is linked statically). */
#include "sandbox/sandbox.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "sandbox/helper-internal.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

#define STATUS_MAX (64 * 1024)

static int get_int(const cJSON *o, const char *key, int lo, int hi, int *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!v)
                return 0;
        if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi)
                return -EINVAL;
        *ret = (int)v->valuedouble;
        return 0;
}

static int get_u64(const cJSON *o, const char *key, uint64_t *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!v)
                return 0;
        /* 2^53: beyond it a JSON number is no longer an exact integer. */
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0)
                return -EINVAL;
        *ret = (uint64_t)v->valuedouble;
        return 0;
}

static int get_bool(const cJSON *o, const char *key, bool *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!v)
                return 0;
        if (!cJSON_IsBool(v))
                return -EINVAL;
        *ret = cJSON_IsTrue(v);
        return 0;
}

static int get_str(const cJSON *o, const char *key, char **ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!v || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsString(v))
                return -EINVAL;
        char *s = strdup(v->valuestring);
        if (!s)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 0;
}

static int parse_error_object(const cJSON *e, struct sandbox_status *s)
{
        if (!cJSON_IsObject(e))
                return -EINVAL;
        int r = get_str(e, "step", &s->setup_step);
        if (r >= 0)
                r = get_str(e, "path", &s->setup_path);
        if (r >= 0)
                r = get_str(e, "message", &s->message);
        if (r >= 0)
                r = get_int(e, "errno", 0, 4095, &s->setup_errno);
        return r;
}

/* "network" (--network allow): counters and the refused attempts. */
static int parse_network(const cJSON *n, struct sandbox_status *s)
{
        if (!cJSON_IsObject(n))
                return -EINVAL;
        s->has_network = true;
        int r = get_u64(n, "bytes_out", &s->net_bytes_out);
        if (r >= 0)
                r = get_u64(n, "bytes_in", &s->net_bytes_in);
        if (r >= 0)
                r = get_u64(n, "connections", &s->net_connections);
        if (r >= 0)
                r = get_u64(n, "refused", &s->net_refused);
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "refused_list");
        if (r < 0 || !list)
                return r;
        if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > 64)
                return -EINVAL;
        s->net_refused_list = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(char *));
        if (!s->net_refused_list)
                return -ENOMEM;
        const cJSON *it;
        cJSON_ArrayForEach (it, list) {
                if (!cJSON_IsString(it))
                        return -EINVAL;
                if (!(s->net_refused_list[s->n_net_refused_list] = strdup(it->valuestring)))
                        return -ENOMEM;
                s->n_net_refused_list++;
        }
        return 0;
}

static int parse_root(const cJSON *root, struct sandbox_status *s)
{
        int r = get_int(root, "exit_code", 0, 255, &s->exit_code);
        if (r >= 0)
                r = get_int(root, "signal", 0, 64, &s->signal);
        if (r >= 0)
                r = get_bool(root, "timed_out", &s->timed_out);
        if (r >= 0)
                r = get_bool(root, "oom_killed", &s->oom_killed);
        if (r >= 0)
                r = get_bool(root, "cancelled", &s->cancelled);
        if (r >= 0)
                r = get_bool(root, "sandbox_killed", &s->sandbox_killed);
        if (r >= 0)
                r = get_u64(root, "wall_ms", &s->wall_ms);
        if (r >= 0)
                r = get_u64(root, "cpu_ms", &s->cpu_ms);
        if (r >= 0)
                r = get_u64(root, "max_rss_kb", &s->max_rss_kb);
        if (r >= 0)
                r = get_u64(root, "setup_us", &s->setup_us);
        if (r < 0)
                return r;
        const cJSON *setup = cJSON_GetObjectItemCaseSensitive(root, "setup_error");
        const cJSON *exec = cJSON_GetObjectItemCaseSensitive(root, "exec_error");
        if (setup && !cJSON_IsNull(setup)) {
                s->setup_failed = true;
                r = parse_error_object(setup, s);
                if (r >= 0 && !s->setup_step)
                        r = -EINVAL;
        } else if (exec && !cJSON_IsNull(exec)) {
                s->exec_failed = true;
                r = parse_error_object(exec, s);
        }
        const cJSON *net = cJSON_GetObjectItemCaseSensitive(root, "network");
        if (r >= 0 && net && !cJSON_IsNull(net))
                r = parse_network(net, s);
        return r;
}

int sandbox_status_parse(const char *json, size_t len, struct sandbox_status *ret,
                         struct bc_error *err)
{
        if (!json || len == 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL, "sandbox status: empty");
        if (len > STATUS_MAX)
                return bc_error_set(err, BC_SANDBOX_SETUP, E2BIG, "sandbox status: over %d bytes",
                                    STATUS_MAX);
        _cleanup_(cJSON_Deletep) cJSON *root = cJSON_ParseWithLength(json, len);
        if (!cJSON_IsObject(root))
                return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL,
                                    "sandbox status: not a JSON object");
        struct sandbox_status s = { 0 };
        int r = parse_root(root, &s);
        if (r < 0) {
                sandbox_status_done(&s);
                return bc_error_set(err, BC_SANDBOX_SETUP, -r, "sandbox status: %s",
                                    r == -ENOMEM ? "out of memory" : "bad field");
        }
        *ret = s;
        return 0;
}
