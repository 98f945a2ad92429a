/* `boxcar webhooks secret` and `boxcar webhooks rotate`: the operator's
 * view of the per-scope webhook secrets, derived from the master key in
 * $BOXCAR_WEBHOOK_SECRET (worker/webhook/webhook_derive.h).  Wired into
 * the `boxcar webhooks` dispatcher. */
#ifndef BC_WORKER_CLI_CMD_WEBHOOKS_SECRET_H
#define BC_WORKER_CLI_CMD_WEBHOOKS_SECRET_H

#include <stdbool.h>

/* argv[0] is "secret" or "rotate" (--database-url and --json already
 * taken out).  Prints the secrets that sign the scope's (or endpoint's)
 * deliveries now; rotate first adds a generation.  Returns the exit
 * status: 0, 1 on a failure, 2 on a usage error (message on stderr). */
int webhooks_secret_main(int argc, char **argv, const char *db_url, bool json);

#endif
