/* sandbox_argv_build: the worker's side of the helper's command line. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "sandbox/helper-internal.h"

/* Most argv entries a job may make us build (env + binds + command). */
#define ARGV_MAX 65536

struct argv_builder {
        char **v;
        size_t n, alloc;
};

static int add(struct argv_builder *b, const char *s)
{
        if (b->n + 2 > b->alloc) {
                if (b->alloc >= ARGV_MAX)
                        return -E2BIG;
                size_t na = b->alloc ? b->alloc * 2 : 32;
                char **nv = realloc(b->v, na * sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                b->v = nv;
                b->alloc = na;
        }
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        b->v[b->n++] = d;
        b->v[b->n] = NULL;
        return 0;
}

static int add_fmt(struct argv_builder *b, const char *opt, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int add_fmt(struct argv_builder *b, const char *opt, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0) {
                s = NULL;
                return -ENOMEM;
        }
        int r = add(b, opt);
        return r < 0 ? r : add(b, s);
}

static int validate(const struct sandbox_opts *o, struct bc_error *err)
{
        if (!o->argv || !o->argv[0] || !o->argv[0][0])
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "command: must not be empty");
        if (o->workspace && o->workspace[0] != '/')
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "workspace: must be absolute");
        if (o->scratch && o->scratch[0] != '/')
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "scratch: must be absolute");
        for (size_t i = 0; i < o->n_ro_binds; i++) {
                const struct sandbox_bind *b = &o->ro_binds[i];
                if (!b->src || b->src[0] != '/')
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "volumes[%zu].src: must be absolute", i);
                if (sbx_check_dest(b->dest) < 0)
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "volumes[%zu].mount: '%s' is not an allowed path", i,
                                            b->dest ? b->dest : "");
        }
        for (size_t i = 0; o->env && o->env[i]; i++)
                if (!sbx_env_entry_valid(o->env[i]))
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL, "env[%zu]: want K=V", i);
        if (o->timeout_s < 0 || !isfinite(o->timeout_s) || o->timeout_s > 1e7)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "limits.timeout_s: out of range");
        if (o->cpus < 0 || !isfinite(o->cpus) || o->cpus > 4096 || (o->cpus > 0 && o->cpus < 0.01))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "limits.cpus: out of range");
        if (o->memory_mb > (UINT64_C(1) << 30) || o->disk_mb > (UINT64_C(1) << 30))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "limits: memory_mb/disk_mb too large");
        if (o->pids > (1u << 22))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "limits.pids: too large");
        if (o->image && sbx_check_image(o->image) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, EINVAL, "image: bad path '%s'",
                                    o->image);
        if (o->cgroup_parent && sbx_check_cgroup_parent(o->cgroup_parent) < 0)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "cgroup parent: want an absolute, normalised path");
        if (o->network != SANDBOX_NET_NONE && o->network != SANDBOX_NET_HOST &&
            o->network != SANDBOX_NET_ALLOW)
                return bc_error_set(err, BC_BAD_SPEC, EINVAL, "network: none, host or allow");
        if ((o->network == SANDBOX_NET_ALLOW) != (o->n_net_allow > 0))
                return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                    "network: an allow-list needs rules, and only it has them");
        for (size_t i = 0; i < o->n_net_allow; i++) {
                struct netallow_rule rule;
                if (netallow_parse(o->net_allow[i], &rule) != NETALLOW_OK)
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "network.allow[%zu]: bad rule", i);
                if (o->net_allow_private && o->net_allow_private[i] && rule.wildcard)
                        return bc_error_set(err, BC_BAD_SPEC, EINVAL,
                                            "network.allow[%zu]: a wildcard cannot reach "
                                            "private addresses",
                                            i);
        }
        return 0;
}

static int build(struct argv_builder *b, const struct sandbox_opts *o, const char *helper,
                 int status_fd)
{
        int r = add(b, helper);
        if (r >= 0 && status_fd >= 0)
                r = add_fmt(b, "--status-fd", "%d", status_fd);
        /* The default is the helper's own. */
        if (r >= 0 && strcmp(sandbox_id_range_get(), SANDBOX_ID_RANGE_DEFAULT) != 0)
                r = add_fmt(b, "--uid-range", "%s", sandbox_id_range_get());
        if (r >= 0 && o->workspace)
                r = add_fmt(b, "--workspace", "%s", o->workspace);
        if (r >= 0 && o->scratch)
                r = add_fmt(b, "--scratch", "%s", o->scratch);
        for (size_t i = 0; r >= 0 && i < o->n_ro_binds; i++) {
                r = add(b, "--ro-bind");
                if (r >= 0)
                        r = add(b, o->ro_binds[i].src);
                if (r >= 0)
                        r = add(b, o->ro_binds[i].dest);
        }
        for (size_t i = 0; r >= 0 && o->env && o->env[i]; i++)
                r = add_fmt(b, "--env", "%s", o->env[i]);
        /* %.17g: the helper parses back exactly the double we were given. */
        if (r >= 0 && o->timeout_s > 0)
                r = add_fmt(b, "--timeout", "%.17g", o->timeout_s);
        if (r >= 0 && o->memory_mb > 0)
                r = add_fmt(b, "--memory-mb", "%llu", (unsigned long long)o->memory_mb);
        if (r >= 0 && o->pids > 0)
                r = add_fmt(b, "--pids", "%u", (unsigned)o->pids);
        if (r >= 0 && o->cpus > 0)
                r = add_fmt(b, "--cpus", "%.17g", o->cpus);
        if (r >= 0 && o->disk_mb > 0)
                r = add_fmt(b, "--disk-mb", "%llu", (unsigned long long)o->disk_mb);
        if (r >= 0)
                r = add_fmt(b, "--network", "%s",
                            o->network == SANDBOX_NET_HOST    ? "host"
                            : o->network == SANDBOX_NET_ALLOW ? "allow"
                                                              : "none");
        for (size_t i = 0; r >= 0 && i < o->n_net_allow; i++)
                r = add_fmt(b,
                            o->net_allow_private && o->net_allow_private[i]
                                    ? "--network-allow-private"
                                    : "--network-allow",
                            "%s", o->net_allow[i]);
        if (r >= 0 && o->n_net_allow && o->net_private)
                r = add(b, "--network-private");
        if (r >= 0 && o->cgroup_parent)
                r = add_fmt(b, "--cgroup-parent", "%s", o->cgroup_parent);
        if (r >= 0 && o->image)
                r = add_fmt(b, "--image", "%s", o->image);
        if (r >= 0)
                r = add(b, "--");
        for (size_t i = 0; r >= 0 && o->argv[i]; i++)
                r = add(b, o->argv[i]);
        return r;
}

int sandbox_argv_build(const struct sandbox_opts *o, const char *helper_path, int status_fd,
                       char ***ret_argv, struct bc_error *err)
{
        if (!o || !helper_path || !ret_argv)
                return bc_error_set(err, BC_INTERNAL, EINVAL, "sandbox_argv_build: NULL argument");
        int r = validate(o, err);
        if (r < 0)
                return r;
        struct argv_builder b = { 0 };
        r = build(&b, o, helper_path, status_fd);
        if (r < 0) {
                sandbox_argv_free(b.v);
                return bc_error_set(err, r == -E2BIG ? BC_BAD_SPEC : BC_INTERNAL, -r,
                                    "sandbox argv: %s", strerror(-r));
        }
        *ret_argv = b.v;
        return 0;
}

void sandbox_argv_free(char **argv)
{
        if (!argv)
                return;
        for (size_t i = 0; argv[i]; i++)
                free(argv[i]);
        free(argv);
}
