#include "worker/config/config_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/text.h"

#define MAX_LINE 8192
#define MAX_KEYS 128

static bool valid_key(const char *k)
{
        if (!*k)
                return false;
        for (const char *p = k; *p; p++)
                if (!(('a' <= *p && *p <= 'z') || ('0' <= *p && *p <= '9') || *p == '-'))
                        return false;
        return true;
}

int config_file_read(const char *path, bool missing_ok, config_file_entry_fn fn, void *ctx,
                     struct bc_error *err)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT && missing_ok)
                        return 0;
                return bc_error_set(err, BC_USAGE, errno, "config file %s: %m", path);
        }
        /* Each key's first line, to name both places of a repeated key. */
        struct {
                char key[64];
                unsigned line;
        } seen[MAX_KEYS];
        unsigned nseen = 0;
        char buf[MAX_LINE];
        for (unsigned line = 1; fgets(buf, sizeof(buf), f); line++) {
                size_t len = strlen(buf);
                if (len == sizeof(buf) - 1 && buf[len - 1] != '\n' && !feof(f))
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s:%u: line longer than %d bytes", path, line,
                                            MAX_LINE - 2);
                if (len > 0 && buf[len - 1] == '\n')
                        buf[--len] = '\0';
                if (memchr(buf, '\0', len) != NULL)
                        return bc_error_set(err, BC_USAGE, EINVAL, "%s:%u: NUL byte", path, line);
                char *s = bc_trim(buf);
                if (*s == '\0' || *s == '#' || *s == ';')
                        continue;
                char *eq = strchr(s, '=');
                /* Neither a line that is no "key = value" nor a text that
                 * is no key is shown: it may be a secret (a value on a line
                 * of its own, "secret: ...", a key pasted into the file). */
                if (!eq)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s:%u: expected 'key = value' (the line is not "
                                            "shown: it may hold a secret)",
                                            path, line);
                *eq = '\0';
                char *key = bc_trim(s), *value = bc_trim(eq + 1);
                if (!valid_key(key) || strlen(key) >= sizeof(seen[0].key))
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s:%u: the text before '=' is not a key (lower-case "
                                            "letters, digits and '-', e.g. poll-interval; not "
                                            "shown: it may hold a secret)",
                                            path, line);
                size_t vlen = strlen(value);
                if (value[0] == '"') {
                        if (vlen < 2 || value[vlen - 1] != '"' || memchr(value + 1, '"', vlen - 2))
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "%s:%u: %s: unbalanced quotes", path, line,
                                                    key);
                        value[vlen - 1] = '\0';
                        value++;
                }
                for (unsigned i = 0; i < nseen; i++)
                        if (strcmp(seen[i].key, key) == 0)
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "%s:%u: %s: set twice (first at line %u)",
                                                    path, line, key, seen[i].line);
                if (nseen == MAX_KEYS)
                        return bc_error_set(err, BC_USAGE, EINVAL, "%s:%u: more than %d keys",
                                            path, line, MAX_KEYS);
                strcpy(seen[nseen].key, key);
                seen[nseen++].line = line;
                int r = fn(key, value, path, line, ctx, err);
                if (r < 0)
                        return r;
        }
        if (ferror(f))
                return bc_error_set(err, BC_USAGE, EIO, "config file %s: read error", path);
        return 0;
}
