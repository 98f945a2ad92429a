/* `boxcar webhooks verify`: a consumer's check of a received webhook, with
 * the same rules a receiver should apply (Standard Webhooks v1). */
#include "worker/cli/cmd_webhooks_verify.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "common/error.h"
#include "common/io.h"
#include "common/text.h"
#include "worker/config/config.h"
#include "worker/webhook/webhook_sign.h"

#define NAME "webhooks verify"
/* A header block is small; a webhook body carries a job's result with
 * output tails, which stay far below this. */
#define HEADERS_CAP (64u << 10)
#define BODY_CAP (32u << 20)

const char webhooks_verify_usage[] =
        "usage: boxcar webhooks verify [--secret S] [--headers FILE | --id ID --timestamp TS\n"
        "                              --signature SIG] [--body FILE] [--tolerance DUR]\n"
        "\n"
        "Checks a received webhook's Standard Webhooks signature, as a consumer would.\n"
        "Prints \"valid\" (exit 0) or \"invalid: <reason>\" (exit 1); usage errors exit 2.\n"
        "\n"
        "  --secret S          the receiver's own secret, whsec_<base64> (boxcar webhooks\n"
        "                      secret prints each scope's; the master key verifies\n"
        "                      nothing); several, space-separated, during a rotation\n"
        "                      (default: $BOXCAR_WEBHOOK_SECRET, which keeps the secret out\n"
        "                      of the process list)\n"
        "  --headers FILE      the request's headers as \"Name: value\" lines ('-' for stdin);\n"
        "                      webhook-id, webhook-timestamp and webhook-signature are used,\n"
        "                      reading stops at the first empty line\n"
        "  --id ID, --timestamp TS, --signature SIG\n"
        "                      the three header values (override --headers)\n"
        "  --body FILE         the exact request body bytes (default: stdin)\n"
        "  --tolerance DUR     accepted distance between the timestamp and now\n"
        "                      (default: 300s; 'none' skips the check)\n"
        "  --now SECONDS       judge the timestamp against this time, not the clock\n";

struct verify_args {
        const char *secret, *headers_file, *body_file;
        const char *id, *timestamp, *signature;
        long long tolerance_s, now;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "boxcar " NAME ": ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, " (see --help)\n");
        va_end(ap);
        return 2;
}

static int parse_number(const char *s, long long *ret)
{
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Returns 0, 1 after --help, or 2 on a usage error (printed). */
static int parse_args(int argc, char **argv, struct verify_args *a)
{
        static const struct option opts[] = {
                { "secret", required_argument, NULL, 'S' },
                { "headers", required_argument, NULL, 'H' },
                { "body", required_argument, NULL, 'b' },
                { "id", required_argument, NULL, 'i' },
                { "timestamp", required_argument, NULL, 't' },
                { "signature", required_argument, NULL, 's' },
                { "tolerance", required_argument, NULL, 'T' },
                { "now", required_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        *a = (struct verify_args){ .tolerance_s = WEBHOOK_DEFAULT_TOLERANCE_S, .now = -1 };
        optind = 0;
        opterr = 0;
        for (;;) {
                int o = getopt_long(argc, argv, "+h", opts, NULL);
                if (o == -1)
                        break;
                double secs;
                switch (o) {
                case 'S':
                        a->secret = optarg;
                        break;
                case 'H':
                        a->headers_file = optarg;
                        break;
                case 'b':
                        a->body_file = optarg;
                        break;
                case 'i':
                        a->id = optarg;
                        break;
                case 't':
                        a->timestamp = optarg;
                        break;
                case 's':
                        a->signature = optarg;
                        break;
                case 'h':
                        fputs(webhooks_verify_usage, stdout);
                        return 1;
                case 'T':
                        if (strcmp(optarg, "none") == 0)
                                a->tolerance_s = -1;
                        else if (config_parse_duration(optarg, true, &secs) == 0)
                                a->tolerance_s = (long long)secs;
                        else
                                return usage_error("--tolerance '%s': expected a duration "
                                                   "like 300s or 5m, or none",
                                                   optarg);
                        break;
                case 'n':
                        if (parse_number(optarg, &a->now) < 0)
                                return usage_error("--now '%s': expected seconds since the "
                                                   "epoch",
                                                   optarg);
                        break;
                default:
                        /* The name only: "--secrt=whsec_..." holds the secret. */
                        return usage_error("unknown or incomplete option '%.*s'",
                                           (int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
                }
        }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        if (!a->secret)
                a->secret = getenv("BOXCAR_WEBHOOK_SECRET");
        if (!a->secret)
                return usage_error("no --secret and no $BOXCAR_WEBHOOK_SECRET");
        bool body_stdin = !a->body_file || strcmp(a->body_file, "-") == 0;
        if (a->headers_file && strcmp(a->headers_file, "-") == 0 && body_stdin)
                return usage_error("--headers - and the body cannot both come from stdin; "
                                   "give --body FILE");
        if (!a->headers_file && (!a->id || !a->timestamp || !a->signature))
                return usage_error("give --headers FILE, or all of --id, --timestamp and "
                                   "--signature");
        return 0;
}

/* Reads all of path ('-' or NULL: stdin), at most cap bytes. */
static int read_all(const char *path, size_t cap, char **ret, size_t *ret_len,
                    struct bc_error *err)
{
        int r = bc_read_all(path, cap, ret, ret_len, err);
        if (r < 0 && err->code == BC_IO)
                err->code = BC_USAGE;
        return r;
}

/* Picks the three webhook headers out of a "Name: value" block (in place).
 * A request or status line has no colon before a space and is skipped.
 * A repeated webhook header is refused: which copy was signed would be a
 * guess. */
static int pick_headers(char *text, const char **id, const char **ts, const char **sig,
                        struct bc_error *err)
{
        static const char *const names[] = { "webhook-id", "webhook-timestamp",
                                             "webhook-signature" };
        const char *found[3] = { NULL, NULL, NULL };
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *l = bc_trim(line);
                if (!*l)
                        break;
                char *colon = strchr(l, ':');
                if (!colon)
                        continue;
                *colon = '\0';
                const char *name = bc_trim(l), *value = bc_trim(colon + 1);
                for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                        if (strcasecmp(name, names[i]) != 0)
                                continue;
                        if (found[i])
                                return bc_error_set(err, BC_CHECKSUM_MISMATCH, EINVAL,
                                                    "duplicate %s header", names[i]);
                        found[i] = value;
                }
        }
        /* Flags given on the command line win over the file. */
        *id = *id ? *id : found[0];
        *ts = *ts ? *ts : found[1];
        *sig = *sig ? *sig : found[2];
        return 0;
}

static int invalid(const struct bc_error *err)
{
        printf("invalid: %s\n", bc_error_message(err));
        return 1;
}

static int usage_fail(struct bc_error *err)
{
        fprintf(stderr, "boxcar " NAME ": %s\n", bc_error_message(err));
        bc_error_clear(err);
        return 2;
}

int webhooks_verify_main(int argc, char **argv)
{
        struct verify_args a;
        int r = parse_args(argc, argv, &a);
        if (r)
                return r == 1 ? 0 : 2;
        struct bc_error err = BC_ERROR_INIT;
        _cleanup_webhook_secrets_ struct webhook_secrets *secrets = NULL;
        if (webhook_secrets_parse(a.secret, &secrets, &err) < 0) {
                bc_error_prefix(&err, "--secret");
                return usage_fail(&err);
        }
        _cleanup_free_ char *headers = NULL;
        size_t headers_len = 0;
        if (a.headers_file &&
            read_all(a.headers_file, HEADERS_CAP, &headers, &headers_len, &err) < 0)
                return usage_fail(&err);
        _cleanup_free_ char *body = NULL;
        size_t body_len = 0;
        if (read_all(a.body_file, BODY_CAP, &body, &body_len, &err) < 0)
                return usage_fail(&err);

        if (headers && pick_headers(headers, &a.id, &a.timestamp, &a.signature, &err) < 0)
                r = invalid(&err);
        else if (webhook_verify(secrets, a.id, a.timestamp, body, body_len, a.signature,
                                a.now >= 0 ? a.now : (long long)time(NULL), a.tolerance_s,
                                &err) < 0)
                r = invalid(&err);
        else
                r = puts("valid") < 0 ? 1 : 0;
        bc_error_clear(&err);
        return r;
}
