#include "worker/cli/cmd_webhooks_secret.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/error.h"
#include "worker/cli/cli.h"
#include "worker/config/config.h"
#include "worker/db/db.h"
#include "worker/webhook/webhook_derive.h"
#include "worker/webhook/webhook_sign.h"

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

struct secret_args {
        bool rotate;
        const char *scope, *endpoint;
        char overlap[48]; /* a PostgreSQL interval */
};

/* Checked before connecting: a usage error needs no database. */
static int parse_args(int argc, char **argv, struct secret_args *a, struct bc_error *err)
{
        static const struct option opts[] = {
                { "scope", required_argument, NULL, 's' },
                { "endpoint", required_argument, NULL, 'e' },
                { "overlap", required_argument, NULL, 'o' },
                { NULL, 0, NULL, 0 },
        };
        *a = (struct secret_args){ .rotate = strcmp(argv[0], "rotate") == 0, .endpoint = "" };
        snprintf(a->overlap, sizeof(a->overlap), "24 hours");
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "+", opts, NULL);
                if (o == -1)
                        break;
                double secs;
                switch (o) {
                case 's':
                        a->scope = optarg;
                        break;
                case 'e':
                        a->endpoint = optarg;
                        break;
                case 'o':
                        if (!a->rotate)
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "--overlap is for webhooks rotate");
                        if (config_parse_duration(optarg, true, &secs) < 0)
                                return bc_error_set(err, BC_USAGE, EINVAL,
                                                    "--overlap '%s': expected a duration like "
                                                    "24h, 30m, 2s or 0",
                                                    optarg);
                        snprintf(a->overlap, sizeof(a->overlap), "%.3f seconds", secs);
                        break;
                default:
                        return cli_bad_option(argv, err);
                }
        }
        if (optind < argc)
                return bc_error_set(err, BC_USAGE, EINVAL, "unexpected argument '%s'",
                                    argv[optind]);
        if (!a->scope)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "--scope is required (a queue's scope: acme for acme/q)");
        return 0;
}

/* The master keys, from the environment only: a command-line value would
 * be in the process list. */
static int load_master(struct webhook_secrets **ret, struct bc_error *err)
{
        const char *value = getenv("BOXCAR_WEBHOOK_SECRET");
        if (!value || !*value)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "BOXCAR_WEBHOOK_SECRET (the master key every scope's secret "
                                    "is derived from) is not set");
        int r = webhook_secrets_parse(value, ret, err);
        if (r < 0)
                return bc_error_prefix(err, "BOXCAR_WEBHOOK_SECRET");
        if (webhook_secrets_count(*ret) > WEBHOOK_MASTER_KEYS_MAX)
                return bc_error_set(err, BC_CONFIG, EINVAL,
                                    "BOXCAR_WEBHOOK_SECRET: %zu master keys, at most %d",
                                    webhook_secrets_count(*ret), WEBHOOK_MASTER_KEYS_MAX);
        return 0;
}

static int rotate(PGconn *conn, const struct secret_args *a, int *ret_gen, struct bc_error *err)
{
        const char *p[] = { a->scope, a->endpoint, a->overlap };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.rotate_webhook_secret($1, $2, $3::interval)", 3, p, err);
        if (!res)
                return -EPROTO;
        *ret_gen = atoi(PQgetvalue(res, 0, 0));
        return 0;
}

/* The secret of (master key m, scope, endpoint, gen) as a receiver holds
 * it (whsec_...); the raw key is wiped before this returns. */
static int derived_text(const struct webhook_secrets *master, size_t m, const char *scope,
                        const char *endpoint, int gen, char text[WEBHOOK_SECRET_TEXT_SIZE],
                        struct bc_error *err)
{
        unsigned char key[WEBHOOK_DERIVED_KEY_BYTES];
        int r = webhook_derive_key(master, m, scope, endpoint, gen, key, err);
        if (r >= 0)
                webhook_key_text(key, text);
        explicit_bzero(key, sizeof(key));
        return r;
}

/* One line per (generation, master key): the secret first, for scripts. */
static int print_text(PGresult *res, const struct webhook_secrets *master,
                      const struct secret_args *a, struct bc_error *err)
{
        size_t nm = webhook_secrets_count(master);
        for (int i = 0; i < PQntuples(res); i++) {
                const char *endpoint = PQgetvalue(res, i, 0);
                int gen = atoi(PQgetvalue(res, i, 1));
                for (size_t m = 0; m < nm; m++) {
                        char text[WEBHOOK_SECRET_TEXT_SIZE];
                        int r = derived_text(master, m, a->scope, endpoint, gen, text, err);
                        if (r < 0)
                                return r;
                        printf("%s  generation %d  %s  %s%s", text, gen,
                               *endpoint ? "endpoint" : "scope-wide",
                               PQgetisnull(res, i, 3) ? "valid" : "valid until ",
                               PQgetvalue(res, i, 3));
                        if (nm > 1)
                                printf("  master key %zu of %zu", m + 1, nm);
                        putchar('\n');
                        explicit_bzero(text, sizeof(text));
                }
        }
        return 0;
}

static int print_json(PGresult *res, const struct webhook_secrets *master,
                      const struct secret_args *a, int gen_added, struct bc_error *err)
{
        _cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "scope", a->scope))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        if (*a->endpoint)
                cJSON_AddStringToObject(o, "endpoint", a->endpoint);
        else
                cJSON_AddNullToObject(o, "endpoint");
        if (gen_added > 0)
                cJSON_AddNumberToObject(o, "generation", gen_added);
        cJSON *list = cJSON_AddArrayToObject(o, "secrets");
        if (!list)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        for (int i = 0; i < PQntuples(res); i++) {
                const char *endpoint = PQgetvalue(res, i, 0);
                int gen = atoi(PQgetvalue(res, i, 1));
                for (size_t m = 0; m < webhook_secrets_count(master); m++) {
                        char text[WEBHOOK_SECRET_TEXT_SIZE];
                        int r = derived_text(master, m, a->scope, endpoint, gen, text, err);
                        if (r < 0)
                                return r;
                        cJSON *e = cJSON_CreateObject();
                        if (!e || !cJSON_AddItemToArray(list, e))
                                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                        cJSON_AddStringToObject(e, "secret", text);
                        cJSON_AddStringToObject(e, "key_endpoint", endpoint);
                        cJSON_AddNumberToObject(e, "generation", gen);
                        cJSON_AddNumberToObject(e, "master_key", (double)(m + 1));
                        if (PQgetisnull(res, i, 2))
                                cJSON_AddNullToObject(e, "created_at");
                        else
                                cJSON_AddStringToObject(e, "created_at", PQgetvalue(res, i, 2));
                        if (PQgetisnull(res, i, 3))
                                cJSON_AddNullToObject(e, "valid_until");
                        else
                                cJSON_AddStringToObject(e, "valid_until", PQgetvalue(res, i, 3));
                        explicit_bzero(text, sizeof(text));
                }
        }
        if (!cli_print_json(steal_pointer(&o)))
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        return 0;
}

static int run(const struct secret_args *a, const char *db_url, bool json, struct bc_error *err)
{
        _cleanup_webhook_secrets_ struct webhook_secrets *master = NULL;
        int r = load_master(&master, err);
        if (r < 0)
                return r;
        _cleanup_pgconn_ PGconn *conn = db_connect(db_url, "boxcar-cli", err);
        if (!conn)
                return -ECONNREFUSED;
        int gen = 0;
        if (a->rotate && rotate(conn, a, &gen, err) < 0)
                return -EPROTO;
        const char *p[] = { a->scope, a->endpoint };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn,
                "select key_endpoint, generation, "
                "to_char(created_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
                "to_char(valid_until at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') "
                "from boxcar.webhook_secret_list($1, $2)",
                2, p, err);
        if (!res)
                return -EPROTO;
        if (json)
                return print_json(res, master, a, gen, err);
        if (a->rotate)
                printf("rotated: generation %d of %s %s signs from now on\n", gen,
                       *a->endpoint ? "endpoint" : "scope", *a->endpoint ? a->endpoint : a->scope);
        return print_text(res, master, a, err);
}

int webhooks_secret_main(int argc, char **argv, const char *db_url, bool json)
{
        const char *name = strcmp(argv[0], "rotate") == 0 ? "webhooks rotate" : "webhooks secret";
        struct bc_error err = BC_ERROR_INIT;
        struct secret_args a;
        int r = parse_args(argc, argv, &a, &err);
        if (r >= 0)
                r = run(&a, db_url, json, &err);
        if (r < 0) {
                int st = cli_fail(name, &err);
                bc_error_clear(&err);
                return st;
        }
        return 0;
}
