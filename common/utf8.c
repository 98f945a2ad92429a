#include "common/utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 when it is not valid. */
static size_t valid_sequence(const unsigned char *p, size_t avail)
{
        unsigned char c = p[0];
        if (c >= 0x01 && c <= 0x7f)
                return 1;
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        if (avail < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

bool utf8_valid(const char *data, size_t len)
{
        const unsigned char *p = (const unsigned char *)data;
        for (size_t i = 0, n; i < len; i += n)
                if (!(n = valid_sequence(p + i, len - i)))
                        return false;
        return true;
}

char *utf8_sanitize(const char *data, size_t len)
{
        const unsigned char *p = (const unsigned char *)data;
        /* Worst case every byte becomes the 3-byte U+FFFD. */
        char *out = malloc(len * 3 + 1);
        if (!out)
                return NULL;
        size_t i = 0, o = 0;
        /* Skip continuation bytes orphaned by a ring buffer's cut. */
        while (i < len && i < 3 && (p[i] & 0xc0) == 0x80)
                i++;
        while (i < len) {
                size_t n = valid_sequence(p + i, len - i);
                if (n) {
                        memcpy(out + o, p + i, n);
                        o += n;
                        i += n;
                } else {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                }
        }
        out[o] = '\0';
        return out;
}
