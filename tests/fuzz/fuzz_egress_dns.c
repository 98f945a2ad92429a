/* libFuzzer: the DNS responder of --network allow (sandbox/egress_dns.c),
 * whose queries come from the job. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/egress-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct netallow_rule rules[3];
        static bool loaded;
        if (!loaded) {
                netallow_parse("pypi.org:443", &rules[0]);
                netallow_parse("*.example.com:8080", &rules[1]);
                netallow_parse("10.2.0.0/16:5432", &rules[2]);
                loaded = true;
        }
        static struct egress_names names;
        if (size > 512)
                return 0;
        uint8_t out[EGRESS_DNS_OUT];
        char name[NETALLOW_NAME_MAX + 1];
        bool refused;
        size_t len = egress_dns_answer(rules, 3, &names, data, size, out, name, &refused);
        if (len > sizeof(out) || strlen(name) > NETALLOW_NAME_MAX)
                abort();
        if (len && !refused && out[7] == 1) {
                uint32_t a = (uint32_t)out[len - 4] << 24 | (uint32_t)out[len - 3] << 16 |
                             (uint32_t)out[len - 2] << 8 | out[len - 1];
                const char *n = egress_names_lookup(&names, a);
                if (!n || strcmp(n, name) != 0)
                        abort();  /* an answer maps back to the name asked */
        }
        if (names.n >= EGRESS_MAX_NAMES - 1)
                egress_names_free(&names);
        return 0;
}
