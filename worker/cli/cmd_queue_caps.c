/* `boxcar queue caps Q [--max-… …]`: the most a job of Q may ask for
 * (boxcar.set_queue_caps, sql/39_caps_quotas.sql).  The options become one
 * caps object; the database checks each value against the spec's own
 * range and answers with the field at fault. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/cli/cli.h"
#include "worker/cli/cmd_queue_caps.h"
#include "worker/db/db.h"

/* The numeric caps: option, cap name in the caps object. */
static const struct {
        const char *option, *cap;
} numeric_caps[] = {
        { "max-memory-mb", "memory_mb" },
        { "max-cpus", "cpus" },
        { "max-pids", "pids" },
        { "max-disk-mb", "disk_mb" },
        { "max-files", "files" },
        { "max-timeout-s", "timeout_s" },
        { "max-output-bytes", "output_bytes" },
        { "max-startup-timeout-s", "startup_timeout_s" },
        { "max-session-idle-s", "session_idle_s" },
};
#define N_NUMERIC (sizeof(numeric_caps) / sizeof(numeric_caps[0]))
enum { OPT_IMAGES = 1000, OPT_SESSIONS, OPT_JSON };

static int add_number(cJSON *caps, unsigned i, const char *text, struct bc_error *err)
{
        char *end = NULL;
        errno = 0;
        double v = strtod(text, &end);
        if (!*text || *end || errno || !isfinite(v))
                return bc_error_set(err, BC_USAGE, EINVAL, "--%s: '%s' is not a number",
                                    numeric_caps[i].option, text);
        cJSON_DeleteItemFromObjectCaseSensitive(caps, numeric_caps[i].cap);
        return cJSON_AddNumberToObject(caps, numeric_caps[i].cap, v)
                       ? 0
                       : bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
}

/* "any": no image cap; "none": []; else a comma-separated list of names
 * (checked by the database). */
static int add_images(cJSON *caps, const char *text, struct bc_error *err)
{
        cJSON_DeleteItemFromObjectCaseSensitive(caps, "images");
        if (strcmp(text, "any") == 0)
                return 0;
        cJSON *list = cJSON_AddArrayToObject(caps, "images");
        if (!list)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (strcmp(text, "none") == 0)
                return 0;
        for (const char *p = text;;) {
                size_t n = strcspn(p, ",");
                if (n == 0 || n > 128)
                        return bc_error_set(
                                err, BC_USAGE, EINVAL,
                                "--images: an empty or too long name in '%s' (a,b | none | any)",
                                text);
                char *copy = strndup(p, n);
                cJSON *name = copy ? cJSON_CreateString(copy) : NULL;
                free(copy);
                if (!name)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                cJSON_AddItemToArray(list, name);
                if (!p[n])
                        return 0;
                p += n + 1;
        }
}

static int add_sessions(cJSON *caps, const char *text, struct bc_error *err)
{
        bool on = strcmp(text, "on") == 0;
        if (!on && strcmp(text, "off") != 0)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--sessions: must be on or off, not '%s'", text);
        cJSON_DeleteItemFromObjectCaseSensitive(caps, "sessions");
        return cJSON_AddBoolToObject(caps, "sessions", on)
                       ? 0
                       : bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
}

static int parse_caps(int argc, char **argv, cJSON *caps, bool *ret_json, struct bc_error *err)
{
        struct option opts[N_NUMERIC + 4];
        for (unsigned i = 0; i < N_NUMERIC; i++)
                opts[i] = (struct option){ numeric_caps[i].option, required_argument, NULL,
                                           (int)i };
        opts[N_NUMERIC] = (struct option){ "images", required_argument, NULL, OPT_IMAGES };
        opts[N_NUMERIC + 1] = (struct option){ "sessions", required_argument, NULL, OPT_SESSIONS };
        opts[N_NUMERIC + 2] = (struct option){ "json", no_argument, NULL, OPT_JSON };
        opts[N_NUMERIC + 3] = (struct option){ NULL, 0, NULL, 0 };
        bool json = false;
        optind = 0;
        opterr = 0;
        for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
                int r = 0;
                if (o >= 0 && (unsigned)o < N_NUMERIC)
                        r = add_number(caps, (unsigned)o, optarg, err);
                else if (o == OPT_IMAGES)
                        r = add_images(caps, optarg, err);
                else if (o == OPT_SESSIONS)
                        r = add_sessions(caps, optarg, err);
                else if (o == OPT_JSON)
                        json = true;
                else
                        r = cli_bad_option(argv, err);
                if (r < 0)
                        return r;
        }
        if (optind + 1 != argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "expected one queue name Q");
        *ret_json = json;
        return optind;
}

static void print_caps(const char *json_text)
{
        cJSON *c = cJSON_Parse(json_text);
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(c, "queue");
        char *caps = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c, "caps"));
        printf("%-32s caps=%s\n", cJSON_IsString(q) ? q->valuestring : "?", caps ? caps : "?");
        free(caps);
        cJSON_Delete(c);
}

int cmd_queue_caps(int argc, char **argv, const char *url)
{
        struct bc_error err = BC_ERROR_INIT;
        cJSON *caps = cJSON_CreateObject();
        bool json = false;
        int q = caps ? parse_caps(argc, argv, caps, &json, &err)
                     : bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
        char *text = q >= 0 ? cJSON_PrintUnformatted(caps) : NULL;
        cJSON_Delete(caps);
        if (q < 0)
                return cli_fail("queue caps", &err);
        if (!text) {
                bc_error_set(&err, BC_INTERNAL, ENOMEM, "out of memory");
                return cli_fail("queue caps", &err);
        }
        const char *p[] = { argv[q], text };
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-cli", &err);
        PGresult *res = conn ? db_exec(conn, "select boxcar.set_queue_caps($1, $2::jsonb)", 2, p,
                                       &err)
                             : NULL;
        free(text);
        if (!res)
                return cli_fail("queue caps", &err);
        if (json)
                printf("%s\n", PQgetvalue(res, 0, 0));
        else
                print_caps(PQgetvalue(res, 0, 0));
        PQclear(res);
        return 0;
}

int cmd_queue_caps_ls(PGconn *conn, bool json, struct bc_error *err)
{
        _cleanup_pgresult_ PGresult *res = db_exec(conn, "select boxcar.queue_caps_ls()", 0, NULL,
                                                   err);
        if (!res)
                return -EPROTO;
        for (int i = 0; i < PQntuples(res); i++) {
                if (json)
                        printf("%s\n", PQgetvalue(res, i, 0));
                else
                        print_caps(PQgetvalue(res, i, 0));
        }
        return 0;
}
