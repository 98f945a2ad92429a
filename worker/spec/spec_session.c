/* The session parts of a job spec (docs/job-spec.md "session", "stdin",
 * "files"): the session a job runs in, the text it gets on stdin, and a
 * list of file operations instead of a command.  sql/10_spec.sql checks
 * the same rules in the same order with the same messages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/cleanup.h"
#include "worker/spec/spec-internal.h"

/* "session-" + id must be a storage name (at most SPEC_NAME_MAX): the name
 * of a session of scope "default" (boxcar.session_storage_name). */
#define SESSION_ID_MAX (SPEC_NAME_MAX - (sizeof(SPEC_SESSION_STORAGE_PREFIX) - 1))
/* files[].path and files[].to, in bytes: a path longer than PATH_MAX
 * cannot name a file anyway, so longer ones are refused at enqueue. */
#define FILE_PATH_MAX 4096

static int parse_from(const cJSON *v, struct spec_session *s, struct bc_error *err)
{
        static const char *const fields[] = { "session", "version", NULL };
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "session.from: must be an object");
        int r = spec_unknown_field(v, "session.from.", fields, err);
        if (r < 0)
                return r;
        r = spec_name(cJSON_GetObjectItemCaseSensitive(v, "session"), "session.from.session",
                      SESSION_ID_MAX, &s->from_session, err);
        if (r < 0)
                return r;
        /* A session forks another one's checkpoint; its own has none yet. */
        if (strcmp(s->from_session, s->id) == 0)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "session.from.session: must name another session");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(v, "version");
        if (version && !(cJSON_IsString(version) && (strcmp(version->valuestring, "latest") == 0 ||
                                                     spec_is_sha256(version->valuestring))))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "session.from.version: must be \"latest\" or a sha256");
        s->from_version = strdup(version ? version->valuestring : "latest");
        if (!s->from_version)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "session.from: out of memory");
        return 0;
}

int spec_parse_session(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        static const char *const fields[] = { "id", "idle_timeout_s", "from", NULL };
        if (!v)
                return 0;
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "session: must be an object");
        int r = spec_unknown_field(v, "session.", fields, err);
        if (r < 0)
                return r;
        struct spec_session *s = &spec->session;
        r = spec_name(cJSON_GetObjectItemCaseSensitive(v, "id"), "session.id", SESSION_ID_MAX,
                      &s->id, err);
        if (r < 0)
                return r;
        s->idle_timeout_s = SPEC_DEFAULT_IDLE_TIMEOUT_S;
        const cJSON *idle = cJSON_GetObjectItemCaseSensitive(v, "idle_timeout_s");
        if (idle) {
                r = spec_number(idle, "session.idle_timeout_s", 1, SPEC_MAX_IDLE_TIMEOUT_S, false,
                                &s->idle_timeout_s, err);
                if (r < 0)
                        return r;
        }
        const cJSON *from = cJSON_GetObjectItemCaseSensitive(v, "from");
        return from ? parse_from(from, s, err) : 0;
}

int spec_parse_stdin(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        if (!v)
                return 0;
        /* Only a session's agent can feed a job's stdin for now; a plain
         * job's would be silently dropped. */
        if (!spec->session.id)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "stdin: needs a session");
        if (!cJSON_IsString(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "stdin: must be a string");
        /* The JSON layer refuses \u0000, so the text has no NUL of its own. */
        size_t n = strlen(v->valuestring);
        if (n > SPEC_STDIN_MAX)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "stdin: longer than %u bytes",
                                    SPEC_STDIN_MAX);
        spec->stdin_data = strdup(v->valuestring);
        if (!spec->stdin_data)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "stdin: out of memory");
        spec->stdin_len = n;
        return 0;
}

int spec_check_session_artifact(const struct job_spec *spec, struct bc_error *err)
{
        const char *storage = spec->artifact_storage;
        const char *prefix = SPEC_SESSION_STORAGE_PREFIX;
        size_t plen = strlen(prefix);
        bool is_session_name = strncmp(storage, prefix, plen) == 0;
        if (!spec->session.id) {
                /* Else a plain job could write into a live session's
                 * checkpoints behind its back. */
                if (is_session_name)
                        return bc_error_set(
                                err, BC_BAD_SPEC, EINVAL,
                                "artifact.storage: names starting with \"%s\" belong to sessions",
                                prefix);
                return 0;
        }
        /* Which "session-" name is the session's depends on its scope: the
         * database's trigger checks it (boxcar.session_job), and fills it in
         * when the spec has none. */
        if (!is_session_name)
                return bc_error_set(
                        err, BC_BAD_SPEC, EINVAL,
                        "artifact.storage: a session's files are in its own storage \"%s...\"",
                        prefix);
        return 0;
}

int spec_session_artifact_default(struct job_spec *spec, struct bc_error *err)
{
        if (!spec->session.id || spec->artifact_storage)
                return 0;
        if (asprintf(&spec->artifact_storage, "%s%s", SPEC_SESSION_STORAGE_PREFIX,
                     spec->session.id) < 0) {
                spec->artifact_storage = NULL;
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "session: out of memory");
        }
        spec->artifact_base = strdup("latest");
        if (!spec->artifact_base)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "session: out of memory");
        return 0;
}

/* ---- files ---------------------------------------------------------------------- */

/* Indexed by enum spec_file_kind. */
static const char *const op_names[] = {
        [SPEC_FILE_WRITE] = "write", [SPEC_FILE_READ] = "read",   [SPEC_FILE_LIST] = "list",
        [SPEC_FILE_STAT] = "stat",   [SPEC_FILE_MKDIR] = "mkdir", [SPEC_FILE_REMOVE] = "remove",
        [SPEC_FILE_MOVE] = "move",
};

/* The fields each op takes besides "op" and "path". */
static const char *const *op_fields(enum spec_file_kind k)
{
        static const char *const write[] = {
                "op", "path", "content", "encoding", "parents", NULL
        };
        static const char *const plain[] = { "op", "path", NULL };
        static const char *const mkdir[] = { "op", "path", "parents", NULL };
        static const char *const remove[] = { "op", "path", "recursive", NULL };
        static const char *const move[] = { "op", "path", "to", NULL };
        switch (k) {
        case SPEC_FILE_WRITE:
                return write;
        case SPEC_FILE_MKDIR:
                return mkdir;
        case SPEC_FILE_REMOVE:
                return remove;
        case SPEC_FILE_MOVE:
                return move;
        case SPEC_FILE_READ:
        case SPEC_FILE_LIST:
        case SPEC_FILE_STAT:
                break;
        }
        return plain;
}

/* Standard base64 (RFC 4648, "+/"), whitespace (space, tab, CR, LF)
 * skipped as PostgreSQL's decode() does; groups of four symbols, only the
 * last of which may end in "=" or "==".  The SQL validator states the same
 * grammar as a pattern, so both accept the same texts. */
static int base64_decode(const char *s, char **ret, size_t *ret_len)
{
        size_t n = strlen(s);
        _cleanup_free_ char *out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        size_t len = 0, q = 0, pad = 0;
        uint32_t acc = 0;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
                        continue;
                if (*p == '=') {
                        if (q < 2)
                                return -EINVAL;
                        pad++;
                        acc <<= 6;
                } else {
                        int b = base64_value(*p);
                        if (b < 0 || pad > 0)
                                return -EINVAL;
                        acc = acc << 6 | (uint32_t)b;
                }
                if (++q < 4)
                        continue;
                out[len++] = (char)(acc >> 16 & 0xff);
                if (pad < 2)
                        out[len++] = (char)(acc >> 8 & 0xff);
                if (pad < 1)
                        out[len++] = (char)(acc & 0xff);
                /* After a padded group anything but whitespace is
                 * refused above: a symbol by pad > 0, "=" by q < 2. */
                q = 0;
                acc = 0;
        }
        if (q != 0)
                return -EINVAL;
        out[len] = '\0';
        *ret = steal_pointer(&out);
        *ret_len = len;
        return 0;
}

static int file_path(const cJSON *v, const char *f, const char *name, char **ret,
                     struct bc_error *err)
{
        if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
            strlen(v->valuestring) > FILE_PATH_MAX)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s.%s: must be a non-empty path of at most %d bytes", f, name,
                                    FILE_PATH_MAX);
        *ret = strdup(v->valuestring);
        if (!*ret)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "%s: out of memory", f);
        return 0;
}

static int file_flag(const cJSON *op, const char *f, const char *name, bool *ret,
                     struct bc_error *err)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(op, name);
        if (!v)
                return 0;
        if (!cJSON_IsBool(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s.%s: must be true or false", f,
                                    name);
        *ret = cJSON_IsTrue(v);
        return 0;
}

static int file_content(const cJSON *op, const char *f, struct spec_file_op *o,
                        struct bc_error *err)
{
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(op, "content");
        const cJSON *encoding = cJSON_GetObjectItemCaseSensitive(op, "encoding");
        if (!cJSON_IsString(content))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s.content: must be a string", f);
        bool base64 = encoding && cJSON_IsString(encoding) &&
                      strcmp(encoding->valuestring, "base64") == 0;
        if (encoding && !base64 &&
            !(cJSON_IsString(encoding) && strcmp(encoding->valuestring, "utf-8") == 0))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s.encoding: must be \"utf-8\" or \"base64\"", f);
        if (!base64) {
                o->data_len = strlen(content->valuestring);
                o->data = strdup(content->valuestring);
                if (!o->data)
                        return bc_error_set(err, BC_INTERNAL, ENOMEM, "%s: out of memory", f);
                return 0;
        }
        int r = base64_decode(content->valuestring, &o->data, &o->data_len);
        if (r == -ENOMEM)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "%s: out of memory", f);
        if (r < 0)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s.content: not valid base64", f);
        return 0;
}

static int parse_file_op(const cJSON *v, size_t i, struct spec_file_op *o, struct bc_error *err)
{
        char f[32];
        snprintf(f, sizeof(f), "files[%zu]", i);
        if (!cJSON_IsObject(v))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "%s: must be an object", f);
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(v, "op");
        for (size_t k = SPEC_FILE_WRITE; k <= SPEC_FILE_MOVE && cJSON_IsString(op); k++)
                if (strcmp(op->valuestring, op_names[k]) == 0)
                        o->op = (enum spec_file_kind)k;
        if (o->op == 0)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "%s.op: must be \"write\", \"read\", \"list\", \"stat\", "
                                    "\"mkdir\", \"remove\" or \"move\"",
                                    f);
        for (const cJSON *c = v->child; c; c = c->next)
                if (!spec_in_list(c->string, op_fields(o->op)))
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "%s.%s: unknown field for op \"%s\"", f, c->string,
                                            op_names[o->op]);
        int r = file_path(cJSON_GetObjectItemCaseSensitive(v, "path"), f, "path", &o->path, err);
        if (r >= 0 && o->op == SPEC_FILE_WRITE)
                r = file_content(v, f, o, err);
        if (r >= 0)
                r = file_flag(v, f, "parents", &o->parents, err);
        if (r >= 0)
                r = file_flag(v, f, "recursive", &o->recursive, err);
        if (r >= 0 && o->op == SPEC_FILE_MOVE)
                r = file_path(cJSON_GetObjectItemCaseSensitive(v, "to"), f, "to", &o->to, err);
        return r;
}

int spec_parse_files(const cJSON *v, struct job_spec *spec, struct bc_error *err)
{
        /* Only a session's agent carries file operations out. */
        if (!spec->session.id)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "files: needs a session");
        int n = cJSON_GetArraySize(v);
        if (!cJSON_IsArray(v) || n < 1 || (unsigned)n > SPEC_FILES_MAX)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "files: must be an array of 1 to %u operations",
                                    SPEC_FILES_MAX);
        spec->files = calloc((size_t)n, sizeof(*spec->files));
        if (!spec->files)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "files: out of memory");
        size_t i = 0, total = 0;
        for (const cJSON *c = v->child; c; c = c->next, i++) {
                spec->n_files = i + 1;
                int r = parse_file_op(c, i, &spec->files[i], err);
                if (r < 0)
                        return r;
                total += spec->files[i].data_len;
                /* Unreachable while a spec is at most 4 MiB of JSON (no
                 * content decodes longer than its text); kept so that
                 * stays true if the spec's own limit grows. */
                if (total > SPEC_FILES_DATA_MAX)
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "files: the contents written exceed %u bytes",
                                            SPEC_FILES_DATA_MAX);
        }
        return 0;
}

void spec_files_free(struct spec_file_op *files, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(files[i].path);
                free(files[i].to);
                free(files[i].data);
        }
        free(files);
}
