/* Standard base64 (RFC 4648, "+/"): the value of one symbol.  Decoders
 * differ in what they allow around the symbols (whitespace, padding), so
 * each keeps its own grammar and shares this table. */
#ifndef BC_COMMON_BASE64_H
#define BC_COMMON_BASE64_H

/* 0-63, or -1 when c is no base64 symbol ("=" included). */
static inline int base64_value(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

#endif
