#include <stdio.h>

#include "worker/cli/cli.h"
#include "worker/db.h"
#include "worker/migrate.h"
#include "worker/sql_files.h"

int cmd_migrate(int argc, char **argv)
{
        const char *url = NULL;
        int r = cli_common_options(&argc, argv, cli_commands[0].usage, &url);
        if (r)
                return r == 1 ? 0 : 2;
        if (argc > 1) {
                fprintf(stderr, "boxcar migrate: unexpected argument '%s'\n", argv[1]);
                return 2;
        }
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_pgconn_ PGconn *conn = db_connect(url, "boxcar-migrate", &err);
        struct migrate_report rep;
        if (!conn || migrate_run(conn, sql_files, sql_files_count, &rep, &err) < 0) {
                int st = cli_fail("migrate", &err);
                bc_error_clear(&err);
                return st;
        }
        printf("migrations: %u applied, %u already applied; %u SQL API files applied\n",
               rep.applied, rep.already, rep.api_files);
        return 0;
}
