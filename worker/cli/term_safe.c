#include "worker/cli/term_safe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"

static int add_hex(struct dynbuf *out, unsigned char b)
{
        return dynbuf_printf(out, "\\x%02x", b);
}

static int add_pending_as_hex(struct term_safe *t, struct dynbuf *out)
{
        int r = 0;
        for (size_t i = 0; i < t->n_pend && r == 0; i++)
                r = add_hex(out, t->pend[i]);
        t->n_pend = 0;
        return r;
}

/* Whether b may be byte i (1..3) of the sequence led by lead: the ranges
 * of RFC 3629 that exclude overlong forms, surrogates and > U+10FFFF. */
static bool continues(unsigned char lead, size_t i, unsigned char b)
{
        unsigned char lo = 0x80, hi = 0xbf;
        if (i == 1) {
                if (lead == 0xe0)
                        lo = 0xa0;
                else if (lead == 0xed)
                        hi = 0x9f;
                else if (lead == 0xf0)
                        lo = 0x90;
                else if (lead == 0xf4)
                        hi = 0x8f;
        }
        return b >= lo && b <= hi;
}

/* A complete sequence: shown, unless it encodes a C1 control. */
static int add_sequence(struct term_safe *t, struct dynbuf *out)
{
        int r;
        if (t->need == 2 && t->pend[0] == 0xc2 && t->pend[1] <= 0x9f)
                r = dynbuf_printf(out, "\\u%04x", t->pend[1]);
        else
                r = dynbuf_add(out, t->pend, t->need);
        t->n_pend = 0;
        return r;
}

static int add_ascii(struct term_safe *t, unsigned char b, struct dynbuf *out)
{
        if (b == '\r') {
                t->cr = true;
                return 0;
        }
        if (b == '\n' || b == '\t' || (b >= 0x20 && b < 0x7f))
                return dynbuf_add(out, &b, 1);
        char caret[2] = { '^', b == 0x7f ? '?' : (char)(b + 0x40) };
        return dynbuf_add(out, caret, 2);
}

static int feed_byte(struct term_safe *t, unsigned char b, struct dynbuf *out)
{
        int r = 0;
        if (t->cr) {
                t->cr = false;
                r = dynbuf_add(out, b == '\n' ? "\r" : "^M", b == '\n' ? 1 : 2);
                if (r < 0)
                        return r;
        }
        if (t->n_pend) {
                if (continues(t->pend[0], t->n_pend, b)) {
                        t->pend[t->n_pend++] = b;
                        return t->n_pend == t->need ? add_sequence(t, out) : 0;
                }
                /* Cut short: its bytes are no text; b starts afresh. */
                r = add_pending_as_hex(t, out);
                if (r < 0)
                        return r;
        }
        if (b < 0x80)
                return add_ascii(t, b, out);
        if (b >= 0xc2 && b <= 0xf4) {
                t->pend[0] = b;
                t->n_pend = 1;
                t->need = b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
                return 0;
        }
        return add_hex(out, b);
}

int term_safe_feed(struct term_safe *t, const void *data, size_t len, struct dynbuf *out)
{
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                int r = feed_byte(t, p[i], out);
                if (r < 0)
                        return r;
        }
        return 0;
}

int term_safe_end(struct term_safe *t, struct dynbuf *out)
{
        int r = 0;
        if (t->cr)
                r = dynbuf_add(out, "^M", 2);
        t->cr = false;
        if (r == 0)
                r = add_pending_as_hex(t, out);
        t->n_pend = 0;
        return r;
}

char *term_safe_text(const char *s)
{
        struct term_safe t = { 0 };
        struct dynbuf out;
        size_t len = strlen(s);
        dynbuf_init(&out, 4 * len + 16);
        if (term_safe_feed(&t, s, len, &out) < 0 || term_safe_end(&t, &out) < 0) {
                dynbuf_done(&out);
                return NULL;
        }
        return dynbuf_steal(&out);
}

char *term_safe_json(const char *json)
{
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)json; *p; p++)
                n += *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ? 6 : 1;
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
                if (*p == 0x7f) {
                        memcpy(o, "\\u007f", 6);
                        o += 6;
                } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
                        snprintf(o, 7, "\\u%04x", p[1]);
                        o += 6;
                        p++;
                } else {
                        *o++ = (char)*p;
                }
        }
        *o = '\0';
        return out;
}
