#include "common/size.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static const struct {
        const char *name;
        uint64_t factor;
} units[] = {
        { "B", 1 },
        { "KiB", UINT64_C(1) << 10 },
        { "MiB", UINT64_C(1) << 20 },
        { "GiB", UINT64_C(1) << 30 },
        { "TiB", UINT64_C(1) << 40 },
        { "kB", 1000 },
        { "MB", 1000000 },
        { "GB", 1000000000 },
        { "TB", 1000000000000 },
};

int bc_parse_size(const char *s, uint64_t default_unit, uint64_t max, uint64_t *ret)
{
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        /* Digits by hand: strtoull would take "0x10", " 5" and "-1". */
        uint64_t n = 0;
        bool overflow = false;
        const char *p = s;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (n > (UINT64_MAX - 9) / 10)
                        overflow = true;
                else
                        n = n * 10 + (uint64_t)(*p - '0');
        }
        uint64_t factor = default_unit;
        if (*p) {
                factor = 0;
                for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                        if (strcmp(p, units[i].name) == 0)
                                factor = units[i].factor;
                if (!factor)
                        return -EINVAL;
        }
        if (overflow || (n && factor > UINT64_MAX / n) || n * factor > max)
                return -ERANGE;
        *ret = n * factor;
        return 0;
}
