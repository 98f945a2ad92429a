/* The DNS responder of --network allow (see egress-internal.h): answers
 * A queries for names some rule allows, each with a synthetic address of
 * its own, NODATA for their other types (AAAA: no IPv6 around an IPv4
 * rule) and NXDOMAIN for every other name.  Nothing is forwarded to a
 * real resolver: a name that is not allowed never leaves the sandbox, so
 * queries cannot carry data out (DNS tunnelling). */
#include "sandbox/egress-internal.h"

#include <stdlib.h>
#include <string.h>

enum { TYPE_A = 1, CLASS_IN = 1, RCODE_SERVFAIL = 2, RCODE_NXDOMAIN = 3, RCODE_NOTIMP = 4 };

/* The question's name into name (lowercase, dots, no trailing dot);
 * returns the offset past QNAME, or 0 when malformed or compressed. */
static size_t read_qname(const uint8_t *q, size_t n, char name[NETALLOW_NAME_MAX + 1])
{
        size_t off = 12, len = 0;
        for (;;) {
                if (off >= n)
                        return 0;
                uint8_t l = q[off++];
                if (l == 0)
                        break;
                if (l > 63 || off + l > n || len + l + 1 > NETALLOW_NAME_MAX)
                        return 0;
                if (len)
                        name[len++] = '.';
                for (uint8_t i = 0; i < l; i++) {
                        char ch = (char)q[off + i];
                        if (ch >= 'A' && ch <= 'Z')
                                ch = (char)(ch - 'A' + 'a');
                        /* Only what a rule's name can hold: anything else
                         * matches no rule (and keeps "." inside a label out). */
                        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
                                ch = '?';
                        name[len++] = ch;
                }
                off += l;
        }
        name[len] = '\0';
        return off;
}

static bool name_allowed(const struct netallow_rule *rules, size_t n_rules, const char *name)
{
        for (size_t i = 0; i < n_rules; i++)
                if (!rules[i].is_cidr && netallow_match_name(&rules[i], name, rules[i].port))
                        return true;
        return false;
}

/* The synthetic address of name, given one if it has none yet; 0 when
 * the table is full. */
static uint32_t name_address(struct egress_names *t, const char *name)
{
        if (t->n == 0)
                t->n = 1;
        for (size_t i = 1; i < t->n; i++)
                if (strcmp(t->name[i], name) == 0)
                        return EGRESS_SYNTH_NET | (uint32_t)i;
        if (t->n >= EGRESS_MAX_NAMES || !(t->name[t->n] = strdup(name)))
                return 0;
        return EGRESS_SYNTH_NET | (uint32_t)t->n++;
}

const char *egress_names_lookup(const struct egress_names *t, uint32_t addr)
{
        if ((addr & 0xffff0000u) != EGRESS_SYNTH_NET)
                return NULL;
        size_t i = addr & 0xffffu;
        return i >= 1 && i < t->n ? t->name[i] : NULL;
}

void egress_names_free(struct egress_names *t)
{
        for (size_t i = 1; i < t->n; i++)
                free(t->name[i]);
        t->n = 0;
}

size_t egress_dns_answer(const struct netallow_rule *rules, size_t n_rules,
                         struct egress_names *names, const uint8_t *q, size_t n, uint8_t *out,
                         char name[NETALLOW_NAME_MAX + 1], bool *ret_refused)
{
        name[0] = '\0';
        *ret_refused = false;
        /* A query: QR clear, one question, no answers. */
        if (n < 12 || n > 512 || (q[2] & 0x80) || q[4] != 0 || q[5] != 1)
                return 0;
        size_t end = read_qname(q, n, name);
        if (end == 0 || end + 4 > n) {
                name[0] = '\0'; /* read_qname may have stopped halfway */
                return 0;
        }
        uint16_t type = (uint16_t)(q[end] << 8 | q[end + 1]);
        uint16_t class = (uint16_t)(q[end + 2] << 8 | q[end + 3]);
        end += 4;
        /* Header, then the question as asked. */
        memcpy(out, q, end);
        out[2] = (uint8_t)(0x84 | (q[2] & 0x01)); /* QR, AA, RD as asked */
        out[3] = 0x80;                            /* RA, NOERROR */
        memset(out + 6, 0, 6);                    /* no answer, authority, additional */
        int opcode = (q[2] >> 3) & 0x0f;
        if (opcode != 0) {
                out[3] |= RCODE_NOTIMP;
                return end;
        }
        if (!name_allowed(rules, n_rules, name)) {
                *ret_refused = true;
                out[3] |= RCODE_NXDOMAIN;
                return end;
        }
        if (type != TYPE_A || class != CLASS_IN)
                return end; /* NODATA */
        uint32_t a = name_address(names, name);
        if (a == 0) {
                out[3] |= RCODE_SERVFAIL;
                return end;
        }
        static const uint8_t rr[] = { 0xc0, 12, 0, TYPE_A, 0, CLASS_IN, 0, 0, 0, 60, 0, 4 };
        memcpy(out + end, rr, sizeof(rr));
        end += sizeof(rr);
        out[end++] = (uint8_t)(a >> 24);
        out[end++] = (uint8_t)(a >> 16);
        out[end++] = (uint8_t)(a >> 8);
        out[end++] = (uint8_t)a;
        out[7] = 1; /* ANCOUNT */
        return end;
}
