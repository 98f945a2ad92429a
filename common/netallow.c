#include "common/netallow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static bool is_lower(char c)
{
        return c >= 'a' && c <= 'z';
}

/* A decimal number without leading zeros ("0" itself is fine), at most
 * max, spanning exactly [s, end).  The same as the SQL pattern
 * (25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]) for octets. */
static bool parse_small(const char *s, const char *end, unsigned max, unsigned *ret)
{
        size_t n = (size_t)(end - s);
        if (n == 0 || n > 3 || (n > 1 && s[0] == '0'))
                return false;
        unsigned v = 0;
        for (const char *p = s; p < end; p++) {
                if (!is_digit(*p))
                        return false;
                v = v * 10 + (unsigned)(*p - '0');
        }
        if (v > max)
                return false;
        *ret = v;
        return true;
}

static bool parse_ipv4(const char *s, const char *end, struct netallow_rule *r)
{
        uint32_t addr = 0;
        const char *p = s;
        for (int i = 0; i < 4; i++) {
                const char *q = p;
                while (q < end && is_digit(*q))
                        q++;
                unsigned octet = 0;
                if (!parse_small(p, q, 255, &octet))
                        return false;
                addr = addr << 8 | octet;
                if (i < 3) {
                        if (q >= end || *q != '.')
                                return false;
                        q++;
                }
                p = q;
        }
        unsigned prefix = 32;
        if (p < end) {
                if (*p != '/' || !parse_small(p + 1, end, 32, &prefix) || end - (p + 1) > 2)
                        return false;
        }
        r->is_cidr = true;
        r->addr = addr;
        r->prefix = prefix;
        return true;
}

/* One label of a name: [a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?, and, for the
 * last one, starting with a letter. */
static bool label_ok(const char *s, size_t n, bool last)
{
        if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
                return false;
        if (last && !is_lower(s[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_lower(s[i]) && !is_digit(s[i]) && s[i] != '-')
                        return false;
        return true;
}

static bool parse_name(const char *s, const char *end, struct netallow_rule *r)
{
        bool wildcard = end - s >= 2 && s[0] == '*' && s[1] == '.';
        if (wildcard)
                s += 2;
        size_t len = (size_t)(end - s);
        if (len == 0 || len > NETALLOW_NAME_MAX)
                return false;
        for (const char *p = s; p <= end;) {
                const char *dot = memchr(p, '.', (size_t)(end - p));
                const char *stop = dot ? dot : end;
                if (!label_ok(p, (size_t)(stop - p), dot == NULL))
                        return false;
                if (!dot)
                        break;
                p = dot + 1;
        }
        r->is_cidr = false;
        r->wildcard = wildcard;
        memcpy(r->name, s, len);
        r->name[len] = '\0';
        return true;
}

static uint32_t mask_of(unsigned prefix)
{
        return prefix == 0 ? 0 : ~(uint32_t)0 << (32 - prefix);
}

enum netallow_problem netallow_parse(const char *text, struct netallow_rule *r)
{
        memset(r, 0, sizeof(*r));
        const char *colon = strrchr(text, ':');
        if (!colon || colon == text)
                return NETALLOW_SYNTAX;
        const char *port = colon + 1;
        size_t plen = strlen(port);
        if (plen == 0 || strspn(port, "0123456789") != plen)
                return NETALLOW_SYNTAX;
        const char *host_end = colon;
        /* The host decides the shape: a dotted quad (with a prefix) is an
         * address, anything else must be a name.  A name never ends in a
         * label starting with a digit, so the two cannot be confused. */
        if (!parse_ipv4(text, host_end, r) && !parse_name(text, host_end, r))
                return NETALLOW_SYNTAX;
        unsigned long p = 0;
        if (plen > 5 || port[0] == '0' || (p = strtoul(port, NULL, 10)) > 65535)
                return NETALLOW_PORT;
        r->port = (uint16_t)p;
        if (r->is_cidr && (r->addr & ~mask_of(r->prefix))) {
                r->addr &= mask_of(r->prefix);
                return NETALLOW_HOST_BITS;
        }
        if (r->is_cidr && r->prefix == 32 && r->addr == NETALLOW_METADATA_ADDR)
                return NETALLOW_METADATA;
        return NETALLOW_OK;
}

const char *netallow_problem_text(enum netallow_problem p, const struct netallow_rule *r,
                                  char *buf, size_t size)
{
        switch (p) {
        case NETALLOW_OK:
                snprintf(buf, size, "ok");
                break;
        case NETALLOW_SYNTAX:
                snprintf(buf, size,
                         "must be \"name:port\", \"*.name:port\" or \"a.b.c.d/bits:port\"");
                break;
        case NETALLOW_PORT:
                snprintf(buf, size, "port must be between 1 and 65535");
                break;
        case NETALLOW_HOST_BITS:
                snprintf(buf, size,
                         "address has bits set past the prefix (the network is %u.%u.%u.%u/%u)",
                         r->addr >> 24, (r->addr >> 16) & 255, (r->addr >> 8) & 255, r->addr & 255,
                         r->prefix);
                break;
        case NETALLOW_METADATA:
                snprintf(buf, size,
                         "169.254.169.254 is the cloud metadata service, which no rule reaches");
                break;
        }
        return buf;
}

/* Whether name is strictly under suffix ("a.b.example.com" under
 * "example.com"; not "example.com" itself, not "badexample.com"). */
static bool under(const char *name, const char *suffix)
{
        size_t n = strlen(name), s = strlen(suffix);
        return n > s + 1 && name[n - s - 1] == '.' && strcmp(name + n - s, suffix) == 0;
}

bool netallow_covers(const struct netallow_rule *cap, const struct netallow_rule *r)
{
        if (cap->port != r->port || cap->is_cidr != r->is_cidr)
                return false;
        if (cap->is_cidr)
                return r->prefix >= cap->prefix && (r->addr & mask_of(cap->prefix)) == cap->addr;
        if (!cap->wildcard)
                return !r->wildcard && strcmp(cap->name, r->name) == 0;
        /* "*.x" covers "a.x", "*.x" and "*.a.x". */
        return under(r->name, cap->name) || (r->wildcard && strcmp(r->name, cap->name) == 0);
}

bool netallow_match_name(const struct netallow_rule *r, const char *name, uint16_t port)
{
        if (r->is_cidr || r->port != port)
                return false;
        return r->wildcard ? under(name, r->name) : strcmp(name, r->name) == 0;
}

bool netallow_match_addr(const struct netallow_rule *r, uint32_t addr, uint16_t port)
{
        return r->is_cidr && r->port == port && (addr & mask_of(r->prefix)) == r->addr;
}

void netallow_format(const struct netallow_rule *r, char *buf, size_t size)
{
        if (r->is_cidr)
                snprintf(buf, size, "%u.%u.%u.%u/%u:%u", r->addr >> 24, (r->addr >> 16) & 255,
                         (r->addr >> 8) & 255, r->addr & 255, r->prefix, r->port);
        else
                snprintf(buf, size, "%s%s:%u", r->wildcard ? "*." : "", r->name, r->port);
}
