/* --network-allow: per-queue caps on what a job's "network": {"allow":
 * [...]} may ask for.  A queue without a cap lets its jobs ask for
 * nothing, as --allow-host-network does for "host".
 * --allow-private-egress: caps too, whose rules also let a job's rule
 * they cover reach private addresses (an exact name resolving to 10.x, a
 * CIDR in one private range): the operator names each internal target;
 * --allow-private-urls has no say here. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/netguard.h"
#include "common/text.h"
#include "worker/config/config.h"

static struct network_cap *find_cap(const struct worker_config *c, const char *queue)
{
        for (size_t i = 0; i < c->n_network_caps; i++)
                if (strcmp(c->network_caps[i].queue, queue) == 0)
                        return &c->network_caps[i];
        return NULL;
}

static struct network_cap *add_cap(struct worker_config *c, const char *queue)
{
        struct network_cap *cap = find_cap(c, queue);
        if (cap)
                return cap;
        struct network_cap *v = realloc(c->network_caps, (c->n_network_caps + 1) * sizeof(*v));
        if (!v)
                return NULL;
        c->network_caps = v;
        cap = &v[c->n_network_caps];
        *cap = (struct network_cap){ .queue = strdup(queue) };
        if (!cap->queue)
                return NULL;
        c->n_network_caps++;
        return cap;
}

/* Whether every address of a CIDR rule lies in one special-purpose range
 * (10.2.0.0/16, 127.0.0.1): what an --allow-private-egress CIDR must name,
 * so that 0.0.0.0/0 cannot open every private network at once. */
static bool in_one_special_range(const struct netallow_rule *r)
{
        static const struct netguard none; /* refuses every special address */
        uint32_t last = r->prefix >= 32 ? r->addr
                        : r->prefix     ? r->addr | (0xffffffffu >> r->prefix)
                                        : 0xffffffffu;
        const char *a = NULL, *b = NULL;
        struct sockaddr_in first = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(r->addr) };
        struct sockaddr_in end = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(last) };
        return !netguard_permits(&none, (struct sockaddr *)&first, sizeof(first), &a) &&
               !netguard_permits(&none, (struct sockaddr *)&end, sizeof(end), &b) && a && b &&
               strcmp(a, b) == 0;
}

static int add_rule(struct network_cap *cap, const char *label, const char *text, bool private_ok,
                    struct bc_error *err)
{
        if (cap->n_rules >= NETALLOW_MAX_RULES)
                return bc_error_set(err, BC_USAGE, E2BIG, "%s: more than %d rules for queue '%s'",
                                    label, NETALLOW_MAX_RULES, cap->queue);
        struct netallow_rule r;
        enum netallow_problem p = netallow_parse(text, &r);
        if (p != NETALLOW_OK) {
                char why[160];
                return bc_error_set(err, BC_USAGE, EINVAL, "%s: '%s': %s", label, text,
                                    netallow_problem_text(p, &r, why, sizeof(why)));
        }
        if (private_ok && r.wildcard)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: '%s': a wildcard cannot reach private addresses "
                                    "(name the host: a name under it could resolve anywhere)",
                                    label, text);
        if (private_ok && r.is_cidr && !in_one_special_range(&r))
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: '%s': not a private network (a CIDR here must lie in "
                                    "one range such as 10.0.0.0/8; public ones need no flag)",
                                    label, text);
        r.private_ok = private_ok;
        struct netallow_rule *v = realloc(cap->rules, (cap->n_rules + 1) * sizeof(*v));
        if (!v)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        cap->rules = v;
        v[cap->n_rules++] = r;
        return 0;
}

/* One "QUEUE=RULE,RULE". */
static int parse_one(struct worker_config *c, const char *label, char *part, bool private_ok,
                     struct bc_error *err)
{
        char *eq = strchr(part, '=');
        if (!eq)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: '%s' is not QUEUE=RULE,RULE (e.g. "
                                    "ci=pypi.org:443,*.pythonhosted.org:443)",
                                    label, part);
        *eq = '\0';
        char *queue = bc_trim(part);
        if (!config_valid_queue(queue))
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "%s: '%s' is not a queue name (name or scope/name of "
                                    "letters, digits, '_', '.', '-'; not '.' or '..')",
                                    label, queue);
        struct network_cap *cap = add_cap(c, queue);
        if (!cap)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        char *save = NULL;
        int n = 0;
        for (char *t = strtok_r(eq + 1, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int r = add_rule(cap, label, bc_trim(t), private_ok, err);
                if (r < 0)
                        return r;
                n++;
        }
        if (n == 0)
                return bc_error_set(err, BC_USAGE, EINVAL, "%s: no rules for queue '%s'", label,
                                    queue);
        return 0;
}

static int parse_caps(struct worker_config *c, const char *label, const char *value,
                      bool private_ok, struct bc_error *err)
{
        _cleanup_free_ char *copy = strdup(value);
        if (!copy)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        char *save = NULL;
        for (char *part = strtok_r(copy, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
                if (*bc_trim(part) == '\0')
                        continue;
                int r = parse_one(c, label, part, private_ok, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int config_network_allow(struct worker_config *c, const char *label, const char *value,
                         struct bc_error *err)
{
        return parse_caps(c, label, value, false, err);
}

int config_private_egress(struct worker_config *c, const char *label, const char *value,
                          struct bc_error *err)
{
        return parse_caps(c, label, value, true, err);
}

bool config_network_private(const struct worker_config *c, const char *queue,
                            const struct netallow_rule *rule)
{
        const struct network_cap *cap = find_cap(c, queue);
        if (!cap || rule->wildcard)
                return false;
        for (size_t j = 0; j < cap->n_rules; j++)
                if (cap->rules[j].private_ok && netallow_covers(&cap->rules[j], rule))
                        return true;
        return false;
}

ssize_t config_network_uncovered(const struct worker_config *c, const char *queue,
                                 const struct netallow_rule *rules, size_t n)
{
        const struct network_cap *cap = find_cap(c, queue);
        for (size_t i = 0; i < n; i++) {
                bool covered = false;
                for (size_t j = 0; cap && j < cap->n_rules && !covered; j++)
                        covered = netallow_covers(&cap->rules[j], &rules[i]);
                if (!covered)
                        return (ssize_t)i;
        }
        return -1;
}

void config_network_caps_free(struct worker_config *c)
{
        for (size_t i = 0; i < c->n_network_caps; i++) {
                free(c->network_caps[i].queue);
                free(c->network_caps[i].rules);
        }
        free(c->network_caps);
        c->network_caps = NULL;
        c->n_network_caps = 0;
}
