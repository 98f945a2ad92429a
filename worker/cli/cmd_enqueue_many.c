/* `boxcar enqueue --many FILE`: the file's jobs through boxcar.enqueue_many,
 * all or none (the SQL function refuses the whole call for one bad job,
 * naming its index). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/io.h"
#include "worker/cli/cli.h"
#include "worker/cli/cmd_enqueue_many.h"
#include "worker/db/db.h"

/* Enough for boxcar.enqueue_many's 10,000 jobs of a few KiB each. */
#define MANY_MAX_BYTES (64u << 20)

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

/* JSON lines: each non-blank line one JSON object, gathered in an array. */
static int read_lines(char *text, cJSON *ret_array, struct bc_error *err)
{
        long line = 0;
        for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
                nl = strchr(p, '\n');
                if (nl)
                        *nl = '\0';
                line++;
                if (p[strspn(p, " \t\r")] == '\0')
                        continue;
                cJSON *job = cJSON_Parse(p);
                if (!job)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--many: line %ld is not JSON",
                                            line);
                cJSON_AddItemToArray(ret_array, job);
        }
        return 0;
}

int enqueue_many_read(const char *path, char **ret, struct bc_error *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (bc_read_all(path, MANY_MAX_BYTES, &text, &len, err) < 0) {
                err->code = BC_USAGE;
                return bc_error_prefix(err, "--many");
        }
        if (strlen(text) != len)
                return bc_error_set(err, BC_USAGE, EINVAL, "--many: the file holds a NUL byte");
        _cleanup_(cJSON_Deletep) cJSON *jobs = NULL;
        if (text[strspn(text, " \t\r\n")] == '[') {
                jobs = cJSON_Parse(text);
                if (!jobs || !cJSON_IsArray(jobs))
                        return bc_error_set(
                                err, BC_USAGE, EINVAL,
                                "--many: the file starts with '[' but is not a JSON array");
        } else {
                jobs = cJSON_CreateArray();
                if (!jobs)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                int r = read_lines(text, jobs, err);
                if (r < 0)
                        return r;
        }
        if (cJSON_GetArraySize(jobs) == 0)
                return bc_error_set(err, BC_USAGE, EINVAL, "--many: the file holds no jobs");
        char *out = cJSON_PrintUnformatted(jobs);
        if (!out)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        *ret = out;
        return 0;
}

int enqueue_many_run(PGconn *conn, const char *path, bool json, struct bc_error *err)
{
        _cleanup_free_ char *jobs = NULL;
        int r = enqueue_many_read(path, &jobs, err);
        if (r < 0)
                return r;
        /* A non-object element reaches enqueue_many, which names it. */
        const char *p[] = { jobs };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select id from unnest(boxcar.enqueue_many(array("
                "  select e from jsonb_array_elements($1::jsonb) with ordinality t(e, o)"
                "   order by o))) with ordinality u(id, o) order by o",
                1, p, err);
        if (!res)
                return -EIO;
        if (!json) {
                for (int i = 0; i < PQntuples(res); i++)
                        printf("%s\n", PQgetvalue(res, i, 0));
                return 0;
        }
        cJSON *ids = cJSON_CreateArray();
        for (int i = 0; ids && i < PQntuples(res); i++)
                cJSON_AddItemToArray(ids, cJSON_CreateString(PQgetvalue(res, i, 0)));
        if (!ids || !cli_print_json(ids))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        return 0;
}
