#include "common/json_strict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

struct scan {
        const unsigned char *p, *end;
        unsigned max_depth;
        const char *problem;
        int error;
};

static int fail(struct scan *s, int error, const char *problem)
{
        if (!s->problem) {
                s->problem = problem;
                s->error = error;
        }
        return -1;
}

static void skip_space(struct scan *s)
{
        while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
                s->p++;
}

static bool take(struct scan *s, const char *word)
{
        const unsigned char *q = s->p;
        for (; *word; word++, q++)
                if (q >= s->end || *q != (unsigned char)*word)
                        return false;
        s->p = q;
        return true;
}

static int hex4(struct scan *s, unsigned *ret)
{
        unsigned v = 0;
        for (int i = 0; i < 4; i++, s->p++) {
                if (s->p >= s->end)
                        return fail(s, -EINVAL, "a \\u escape is cut short");
                unsigned c = *s->p;
                unsigned d = c >= '0' && c <= '9'   ? c - '0'
                             : c >= 'a' && c <= 'f' ? c - 'a' + 10
                             : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                    : 16;
                if (d == 16)
                        return fail(s, -EINVAL, "a \\u escape has a character that is not hex");
                v = v * 16 + d;
        }
        *ret = v;
        return 0;
}

/* The escapes jsonb refuses: \u0000, and surrogates that are not a high
 * one followed by a low one. */
static int unicode_escape(struct scan *s)
{
        unsigned u;
        if (hex4(s, &u) < 0)
                return -1;
        if (u == 0)
                return fail(s, -EINVAL, "\\u0000 is not allowed in text");
        if (u >= 0xDC00 && u <= 0xDFFF)
                return fail(s, -EINVAL, "a low surrogate escape without a high one");
        if (u < 0xD800 || u > 0xDBFF)
                return 0;
        unsigned low;
        if (!take(s, "\\u") || hex4(s, &low) < 0 || low < 0xDC00 || low > 0xDFFF)
                return fail(s, -EINVAL, "a high surrogate escape without a low one");
        return 0;
}

/* One UTF-8 sequence starting at s->p (a byte >= 0x80): shortest form, no
 * surrogates, at most U+10FFFF. */
static int utf8_char(struct scan *s)
{
        const unsigned char *p = s->p;
        unsigned c = p[0], n, min, cp;
        if (c >= 0xC2 && c <= 0xDF)
                n = 1, min = 0x80, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
                n = 2, min = 0x800, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
                n = 3, min = 0x10000, cp = c & 0x07;
        else
                return fail(s, -EINVAL, "invalid UTF-8");
        if ((size_t)(s->end - p) <= n)
                return fail(s, -EINVAL, "invalid UTF-8");
        for (unsigned i = 1; i <= n; i++) {
                if ((p[i] & 0xC0) != 0x80)
                        return fail(s, -EINVAL, "invalid UTF-8");
                cp = (cp << 6) | (p[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return fail(s, -EINVAL, "invalid UTF-8");
        s->p += n + 1;
        return 0;
}

static int string(struct scan *s)
{
        s->p++; /* the opening quote */
        while (s->p < s->end) {
                unsigned c = *s->p;
                if (c == '"') {
                        s->p++;
                        return 0;
                }
                if (c < 0x20)
                        return fail(s, -EINVAL, "a control character inside a string");
                if (c >= 0x80) {
                        if (utf8_char(s) < 0)
                                return -1;
                        continue;
                }
                s->p++;
                if (c != '\\')
                        continue;
                if (s->p >= s->end)
                        break;
                c = *s->p++;
                if (c == 'u') {
                        if (unicode_escape(s) < 0)
                                return -1;
                } else if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' &&
                           c != 'r' && c != 't') {
                        return fail(s, -EINVAL, "an unknown escape inside a string");
                }
        }
        return fail(s, -EINVAL, "a string is not closed");
}

static bool digit(const struct scan *s)
{
        return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

static int number(struct scan *s)
{
        if (*s->p == '-')
                s->p++;
        if (!digit(s))
                return fail(s, -EINVAL, "a malformed number");
        if (*s->p == '0')
                s->p++;
        else
                while (digit(s))
                        s->p++;
        if (s->p < s->end && *s->p == '.') {
                s->p++;
                if (!digit(s))
                        return fail(s, -EINVAL, "a malformed number");
                while (digit(s))
                        s->p++;
        }
        if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
                s->p++;
                if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
                        s->p++;
                if (!digit(s))
                        return fail(s, -EINVAL, "a malformed number");
                while (digit(s))
                        s->p++;
        }
        return 0;
}

static int value(struct scan *s, unsigned depth);

/* An array or object: its members, at depth + 1. */
static int container(struct scan *s, unsigned depth, bool object)
{
        const unsigned char close = object ? '}' : ']';
        s->p++;
        skip_space(s);
        if (s->p < s->end && *s->p == close) {
                s->p++;
                return 0;
        }
        for (;;) {
                if (object) {
                        if (s->p >= s->end || *s->p != '"')
                                return fail(s, -EINVAL, "an object key is not a string");
                        if (string(s) < 0)
                                return -1;
                        skip_space(s);
                        if (s->p >= s->end || *s->p != ':')
                                return fail(s, -EINVAL, "a ':' is missing after an object key");
                        s->p++;
                        skip_space(s);
                }
                if (value(s, depth + 1) < 0)
                        return -1;
                skip_space(s);
                if (s->p < s->end && *s->p == ',') {
                        s->p++;
                        skip_space(s);
                        continue;
                }
                if (s->p < s->end && *s->p == close) {
                        s->p++;
                        return 0;
                }
                return fail(s, -EINVAL,
                            object ? "a ',' or '}' is missing" : "a ',' or ']' is missing");
        }
}

static int value(struct scan *s, unsigned depth)
{
        if (depth > s->max_depth)
                return fail(s, -E2BIG, "nested too deep");
        if (s->p >= s->end)
                return fail(s, -EINVAL, "a value is missing");
        switch (*s->p) {
        case '{':
                return container(s, depth, true);
        case '[':
                return container(s, depth, false);
        case '"':
                return string(s);
        case 't':
                return take(s, "true") ? 0 : fail(s, -EINVAL, "an unknown word");
        case 'f':
                return take(s, "false") ? 0 : fail(s, -EINVAL, "an unknown word");
        case 'n':
                return take(s, "null") ? 0 : fail(s, -EINVAL, "an unknown word");
        default:
                return number(s);
        }
}

int json_strict_check(const char *text, size_t len, unsigned max_depth, const char **ret_problem)
{
        struct scan s = { .p = (const unsigned char *)text,
                          .end = (const unsigned char *)text + len,
                          .max_depth = max_depth };
        skip_space(&s);
        if (value(&s, 0) == 0) {
                skip_space(&s);
                if (s.p == s.end)
                        return 0;
                fail(&s, -EINVAL, "something follows the JSON value");
        }
        *ret_problem = s.problem;
        return s.error;
}
