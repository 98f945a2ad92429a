/* `boxcar ui`: its command line; the dashboard itself is worker/http/ui.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "worker/cli/cli.h"
#include "worker/config/config.h"
#include "worker/http/ui.h"
#include "worker/log/log.h"

const char ui_usage[] =
        "usage: boxcar ui [--listen HOST:PORT] [--actions] [--token-file FILE] [--user NAME]\n"
        "                 [--no-auth] [--secure-cookie] [--database-url URL]\n"
        "\n"
        "Serves the web dashboard: queues, jobs (with spec, result, events, live log\n"
        "and artifact link), workers and webhook deliveries.  Read-only unless\n"
        "--actions is given.  Every page needs the token (BOXCAR_UI_TOKEN, or the first\n"
        "line of --token-file; at least 16 characters), given as\n"
        "'Authorization: Bearer TOKEN', as the basic-auth password of user NAME, or\n"
        "once in the login form (a session cookie for 12 hours).\n"
        "\n"
        "  --listen HOST:PORT     where to listen (default: 127.0.0.1:9470; port 0 picks\n"
        "                         a free one, printed in the ui.listening log line)\n"
        "  --actions              allow cancel, retry, drain and redrive from the pages\n"
        "                         (POST only, with a CSRF token and an Origin check)\n"
        "  --token-file FILE      read the token from FILE (default: the token in\n"
        "                         BOXCAR_UI_TOKEN)\n"
        "  --user NAME            the basic-auth user name, also named in the audit\n"
        "                         trail of a retry (default: admin)\n"
        "  --no-auth              serve without a token: only on a loopback address\n"
        "  --secure-cookie        mark the session cookie Secure (behind HTTPS)\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

/* boxcar ui's flags; each has a variable, BOXCAR_UI_ and the flag's name
 * (config_option_env), read when the flag is not given.  --database-url
 * is cli_common_options's. */
static const struct config_option ui_options[] = {
        { "listen", required_argument, 'l', 0, "127.0.0.1:9470", NULL },
        { "actions", no_argument, 'a', 0, "false", NULL },
        { "token-file", required_argument, 't', 0, "none (BOXCAR_UI_TOKEN)", NULL },
        { "user", required_argument, 'u', 0, "admin", NULL },
        { "no-auth", no_argument, 'n', 0, "false", NULL },
        { "secure-cookie", no_argument, 's', 0, "false", NULL },
        { "database-url", required_argument, 'd', CONFIG_OPT_META | CONFIG_OPT_SECRET,
          "libpq's PG* variables", "DATABASE_URL" },
        { NULL, 0, 0, 0, NULL, NULL },
};
#define UI_ENV_PREFIX "UI_"

void ui_help(FILE *f)
{
        fputs(ui_usage, f);
        fputs("\n"
              "Every flag but --help has a variable, BOXCAR_UI_ and its name in\n"
              "capitals, '-' as '_' (--listen: BOXCAR_UI_LISTEN), but --database-url's,\n"
              "DATABASE_URL; a switch's is true or false (1 or 0); an empty one is unset.\n"
              "A flag wins over its variable.\n"
              "\n",
              f);
        config_options_print_env(f, ui_options, UI_ENV_PREFIX);
}

/* One option's value from a flag (v NULL for a switch) or a variable;
 * label names which in errors. */
static int apply_option(struct ui_options *a, int id, const char *v, const char *label,
                        struct bc_error *err)
{
        bool on = true;
        bool is_switch = id == 'a' || id == 'n' || id == 's';
        if (is_switch && v && config_parse_bool(v, &on) < 0)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: invalid value '%s' (true or false)", label, v);
        switch (id) {
        case 'l':
                a->listen = v;
                break;
        case 'a':
                a->actions = on;
                break;
        case 't':
                a->token_file = v;
                break;
        case 'u':
                if (!*v || strlen(v) > 64 || strchr(v, ':'))
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s: 1 to 64 characters, no ':'", label);
                a->user = v;
                break;
        case 'n':
                a->no_auth = on;
                break;
        case 's':
                a->secure_cookie = on;
                break;
        }
        return 0;
}

/* The variables of the flags not given (a flag's variable is not even
 * read: flag > environment, as for boxcar worker). */
static int apply_environment(struct ui_options *a, const bool *given, struct bc_error *err)
{
        for (const struct config_option *o = ui_options; o->name; o++) {
                const char *v = (o->flags & CONFIG_OPT_META) || given[o->id]
                                        ? NULL
                                        : config_option_getenv(o, UI_ENV_PREFIX);
                char name[64];
                if (v &&
                    apply_option(a, o->id, v,
                                 config_option_env(o, UI_ENV_PREFIX, name, sizeof(name)), err) < 0)
                        return -EINVAL;
        }
        return 0;
}

static int parse_args(int argc, char **argv, struct ui_options *a, struct bc_error *err)
{
        struct option opts[sizeof(ui_options) / sizeof(ui_options[0])];
        size_t n = 0;
        for (const struct config_option *o = ui_options; o->name; o++)
                if (!(o->flags & CONFIG_OPT_META))
                        opts[n++] = (struct option){ o->name, o->has_arg, NULL, o->id };
        opts[n] = (struct option){ NULL, 0, NULL, 0 };
        bool given[256] = { false };
        optind = 0;
        opterr = 0;
        for (int o; (o = getopt_long(argc, argv, "", opts, NULL)) != -1;)
                given[o & 0xff] = true;
        if (apply_environment(a, given, err) < 0)
                return -EINVAL;
        optind = 0;
        opterr = 0;
        for (;;) {
                int idx = 0;
                int o = getopt_long(argc, argv, "", opts, &idx);
                if (o == -1)
                        break;
                if (o == '?' || o == ':')
                        return cli_bad_option(argv, err);
                char label[64];
                snprintf(label, sizeof(label), "--%s", opts[idx].name);
                if (apply_option(a, o, optarg, label, err) < 0)
                        return -EINVAL;
        }
        if (optind < argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                    argv[optind]);
        return 0;
}

int cmd_ui(int argc, char **argv)
{
        const char *url = NULL;
        _cleanup_free_ char *help = NULL;
        size_t help_len = 0;
        FILE *f = open_memstream(&help, &help_len);
        if (!f)
                return 1;
        ui_help(f);
        if (fclose(f) != 0)
                return 1;
        int r = cli_common_options(&argc, argv, help, &url);
        if (r)
                return r == 1 ? 0 : 2;
        log_setup(LOG_TEXT, LOG_INFO);
        struct bc_error err = BC_ERROR_INIT;
        struct ui_options o = { .db_url = url,
                                .listen = "127.0.0.1:9470",
                                .user = "admin",
                                .token_env = getenv("BOXCAR_UI_TOKEN") };
        r = parse_args(argc, argv, &o, &err);
        if (r >= 0)
                r = ui_run(&o, &err);
        return r < 0 ? cli_fail("ui", &err) : 0;
}
