#include "common/uri.h"

#include <stdbool.h>

static bool unreserved(unsigned char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~';
}

int bc_uri_encode(struct dynbuf *b, const char *s, int keep_slash)
{
        static const char hex[] = "0123456789ABCDEF";
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                int r;
                if (unreserved(*p) || (keep_slash && *p == '/')) {
                        r = dynbuf_add(b, p, 1);
                } else {
                        char enc[3] = { '%', hex[*p >> 4], hex[*p & 15] };
                        r = dynbuf_add(b, enc, 3);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}
