/* libFuzzer: extraction of untrusted tarballs (storage/extract.c), the
 * input being the archive (gzip or plain tar).  Every run extracts into a
 * fresh directory inside a sandbox directory and checks that nothing was
 * written beside it. */
#include <stdint.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rmtree.h"
#include "storage/fsutil.h"
#include "storage/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[] = "/tmp/boxcar-fuzz-extract-XXXXXX";
static char archive[sizeof(root) + 16], dest[sizeof(root) + 16];

static int count_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        (void)path;
        (void)st;
        (void)type;
        return ftw->level == 1 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!archive[0]) {
                if (!mkdtemp(root))
                        abort();
                snprintf(archive, sizeof(archive), "%s/in.tgz", root);
                snprintf(dest, sizeof(dest), "%s/out", root);
        }
        FILE *f = fopen(archive, "we");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
                abort();
        struct storage_limits limits;
        storage_limits_default(&limits);
        limits.max_bytes = 8 << 20;
        limits.max_entries = 2000;
        if (limits.ratio_floor > limits.max_bytes)
                limits.ratio_floor = limits.max_bytes;
        struct storage_fetch_result res;
        struct bc_error err = BC_ERROR_INIT;
        /* Limits the library refuses would make every run stop before
         * extracting anything: the harness would fuzz nothing. */
        if (storage_limits_validate(&limits, &err) < 0)
                abort();
        storage_extract_file(archive, NULL, dest, &limits, &res, &err);
        bc_error_clear(&err);
        fs_rm_rf(dest);  /* read-only directories included */
        unlink(archive);
        /* Only "in.tgz" and "out" ever live in root: anything else was
         * written outside the destination. */
        if (nftw(root, count_entry, 16, FTW_PHYS) != 0)
                abort();
        return 0;
}
