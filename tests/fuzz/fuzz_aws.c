/* libFuzzer: what the AWS credential chain parses from outside the
 * process (storage/creds_*.c, storage/aws_config.c) and the worker's
 * configuration file (worker/config/config_file.c).  The first byte picks the
 * parser; the rest is its input:
 *   0  an ECS/IMDS credentials JSON body (creds_from_json)
 *   1  an Expiration time (creds_parse_time)
 *   2  an STS XML answer (creds_xml_text of each tag the chain reads)
 *   3  a shared config file (aws_profile_load, as AWS_CONFIG_FILE)
 *   4  a worker configuration file (config_file_read) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/aws_config.h"
#include "storage/creds-internal.h"
#include "worker/config/config_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ignore_entry(const char *key, const char *value, const char *path, unsigned line,
                        void *ctx, struct bc_error *err)
{
        (void)key, (void)value, (void)path, (void)line, (void)ctx, (void)err;
        return 0;
}

/* The input as a file the parsers open by path. */
static int with_file(const uint8_t *data, size_t size, char path[static 64])
{
        snprintf(path, 64, "/tmp/boxcar-fuzz-aws.%d", (int)getpid());
        FILE *f = fopen(path, "we");
        if (!f)
                return -1;
        fwrite(data, 1, size, f);
        fclose(f);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        uint8_t which = data[0] % 5;
        data++, size--;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        struct bc_error err = BC_ERROR_INIT;
        char path[64];
        switch (which) {
        case 0: {
                struct aws_creds c = { 0 };
                if (creds_from_json(text, "fuzz", &c, &err) >= 0)
                        aws_creds_done(&c);
                break;
        }
        case 1: {
                time_t t;
                (void)creds_parse_time(text, &t);
                break;
        }
        case 2: {
                static const char *const tags[] = { "AccessKeyId", "SecretAccessKey",
                                                    "SessionToken", "Expiration", "Code",
                                                    "Message" };
                for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
                        free(creds_xml_text(text, tags[i]));
                break;
        }
        case 3:
                if (with_file(data, size, path) == 0) {
                        setenv("AWS_CONFIG_FILE", path, 1);
                        setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
                        setenv("AWS_PROFILE", "fuzz", 1);
                        struct aws_profile p = { 0 };
                        if (aws_profile_load(&p, &err) >= 0)
                                aws_profile_done(&p);
                        unlink(path);
                }
                break;
        default:
                if (with_file(data, size, path) == 0) {
                        (void)config_file_read(path, false, ignore_entry, NULL, &err);
                        unlink(path);
                }
                break;
        }
        bc_error_clear(&err);
        free(text);
        return 0;
}
