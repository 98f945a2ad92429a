/* `boxcar webhooks verify`: checks a received webhook's signature, a tool
 * for webhook consumers.  Wired into the `boxcar webhooks` dispatcher. */
#ifndef BC_WORKER_CLI_CMD_WEBHOOKS_VERIFY_H
#define BC_WORKER_CLI_CMD_WEBHOOKS_VERIFY_H

extern const char webhooks_verify_usage[];

/* argv[0] is "verify".  Prints "valid" and returns 0, prints
 * "invalid: <reason>" and returns 1, or returns 2 on a usage error
 * (message on stderr). */
int webhooks_verify_main(int argc, char **argv);

#endif
