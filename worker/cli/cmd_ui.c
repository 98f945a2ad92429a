/* `boxcar ui`: its command line; the dashboard itself is worker/http/ui.c. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "worker/cli/cli.h"
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
        "  --token-file FILE      read the token from FILE (default: $BOXCAR_UI_TOKEN)\n"
        "  --user NAME            the basic-auth user name, also named in the audit\n"
        "                         trail of a retry (default: admin)\n"
        "  --no-auth              serve without a token: only on a loopback address\n"
        "  --secure-cookie        mark the session cookie Secure (behind HTTPS)\n"
        "  --database-url URL     PostgreSQL URL (default: $DATABASE_URL)\n";

static int parse_args(int argc, char **argv, struct ui_options *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "listen", required_argument, NULL, 'l' },
                { "actions", no_argument, NULL, 'a' },
                { "token-file", required_argument, NULL, 't' },
                { "user", required_argument, NULL, 'u' },
                { "no-auth", no_argument, NULL, 'n' },
                { "secure-cookie", no_argument, NULL, 's' },
                { NULL, 0, NULL, 0 },
        };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "", opts, NULL);
                if (o == -1)
                        break;
                switch (o) {
                case 'l':
                        a->listen = optarg;
                        break;
                case 'a':
                        a->actions = true;
                        break;
                case 't':
                        a->token_file = optarg;
                        break;
                case 'u':
                        a->user = optarg;
                        break;
                case 'n':
                        a->no_auth = true;
                        break;
                case 's':
                        a->secure_cookie = true;
                        break;
                default:
                        return cli_bad_option(argv, err);
                }
        }
        if (optind < argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                    argv[optind]);
        if (!*a->user || strlen(a->user) > 64 || strchr(a->user, ':'))
                return bc_error_set(err, BC_USAGE, EINVAL, "--user: 1 to 64 characters, no ':'");
        return 0;
}

int cmd_ui(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, ui_usage, &url);
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
