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

enum spec_mode { SPEC_COMMAND, SPEC_SCRIPT, SPEC_CODE };

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
        char *webhook_url; /* or NULL */
        unsigned retry_on; /* enum spec_retry bits */
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
