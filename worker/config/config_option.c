/* One option's value onto the worker's configuration, whichever source
 * gave it (a flag, the environment, the configuration file), with an error
 * that names the source and what the value must look like. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/size.h"
#include "sandbox/sandbox.h"
#include "worker/config/config-internal.h"

int config_parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *ret)
{
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

int config_set_string(char **dst, const char *v)
{
        free(*dst);
        *dst = strdup(v);
        return *dst ? 0 : -ENOMEM;
}

/* What the value of a flag must look like, for the error message; the same
 * words as the help text. */
const char *config_option_hint(int opt)
{
        switch (opt) {
        case OPT_CONCURRENCY:
                return " (a number from 1 to 1024)";
        case OPT_DB_CONNECTIONS:
                return " (a number from 1 to 64)";
        case OPT_WARM_WORKSPACES:
                return " (a number from 0 to 1024)";
        case OPT_WH_CONCURRENCY:
                return " (a number from 1 to 64)";
        case OPT_WARM_SANDBOXES:
                return " (a number from 0 to 256)";
        case OPT_LEASE:
        case OPT_POLL:
                return " (a duration above 0: " DURATION_GRAMMAR ")";
        case OPT_DRAIN:
        case OPT_RETENTION:
        case OPT_STORAGE_GC_INTERVAL:
        case OPT_STORAGE_GC_GRACE:
                return " (a duration, 0 allowed: " DURATION_GRAMMAR ")";
        case OPT_WH_TIMEOUT:
                return " (a duration up to 600s: " DURATION_GRAMMAR ")";
        case OPT_REPORT_WAIT:
                return " (a duration up to 1s, 0 allowed: " DURATION_GRAMMAR ")";
        case OPT_URL_TTL:
        case OPT_SESSION_MAX_LIFETIME:
                return " (a duration from 1s to 7d: " DURATION_GRAMMAR ")";
        case OPT_MAX_SESSIONS:
                return " (a number from 0 to 4096)";
        case OPT_DISK_WAIT:
                return " (a duration from 1s to 1h: " DURATION_GRAMMAR ")";
        case OPT_WH_SCHEDULE:
                return " (1 to 32 comma-separated durations: " DURATION_GRAMMAR ")";
        case OPT_LOG_FORMAT:
                return " (text or json)";
        case OPT_LOG_LEVEL:
                return " (debug, info, warn or error)";
        case OPT_POLL_ONLY:
        case OPT_ALLOW_PRIVATE_URLS:
                return " (true or false)";
        case OPT_SANDBOX:
                return " (namespace or none)";
        case OPT_MAX_OUTPUT:
        case OPT_MAX_LOG:
                return " (a size in range: e.g. 10MiB, 512KiB or a number of bytes)";
        case OPT_VOLUME_CACHE:
                return " (a size in range: e.g. 10GiB or a number of MiB)";
        case OPT_DISK_RESERVE:
                return " (a size, or a percentage from 0% to 90%)";
        case OPT_QUEUES:
        case OPT_HOST_NETWORK:
                return " (comma-separated queue names: NAME or SCOPE/NAME of letters, digits, "
                       "'_', '.', '-')";
        case OPT_ALLOW_URL_CIDR:
                return " (comma-separated CIDRs or addresses, e.g. 10.2.0.0/16)";
        case OPT_NETWORK_ALLOW:
                return " (QUEUE=RULE,RULE...: a rule is HOST:PORT, *.DOMAIN:PORT or CIDR:PORT)";
        default:
                return "";
        }
}

static int parse_choice(const char *v, const char *const *choices, int *ret)
{
        for (int i = 0; choices[i]; i++)
                if (strcmp(v, choices[i]) == 0) {
                        *ret = i;
                        return 0;
                }
        return -EINVAL;
}

/* A flag without a value (on): from the environment or the file, true or
 * false (or 0 and 1). */
static int parse_switch(const char *v, bool *ret)
{
        if (!v) {
                *ret = true;
                return 0;
        }
        return config_parse_bool(v, ret);
}

/* A size flag: "10MiB", "512KiB" or a plain number in unit (bytes, or MiB
 * for --volume-cache-mb), from lo to hi bytes. */
static int parse_size(const char *label, const char *v, uint64_t unit, uint64_t lo, uint64_t hi,
                      uint64_t *ret, struct bc_error *err)
{
        uint64_t n = 0;
        int r = bc_parse_size(v, unit, hi, &n);
        if (r == -EINVAL)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: '%s' is not a size (e.g. 10MiB, 512KiB or a number "
                                    "of %s; units: " BC_SIZE_UNITS ")",
                                    label, v, unit == 1 ? "bytes" : "MiB");
        if (r < 0 || n < lo)
                return bc_error_set(err, BC_USAGE, ERANGE,
                                    "%s: '%s' is out of range (%llu to %llu bytes)", label, v,
                                    (unsigned long long)lo, (unsigned long long)hi);
        *ret = n;
        return 0;
}

/* --disk-reserve: "5%" (whole percents, 0 to 90) or a size. */
static int parse_disk_reserve(const char *label, const char *v, struct worker_config *c,
                              struct bc_error *err)
{
        size_t len = strlen(v);
        if (len > 1 && v[len - 1] == '%') {
                char *end = NULL;
                errno = 0;
                long pct = strtol(v, &end, 10);
                if (errno || end != v + len - 1 || v[0] < '0' || v[0] > '9' || pct > 90)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s: '%s' is not a percentage from 0%% to 90%%", label,
                                            v);
                c->disk_reserve_pct = (int)pct;
                return 0;
        }
        c->disk_reserve_pct = -1;
        return parse_size(label, v, 1, 0, VOLUME_CACHE_MAX, &c->disk_reserve_bytes, err);
}

/* Sets one option from V; LABEL names where V came from in errors ("--lease",
 * "BOXCAR_QUEUES", "/etc/boxcar/worker.conf:3: lease"). */
int config_apply_option(struct worker_config *c, int opt, const char *v, const char *label,
                        struct bc_error *err)
{
        static const char *const formats[] = { "text", "json", NULL };
        static const char *const levels[] = { "debug", "info", "warn", "error", NULL };
        int choice = 0;
        int r = 0;
        switch (opt) {
        case OPT_DATABASE_URL:
                r = config_set_string(&c->database_url, v);
                break;
        case OPT_QUEUES:
                config_strv_free(c->queues);
                c->queues = NULL;
                return config_parse_queues_as(label, v, &c->queues, err);
        case OPT_CONCURRENCY:
                r = config_parse_uint(v, 1, 1024, &c->concurrency);
                break;
        case OPT_DB_CONNECTIONS:
                r = config_parse_uint(v, 1, 64, &c->db_connections);
                break;
        case OPT_LEASE:
                r = config_parse_duration(v, false, &c->lease_s);
                break;
        case OPT_POLL:
                r = config_parse_duration(v, false, &c->poll_interval_s);
                break;
        case OPT_DRAIN:
                r = config_parse_duration(v, true, &c->drain_timeout_s);
                break;
        case OPT_REPORT_WAIT: {
                double s = 0;
                r = config_parse_duration(v, true, &s);
                if (r >= 0 && s > 1)
                        r = -EINVAL;
                if (r >= 0)
                        c->report_wait_ms = (unsigned)(s * 1000 + 0.5);
                break;
        }
        case OPT_SANDBOX:
                if (strcmp(v, "none") == 0)
                        c->sandbox = BACKEND_NONE;
                else if (strcmp(v, "namespace") == 0)
                        c->sandbox = BACKEND_NAMESPACE;
                else
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s: '%s' is not a backend (namespace, none)", label,
                                            v);
                break;
        case OPT_HOST_NETWORK:
                config_strv_free(c->host_network_queues);
                c->host_network_queues = NULL;
                return config_parse_queues_as(label, v, &c->host_network_queues, err);
        case OPT_HELPER:
                r = config_set_string(&c->sandbox_helper, v);
                break;
        case OPT_WORK_DIR:
                r = config_set_string(&c->work_dir, v);
                break;
        case OPT_SECRET_KEYS:
                r = config_set_string(&c->secret_keys_dir, v);
                break;
        case OPT_WORKER_ID:
                r = config_set_string(&c->worker_id, v);
                break;
        case OPT_LOG_FORMAT:
                r = parse_choice(v, formats, &choice);
                c->log_format = choice;
                break;
        case OPT_LOG_LEVEL:
                r = parse_choice(v, levels, &choice);
                c->log_level = choice;
                break;
        case OPT_MAX_OUTPUT: {
                uint64_t n = 0;
                r = parse_size(label, v, 1, 0, MAX_OUTPUT_BYTES_MAX, &n, err);
                c->max_output_bytes = (unsigned)n;
                return r;
        }
        case OPT_VOLUME_CACHE:
                return parse_size(label, v, 1u << 20, 1u << 20, VOLUME_CACHE_MAX,
                                  &c->volume_cache_bytes, err);
        case OPT_DISK_RESERVE:
                return parse_disk_reserve(label, v, c, err);
        case OPT_WH_TIMEOUT:
                r = config_parse_duration(v, false, &c->webhook_timeout_s);
                if (r >= 0 && c->webhook_timeout_s > 600)
                        r = -EINVAL;
                break;
        case OPT_WH_SCHEDULE:
                free(c->webhook_schedule);
                c->webhook_schedule = NULL;
                r = config_parse_schedule(v, &c->webhook_schedule);
                break;
        case OPT_WH_CONCURRENCY:
                r = config_parse_uint(v, 1, 64, &c->webhook_concurrency);
                break;
        case OPT_METRICS_ADDR:
                r = config_set_string(&c->metrics_addr, v);
                break;
        case OPT_LISTEN_URL:
                r = config_set_string(&c->listen_database_url, v);
                break;
        case OPT_POLL_ONLY:
                r = parse_switch(v, &c->poll_only);
                break;
        case OPT_ALLOW_PRIVATE_URLS:
                r = parse_switch(v, &c->url_guard.allow_all);
                break;
        case OPT_ALLOW_URL_CIDR:
                if (netguard_allow_list(&c->url_guard, v, err) < 0)
                        return bc_error_prefix(err, "%s", label);
                return 0;
        case OPT_NETWORK_ALLOW:
                return config_network_allow(c, label, v, err);
        case OPT_PRIVATE_EGRESS:
                return config_private_egress(c, label, v, err);
        case OPT_UID_RANGE: {
                struct sandbox_id_range range;
                if (sandbox_id_range_parse(v, &range, err) < 0)
                        return bc_error_prefix(err, "%s", label);
                r = config_set_string(&c->uid_range, v);
                break;
        }
        case OPT_RETENTION:
                r = config_parse_duration(v, true, &c->retention_s);
                break;
        case OPT_STORAGE_GC_INTERVAL:
                r = config_parse_duration(v, true, &c->storage_gc_interval_s);
                break;
        case OPT_STORAGE_GC_GRACE:
                r = config_parse_duration(v, true, &c->storage_gc_grace_s);
                break;
        case OPT_MAX_SESSIONS:
                r = config_parse_uint(v, 0, 4096, &c->max_sessions);
                break;
        case OPT_SESSION_MAX_LIFETIME:
                r = config_parse_duration(v, false, &c->session_max_lifetime_s);
                if (r >= 0 &&
                    (c->session_max_lifetime_s < 1 || c->session_max_lifetime_s > 7 * 86400))
                        r = -EINVAL;
                break;
        case OPT_WARM_SANDBOXES:
        case OPT_WARM_WORKSPACES: {
                unsigned n = 0;
                r = config_parse_uint(v, 0, opt == OPT_WARM_SANDBOXES ? 256 : 1024, &n);
                *(opt == OPT_WARM_SANDBOXES ? &c->warm_sandboxes : &c->warm_workspaces) = (int)n;
                break;
        }
        case OPT_MAX_LOG:
                return parse_size(label, v, 1, 0, MAX_LOG_BYTES_MAX, &c->max_log_bytes, err);
        case OPT_DISK_WAIT:
                r = config_parse_duration(v, false, &c->disk_wait_s);
                if (r >= 0 && (c->disk_wait_s < 1 || c->disk_wait_s > 3600))
                        r = -EINVAL;
                break;
        case OPT_URL_TTL:
                r = config_parse_duration(v, false, &c->artifact_url_ttl_s);
                if (r >= 0 && (c->artifact_url_ttl_s < 1 || c->artifact_url_ttl_s > 7 * 86400))
                        r = -EINVAL;
                break;
        default:
                r = -EINVAL;
                break;
        }
        if (r == -ENOMEM)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        const struct config_option *o = config_option_by_id(opt);
        if (r < 0 && o && (o->flags & CONFIG_OPT_SECRET))
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: invalid value (not shown: it may hold a secret)%s", label,
                                    config_option_hint(opt));
        if (r < 0)
                return bc_error_set(err, BC_USAGE, EINVAL, "%s: invalid value '%s'%s", label,
                                    v ? v : "", config_option_hint(opt));
        return 0;
}
