/* The job spec (version 1, docs/job-spec.md): parsed and validated at claim, with
 * the same rules as boxcar.spec_error() at enqueue, because rows can reach
 * the table without going through enqueue(). */
#ifndef BC_WORKER_SPEC_SPEC_H
#define BC_WORKER_SPEC_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/netallow.h"

/* SPEC_FILES: a list of file operations on a session's workspace, no
 * command (spec.files). */
enum spec_mode { SPEC_COMMAND, SPEC_SCRIPT, SPEC_CODE, SPEC_FILES };

struct spec_volume {
        char *name;
        char *mount;
        char *url;     /* presigned GET made by the web app, or NULL */
        char *sha256;  /* expected digest, or NULL */
        char *storage; /* named storage resolved by the worker, or NULL */
        char *version; /* "latest" or a sha256, with storage */
};

/* limits.files when the spec leaves it out. */
#define SPEC_DEFAULT_FILES 100000
/* limits.disk_mb when the spec leaves it out. */
#define SPEC_DEFAULT_DISK_MB 2048
/* limits.memory_mb, pids and cpus when the spec leaves them out (the warm
 * sandboxes have them before their job). */
#define SPEC_DEFAULT_MEMORY_MB 1024
#define SPEC_DEFAULT_PIDS 256
#define SPEC_DEFAULT_CPUS 1.0

struct spec_limits {
        double timeout_s;
        uint64_t memory_mb;
        double cpus;
        uint32_t pids;
        uint64_t disk_mb;
        uint64_t files; /* files, directories and links in the workspace */
        uint64_t output_bytes;
};

/* spec.session: the live sandbox the job runs in (docs/sessions.md). */
#define SPEC_SESSION_STORAGE_PREFIX "session-"
#define SPEC_DEFAULT_IDLE_TIMEOUT_S 300.0
#define SPEC_MAX_IDLE_TIMEOUT_S 86400.0
struct spec_session {
        char *id;              /* NULL: the job has no session */
        double idle_timeout_s; /* SPEC_DEFAULT_IDLE_TIMEOUT_S when left out */
        char *from_session;    /* "from": the session it forks, or NULL */
        char *from_version;    /* with from_session: "latest" or a sha256 */
};

/* spec.stdin: at most this many bytes. */
#define SPEC_STDIN_MAX (1024u * 1024)

/* spec.files: one file operation (the same numbers as common/session_wire.h's
 * enum sw_file_op). */
enum spec_file_kind {
        SPEC_FILE_WRITE = 1,
        SPEC_FILE_READ = 2,
        SPEC_FILE_LIST = 3,
        SPEC_FILE_STAT = 4,
        SPEC_FILE_MKDIR = 5,
        SPEC_FILE_REMOVE = 6,
        SPEC_FILE_MOVE = 7,
};
#define SPEC_FILES_MAX 1000u
/* All of spec.files' write contents together, decoded. */
#define SPEC_FILES_DATA_MAX (4u * 1024 * 1024)
struct spec_file_op {
        enum spec_file_kind op;
        char *path; /* as given: relative ones are from /workspace */
        char *to;   /* SPEC_FILE_MOVE's destination, else NULL */
        char *data; /* SPEC_FILE_WRITE's content, decoded (base64 or text) */
        size_t data_len;
        bool parents;   /* WRITE, MKDIR: make missing parent directories */
        bool recursive; /* REMOVE: a directory and everything in it */
};

/* A sealed secret (spec.secrets): opened by the worker (worker/secrets/)
 * into the job's environment. */
struct spec_secret {
        char *name;
        char *sealed; /* base64 of the OpenPGP message */
        char *key_id; /* 16 hex digits, as the database read it */
};

/* Which of the job's own failures the spec asks to retry. */
enum spec_retry {
        SPEC_RETRY_NONZERO_EXIT = 1 << 0,
        SPEC_RETRY_TIMEOUT = 1 << 1,
        SPEC_RETRY_OOM = 1 << 2,
};

struct job_spec {
        enum spec_mode mode;
        char **argv;         /* SPEC_COMMAND: NULL-terminated */
        char *script;        /* SPEC_SCRIPT */
        char *code_language; /* SPEC_CODE: "python", "node", "bash" */
        char *code_source;
        char *code_arguments; /* JSON object text, "{}" when absent */
        char **env;           /* "K=V", NULL-terminated, never NULL */
        char *workdir;        /* absolute; default "/workspace" */
        char *startup_script; /* or NULL */
        double startup_timeout_s;
        struct spec_volume *volumes;
        size_t n_volumes;
        char *artifact_storage; /* NULL when the job has no artifact */
        char *artifact_base;    /* "latest", "empty" or a sha256 */
        char *image_storage;    /* NULL: the host's system directories are the root */
        char *image_version;    /* "latest" or a sha256 */
        struct spec_limits limits;
        bool network_host;
        /* "network": {"allow": [...]}: the rules (common/netallow.h), or
         * NULL with n_net_allow 0 for "none" and "host". */
        struct netallow_rule *net_allow;
        size_t n_net_allow;
        char *webhook_url;     /* or NULL */
        bool webhook_progress; /* webhook.progress: each stored progress report is delivered */
        unsigned retry_on;     /* enum spec_retry bits */
        struct spec_session session;
        char *stdin_data; /* spec.stdin's bytes, or NULL */
        size_t stdin_len;
        struct spec_file_op *files; /* SPEC_FILES */
        size_t n_files;
        struct spec_secret *secrets; /* or NULL */
        size_t n_secrets;
};

#define SPEC_MAX_BYTES (4u * 1024 * 1024)
/* No value may be enclosed by more arrays/objects (code.arguments is the
 * only free-form part); sql/10_spec.sql has the same rule. */
#define SPEC_MAX_DEPTH 64u

/* Parses and validates json (len bytes).  On success *ret_spec is a new
 * spec (free with spec_free).  On failure err is BC_BAD_SPEC with a message
 * "field: reason" naming the offending field, e.g. "limits.pids: must be
 * between 1 and 65536". */
int spec_parse(const char *json, size_t len, struct job_spec **ret_spec, struct bc_error *err);

/* NULL-safe. */
void spec_free(struct job_spec *spec);

#endif
