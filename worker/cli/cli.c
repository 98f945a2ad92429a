#include "worker/cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "common/io.h"
#include "worker/cli/term_safe.h"

int cli_common_options(int *argc, char **argv, const char *usage, const char **ret_url)
{
        const char *url = getenv("DATABASE_URL");
        int out = 1;
        for (int i = 1; i < *argc; i++) {
                const char *a = argv[i];
                if (strcmp(a, "--") == 0) {
                        while (i < *argc)
                                argv[out++] = argv[i++];
                        break;
                }
                if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        fputs(usage, stdout);
                        return 1;
                }
                if (strcmp(a, "--database-url") == 0) {
                        if (i + 1 >= *argc) {
                                fprintf(stderr, "boxcar %s: --database-url needs a value\n",
                                        argv[0]);
                                return 2;
                        }
                        url = argv[++i];
                } else if (strncmp(a, "--database-url=", 15) == 0) {
                        url = a + 15;
                } else {
                        argv[out++] = argv[i];
                }
        }
        argv[out] = NULL;
        *argc = out;
        *ret_url = url;
        return 0;
}

bool cli_take_flag(int *argc, char **argv, const char *flag)
{
        bool found = false;
        int out = 0, i = 0;
        for (; i < *argc && strcmp(argv[i], "--") != 0; i++) {
                if (strcmp(argv[i], flag) == 0)
                        found = true;
                else
                        argv[out++] = argv[i];
        }
        while (i < *argc)
                argv[out++] = argv[i++];
        argv[out] = NULL;
        *argc = out;
        return found;
}

bool cli_take_json(int *argc, char **argv)
{
        return cli_take_flag(argc, argv, "--json");
}

bool cli_print_json(cJSON *value)
{
        _cleanup_free_ char *text = value ? cJSON_PrintUnformatted(value) : NULL;
        cJSON_Delete(value);
        return text && cli_print_json_text(text);
}

bool cli_print_json_text(const char *text)
{
        _cleanup_free_ char *safe = term_safe_json(text);
        if (safe)
                printf("%s\n", safe);
        return safe != NULL;
}

int cli_fail(const char *name, struct bc_error *err)
{
        fprintf(stderr, "boxcar %s: %s\n", name, bc_error_message(err));
        int st = err->code == BC_USAGE ? 2 : 1;
        bc_error_clear(err);
        return st;
}

int cli_bad_option(char **argv, struct bc_error *err)
{
        /* The name only: a mistyped --database-url=URL holds a password. */
        const char *a = argv[optind - 1];
        return bc_error_set(err, BC_USAGE, EINVAL, "unknown or incomplete option '%.*s'",
                            (int)strcspn(a, "="), a);
}

int cli_read_spec_file(const char *path, char **ret, struct bc_error *err)
{
        size_t len = 0;
        int r = bc_read_all(path, 4u << 20, ret, &len, err);
        if (r < 0) {
                err->code = BC_USAGE;
                return bc_error_prefix(err, "--spec");
        }
        return 0;
}

char *cli_command_spec(int argc, char **argv)
{
        cJSON *spec = cJSON_CreateObject();
        cJSON *cmd = spec ? cJSON_AddArrayToObject(spec, "command") : NULL;
        for (int i = 0; cmd && i < argc; i++)
                cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
        char *text = cmd ? cJSON_PrintUnformatted(spec) : NULL;
        cJSON_Delete(spec);
        return text;
}
