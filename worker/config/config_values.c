/* The worker's value grammars that other commands share: durations,
 * webhook retry schedules and queue lists (the help text documents them;
 * tests/fuzz/fuzz_parsers.c fuzzes them). */
#include "worker/config/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

int config_parse_duration(const char *s, bool allow_zero, double *ret_seconds)
{
        /* Digits, an optional fraction, an optional unit: what the help
         * documents.  strtod alone would also take " 5", "+5", "1e3" and
         * "0x10". */
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        size_t n = strspn(s, "0123456789");
        if (s[n] == '.') {
                size_t frac = strspn(s + n + 1, "0123456789");
                if (frac == 0)
                        return -EINVAL;
                n += 1 + frac;
        }
        const char *end = s + n;
        double v = strtod(s, NULL);
        double unit;
        if (*end == '\0' || strcmp(end, "s") == 0)
                unit = 1;
        else if (strcmp(end, "ms") == 0)
                unit = 0.001;
        else if (strcmp(end, "m") == 0)
                unit = 60;
        else if (strcmp(end, "h") == 0)
                unit = 3600;
        else if (strcmp(end, "d") == 0)
                unit = 86400;
        else
                return -EINVAL;
        v *= unit;
        if (!isfinite(v) || (v == 0 && !allow_zero) || v > 365.0 * 86400)
                return -EINVAL;
        *ret_seconds = v;
        return 0;
}

int config_parse_schedule(const char *s, char **ret_literal)
{
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);
        if (!f)
                return -ENOMEM;
        fputc('{', f);
        int n = 0, r = 0;
        for (const char *p = s; r == 0;) {
                size_t len = strcspn(p, ",");
                char item[64];
                double secs;
                if (len == 0 || len >= sizeof(item) || ++n > 32) {
                        r = -EINVAL;
                        break;
                }
                memcpy(item, p, len);
                item[len] = '\0';
                r = config_parse_duration(item, false, &secs);
                if (r == 0)
                        fprintf(f, "%s%.3f seconds", n > 1 ? "," : "", secs);
                p += len;
                if (*p == '\0')
                        break;
                p++;
        }
        fputc('}', f);
        fclose(f);
        if (r < 0) {
                free(out);
                return r;
        }
        *ret_literal = out;
        return 0;
}

bool config_valid_queue(const char *q)
{
        size_t n = strlen(q);
        if (n == 0 || n > 128)
                return false;
        int slashes = 0;
        for (const char *p = q; *p; p++) {
                /* "." and ".." are not names (boxcar.enqueue refuses them). */
                bool seg_start = p == q || p[-1] == '/';
                if (seg_start && p[0] == '.' &&
                    (p[1] == '\0' || p[1] == '/' ||
                     (p[1] == '.' && (p[2] == '\0' || p[2] == '/'))))
                        return false;
                if (*p == '/') {
                        if (++slashes > 1 || p == q || p[1] == '\0')
                                return false;
                } else if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') ||
                             ('0' <= *p && *p <= '9') || *p == '_' || *p == '.' || *p == '-')) {
                        return false;
                }
        }
        return true;
}

void config_strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

int config_parse_queues_as(const char *label, const char *s, char ***ret_queues,
                           struct bc_error *err)
{
        size_t n = 1;
        for (const char *p = s; *p; p++)
                n += *p == ',';
        char **v = calloc(n + 1, sizeof(char *));
        if (!v)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        size_t i = 0;
        for (const char *p = s;; p++) {
                size_t len = strcspn(p, ",");
                v[i] = strndup(p, len);
                if (!v[i] || !config_valid_queue(v[i])) {
                        int r = v[i] ? bc_error_set(err, BC_USAGE, EINVAL,
                                                    "%s: '%s' is not a queue name "
                                                    "(name or scope/name of letters, digits, "
                                                    "'_', '.', '-'; not '.' or '..')",
                                                    label, v[i])
                                     : bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                        config_strv_free(v);
                        return r;
                }
                i++;
                p += len;
                if (*p == '\0')
                        break;
        }
        *ret_queues = v;
        return 0;
}

int config_parse_queues(const char *s, char ***ret_queues, struct bc_error *err)
{
        return config_parse_queues_as("--queues", s, ret_queues, err);
}
