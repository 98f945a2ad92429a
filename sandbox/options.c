/* The helper's command line: parsing, validation and --help.  Both the
 * helper and sandbox_argv_build() validate with the same functions, so the
 * worker learns of a bad spec before it spawns anything. */
#include "sandbox/helper-internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/size.h"

static const char *const step_names[_SBX_STEP_MAX] = {
        [SBX_STEP_OPTIONS] = "options",
        [SBX_STEP_CGROUP] = "cgroup",
        [SBX_STEP_CLONE] = "clone",
        [SBX_STEP_USERNS] = "userns",
        [SBX_STEP_MOUNT] = "mount",
        [SBX_STEP_PROC] = "proc",
        [SBX_STEP_DEV] = "dev",
        [SBX_STEP_WORKSPACE] = "workspace",
        [SBX_STEP_NETWORK] = "network",
        [SBX_STEP_PIVOT_ROOT] = "pivot-root",
        [SBX_STEP_PRIVILEGES] = "privileges",
        [SBX_STEP_RLIMIT] = "rlimit",
        [SBX_STEP_SECCOMP] = "seccomp",
        [SBX_STEP_EXEC] = "exec",
        [SBX_STEP_INTERNAL] = "internal",
};

const char *sbx_step_name(enum sbx_step s)
{
        if ((int)s < 0 || s >= _SBX_STEP_MAX)
                return "internal";
        return step_names[s];
}

int sbx_step_exit_code(enum sbx_step s)
{
        switch (s) {
        case SBX_STEP_OPTIONS:
                return SBX_EXIT_USAGE;
        case SBX_STEP_CGROUP:
                return SBX_EXIT_CGROUP;
        case SBX_STEP_CLONE:
        case SBX_STEP_USERNS:
        case SBX_STEP_MOUNT:
        case SBX_STEP_PROC:
        case SBX_STEP_DEV:
        case SBX_STEP_NETWORK:
        case SBX_STEP_PIVOT_ROOT:
                return SBX_EXIT_NAMESPACE;
        case SBX_STEP_PRIVILEGES:
        case SBX_STEP_RLIMIT:
        case SBX_STEP_SECCOMP:
                return SBX_EXIT_PRIVS;
        case SBX_STEP_WORKSPACE:
                return SBX_EXIT_WORKSPACE;
        case SBX_STEP_EXEC:
                return SBX_EXIT_NOT_FOUND;
        default:
                return SBX_EXIT_INTERNAL;
        }
}

const char *helper_usage(void)
{
        return "usage: boxcar-sandbox [OPTIONS] -- COMMAND [ARGS...]\n"
               "\n"
               "Runs COMMAND isolated: new user (when not root), mount, pid, net, ipc,\n"
               "uts and cgroup namespaces; a fresh read-only root with the system's\n"
               "runtimes; seccomp; no capabilities; cgroup limits.\n"
               "\n"
               "  --workspace DIR     bind DIR read-write at /workspace (the working\n"
               "                      directory); nothing is copied.  As root, DIR's owner\n"
               "                      is mapped to --uid on that mount (idmapped): the\n"
               "                      job sees its files as its own, the host keeps them\n"
               "                      owned by DIR's owner\n"
               "  --scratch DIR       /tmp and /dev/shm are DIR/tmp and DIR/shm (made if\n"
               "                      missing); without it they are a tmpfs of --disk-mb\n"
               "                      (memory, charged to the job's memory limit)\n"
               "  --ro-bind SRC DEST  bind SRC read-only at DEST (repeatable)\n"
               "  --env K=V           set a variable; the environment is exactly these\n"
               "  --env K             K=V from this program's own environment (job secrets:\n"
               "                      no value on the command line)\n"
               "  --timeout SECONDS   kill everything after this wall-clock time\n"
               "  --memory-mb SIZE    memory limit (swap 0): MiB, or with a unit (1GiB)\n"
               "  --pids N            most processes COMMAND may have at once\n"
               "  --cpus X            CPU bandwidth, in CPUs (0.5 = half of one)\n"
               "  --disk-mb SIZE      bound of /workspace + /tmp + /dev/shm: MiB, or with a\n"
               "                      unit (1GiB).  Without --workspace: one tmpfs of that\n"
               "                      size.  With --workspace\n"
               "                      (and --scratch), DIR must lie on a filesystem of at\n"
               "                      most N MiB (the worker mounts one per job): a plain\n"
               "                      directory cannot be bounded, so the run fails (124)\n"
               "                      instead of running unbounded.  Without --disk-mb a\n"
               "                      --workspace is as large as its filesystem\n"
               "  --image DIR         run on DIR (an unpacked root filesystem, absolute) as\n"
               "                      the read-only root instead of the host's /usr, /bin,\n"
               "                      /lib* and /etc entries; its setuid bits and device\n"
               "                      nodes are inert (nosuid, nodev)\n"
               "  --network none|host|allow\n"
               "                      loopback only (default), the host's network, or\n"
               "                      loopback plus the --network-allow rules: connections\n"
               "                      the rules allow go out through this helper's proxy,\n"
               "                      nothing else leaves (README: Network allow-lists)\n"
               "  --network-allow RULE  with --network allow: name:port, *.name:port or\n"
               "                      a.b.c.d/bits:port (repeatable, at most 64).  Names\n"
               "                      resolve through the sandbox's own DNS responder (at\n"
               "                      127.0.0.1, the default resolver) and are connected by\n"
               "                      name from the host's side\n"
               "  --network-allow-private RULE  the same, and the rule may reach private\n"
               "                      addresses: a name (no wildcard) may resolve to\n"
               "                      10/8, 172.16/12, 192.168/16, 100.64/10 or fc00::/7\n"
               "                      (never loopback, link-local or the host's own); an\n"
               "                      address or CIDR reaches what it names\n"
               "  --network-private   every rule may reach loopback, private, link-local\n"
               "                      and other special addresses and the host's own (the\n"
               "                      metadata address 169.254.169.254 never): refused by\n"
               "                      default; the worker never passes it\n"
               "  --cgroup-parent DIR cgroup v2: make the sandbox's cgroup in DIR (absolute,\n"
               "                      under the cgroup2 mount) instead of in our own cgroup,\n"
               "                      which v2 forbids while it holds processes (the worker\n"
               "                      passes its delegated cgroup); ignored on cgroup v1\n"
               "  --status-fd FD      write one JSON status object to FD at the end\n"
               "  --warm --control-fd FD\n"
               "                      make the sandbox (namespaces, root, /proc, /dev,\n"
               "                      cgroup) without a command, say so on FD (a unix\n"
               "                      seqpacket socket), then take one job from FD: the\n"
               "                      worker's pool of warm sandboxes.  --network,\n"
               "                      --cgroup-parent, --image, --uid, --gid and --hostname\n"
               "                      are fixed then; the job brings the rest.  --memory-mb,\n"
               "                      --pids and --cpus limit the waiting sandbox's cgroup;\n"
               "                      a job asking other limits has its own written then\n"
               "  --hostname NAME     hostname inside (default boxcar)\n"
               "  --uid N, --gid N    identity of COMMAND inside (default 65534)\n"
               "  --uid-range FIRST-LAST\n"
               "                      as root: the host uids and gids sandboxes take, one of\n"
               "                      each per sandbox for its whole life, held by a lock\n"
               "                      under " SANDBOX_ID_LOCK_DIR "; --uid/--gid map to them in\n"
               "                      the job's own user namespace (default from\n"
               "                      BOXCAR_UID_RANGE, else " SANDBOX_ID_RANGE_DEFAULT ");\n"
               "                      refused when it overlaps an account, a group or a\n"
               "                      subordinate range of /etc.  Unprivileged, the job is\n"
               "                      the helper's own uid and gid outside\n"
               "  --help              this text\n"
               "\n"
               "Exit status: COMMAND's, or 128+N when signal N killed it (137 after a\n"
               "timeout, an OOM kill or a cancel).  The helper's own failures:\n"
               "  120 bad options            121 cgroup/limits setup failed\n"
               "  122 namespace/mount setup  123 privileges/rlimits/seccomp setup\n"
               "  124 workspace not usable   125 other internal failure\n"
               "  126 COMMAND not executable 127 COMMAND not found\n"
               "The status object (--status-fd) tells these apart from COMMAND's codes.\n"
               "SIGTERM/SIGINT/SIGHUP kill the sandbox; the status says \"cancelled\".\n";
}

int sbx_parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        char *end = NULL;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int sbx_parse_double(const char *s, double min, double max, double *ret)
{
        if (!s || !*s)
                return -EINVAL;
        errno = 0;
        char *end = NULL;
        double v = strtod(s, &end);
        if (errno || *end || !isfinite(v) || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static bool path_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Absolute and normalised: no "//", no "." or ".." components, no
 * trailing slash, so two spellings cannot name overlapping paths and
 * nothing climbs out of where a prefix check put it. */
static bool normalised(const char *path)
{
        if (path[0] != '/' || path[1] == '\0')
                return false;
        for (const char *p = path; *p; p++) {
                if (*p != '/')
                        continue;
                const char *c = p + 1;
                size_t len = strcspn(c, "/");
                if (len == 0 || (len == 1 && c[0] == '.') ||
                    (len == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
        }
        return true;
}

int sbx_check_cgroup_parent(const char *dir)
{
        return dir && strlen(dir) < 1024 && normalised(dir) ? 0 : -EINVAL;
}

int sbx_check_dest(const char *dest)
{
        if (!dest || strlen(dest) >= 256 || !normalised(dest))
                return -EINVAL;
        static const char *const reserved[] = { "/proc",      "/dev", "/sys",
                                                "/workspace", "/tmp", "/etc" };
        for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
                if (path_under(dest, reserved[i]))
                        return -EINVAL;
        return 0;
}

int sbx_check_image(const char *dir)
{
        return sbx_check_cgroup_parent(dir);
}

extern char **environ;

/* The "K=V" entry of K in this process's environment, or NULL. */
static char *env_inherited(const char *k)
{
        size_t n = strlen(k);
        for (char **e = environ; n && e && *e; e++)
                if (strncmp(*e, k, n) == 0 && (*e)[n] == '=')
                        return *e;
        return NULL;
}

bool sbx_env_entry_valid(const char *kv)
{
        const char *eq = kv ? strchr(kv, '=') : NULL;
        return eq && eq != kv && strlen(kv) < 128 * 1024;
}

void helper_config_done(struct helper_config *c)
{
        if (!c)
                return;
        free(c->ro_binds);
        free(c->env);
        free(c->net_rules);
        c->ro_binds = NULL;
        c->env = NULL;
        c->net_rules = NULL;
}

/* One option with its value(s); returns 0 or a BC_USAGE error. */
static int parse_one(struct helper_config *c, const char *opt, char **val, struct bc_error *err)
{
        uint64_t u = 0;
        if (strcmp(opt, "--workspace") == 0) {
                c->workspace = val[0];
        } else if (strcmp(opt, "--scratch") == 0) {
                c->scratch = val[0];
        } else if (strcmp(opt, "--ro-bind") == 0) {
                if (sbx_check_dest(val[1]) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--ro-bind: bad destination '%s'", val[1]);
                if (c->n_ro_binds >= 64)
                        return bc_error_set(err, BC_USAGE, E2BIG, "--ro-bind: at most 64");
                c->ro_binds[c->n_ro_binds++] = (struct sandbox_bind){ val[0], val[1] };
        } else if (strcmp(opt, "--env") == 0) {
                /* "--env K": K=V from the helper's own environment, where
                 * the worker puts a job's secrets: no value in the helper's
                 * world-readable command line. */
                char *inherited = strchr(val[0], '=') ? NULL : env_inherited(val[0]);
                if (inherited)
                        val[0] = inherited;
                if (!sbx_env_entry_valid(val[0]))
                        return bc_error_set(err, BC_USAGE, EINVAL, "--env: want K=V, got '%s'",
                                            val[0]);
                c->env[c->n_env++] = val[0];
        } else if (strcmp(opt, "--timeout") == 0) {
                if (sbx_parse_double(val[0], 0.001, 1e7, &c->timeout_s) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--timeout: bad '%s'", val[0]);
        } else if (strcmp(opt, "--memory-mb") == 0 || strcmp(opt, "--disk-mb") == 0) {
                /* MiB, or a size with its unit (common/size.c) that is whole MiB. */
                const uint64_t mib = UINT64_C(1) << 20;
                if (bc_parse_size(val[0], mib, (UINT64_C(1) << 30) * mib, &u) < 0 || u == 0 ||
                    u % mib)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s: bad '%s' (MiB, or a size such as 1GiB that is "
                                            "a whole number of MiB)",
                                            opt, val[0]);
                *(opt[2] == 'm' ? &c->memory_mb : &c->disk_mb) = u / mib;
        } else if (strcmp(opt, "--pids") == 0) {
                if (sbx_parse_u64(val[0], 1 << 22, &u) < 0 || u == 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--pids: bad '%s'", val[0]);
                c->pids = (uint32_t)u;
        } else if (strcmp(opt, "--cpus") == 0) {
                if (sbx_parse_double(val[0], 0.01, 4096, &c->cpus) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--cpus: bad '%s'", val[0]);
        } else if (strcmp(opt, "--network") == 0) {
                if (strcmp(val[0], "none") == 0)
                        c->network = SANDBOX_NET_NONE;
                else if (strcmp(val[0], "host") == 0)
                        c->network = SANDBOX_NET_HOST;
                else if (strcmp(val[0], "allow") == 0)
                        c->network = SANDBOX_NET_ALLOW;
                else
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--network: none, host or allow");
        } else if (strcmp(opt, "--network-allow") == 0 ||
                   strcmp(opt, "--network-allow-private") == 0) {
                if (c->n_net_rules >= NETALLOW_MAX_RULES)
                        return bc_error_set(err, BC_USAGE, E2BIG, "%s: at most %d in all", opt,
                                            NETALLOW_MAX_RULES);
                struct netallow_rule *r = &c->net_rules[c->n_net_rules];
                if (netallow_parse(val[0], r) != NETALLOW_OK)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s: bad rule '%s' (name:port, "
                                            "*.name:port or a.b.c.d/bits:port, not "
                                            "169.254.169.254)",
                                            opt, val[0]);
                r->private_ok = strcmp(opt, "--network-allow-private") == 0;
                /* A private target is named: a wildcard names none, and a
                 * name under it could be anything the DNS says. */
                if (r->private_ok && r->wildcard)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "%s: '%s': a wildcard cannot reach private "
                                            "addresses (name the host)",
                                            opt, val[0]);
                c->n_net_rules++;
        } else if (strcmp(opt, "--cgroup-parent") == 0) {
                if (sbx_check_cgroup_parent(val[0]) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--cgroup-parent: want an absolute, normalised path, "
                                            "got '%s'",
                                            val[0]);
                c->cgroup_parent = val[0];
        } else if (strcmp(opt, "--image") == 0) {
                if (sbx_check_image(val[0]) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL,
                                            "--image: want an absolute, normalised path, got '%s'",
                                            val[0]);
                c->image = val[0];
        } else if (strcmp(opt, "--status-fd") == 0) {
                if (sbx_parse_u64(val[0], INT_MAX, &u) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--status-fd: bad '%s'",
                                            val[0]);
                c->status_fd = (int)u;
        } else if (strcmp(opt, "--control-fd") == 0) {
                if (sbx_parse_u64(val[0], INT_MAX, &u) < 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--control-fd: bad '%s'",
                                            val[0]);
                c->control_fd = (int)u;
        } else if (strcmp(opt, "--hostname") == 0) {
                size_t n = strlen(val[0]);
                if (n == 0 || n > 64 ||
                    strspn(val[0], "abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != n)
                        return bc_error_set(err, BC_USAGE, EINVAL, "--hostname: bad '%s'", val[0]);
                c->hostname = val[0];
        } else if (strcmp(opt, "--uid-range") == 0) {
                int e = sandbox_id_range_parse(val[0], &c->id_range, err);
                if (e < 0)
                        return bc_error_prefix(err, "--uid-range");
                c->id_range_text = val[0];
        } else if (strcmp(opt, "--uid") == 0 || strcmp(opt, "--gid") == 0) {
                /* 0 is refused: the job must never be root, even in a userns. */
                if (sbx_parse_u64(val[0], 65534, &u) < 0 || u == 0)
                        return bc_error_set(err, BC_USAGE, EINVAL, "%s: 1..65534", opt);
                if (opt[2] == 'u')
                        c->uid = (uid_t)u;
                else
                        c->gid = (gid_t)u;
        } else {
                return bc_error_set(err, BC_USAGE, EINVAL, "unknown option '%s'", opt);
        }
        return 0;
}

static int option_arity(const char *opt)
{
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "--warm") == 0 ||
            strcmp(opt, "--network-private") == 0)
                return 0;
        if (strcmp(opt, "--ro-bind") == 0)
                return 2;
        return 1;
}

int helper_config_parse(int argc, char **argv, struct helper_config *ret, struct bc_error *err)
{
        struct helper_config c = {
                .status_fd = -1,
                .hostname = "boxcar",
                .uid = SBX_DEFAULT_UID,
                .gid = SBX_DEFAULT_GID,
                .control_fd = -1,
        };
        int r = 0;
        /* Every option takes at least one argv slot, so argc bounds both arrays. */
        c.ro_binds = calloc((size_t)argc + 1, sizeof(*c.ro_binds));
        c.env = calloc((size_t)argc + 1, sizeof(*c.env));
        c.net_rules = calloc(NETALLOW_MAX_RULES, sizeof(*c.net_rules));
        if (!c.ro_binds || !c.env || !c.net_rules) {
                r = bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
                goto out;
        }
        int i = 1;
        while (i < argc && strcmp(argv[i], "--") != 0) {
                const char *opt = argv[i];
                int n = option_arity(opt);
                if (n == 0) {
                        *(strcmp(opt, "--help") == 0   ? &c.help
                          : strcmp(opt, "--warm") == 0 ? &c.warm
                                                       : &c.net_private) = true;
                        i++;
                        continue;
                }
                if (i + n >= argc) {
                        r = bc_error_set(err, BC_USAGE, EINVAL, "%s needs %d argument%s", opt, n,
                                         n > 1 ? "s" : "");
                        goto out;
                }
                r = parse_one(&c, opt, &argv[i + 1], err);
                if (r < 0)
                        goto out;
                i += n + 1;
        }
        if ((c.network == SANDBOX_NET_ALLOW) != (c.n_net_rules > 0) && !c.help) {
                r = bc_error_set(err, BC_USAGE, EINVAL,
                                 "--network allow needs at least one --network-allow RULE, "
                                 "and --network-allow needs --network allow");
                goto out;
        }
        if (c.warm && !c.help) {
                if (i < argc || c.control_fd < 0) {
                        r = bc_error_set(err, BC_USAGE, EINVAL,
                                         "--warm takes no command (its job comes over "
                                         "--control-fd, which it needs)");
                        goto out;
                }
        } else if (!c.help) {
                if (i >= argc - 1) {
                        r = bc_error_set(err, BC_USAGE, EINVAL,
                                         "no command: want -- COMMAND [ARGS...]");
                        goto out;
                }
                c.argv = &argv[i + 1];
        }
        *ret = c;
        return 0;
out:
        helper_config_done(&c);
        return r;
}

int helper_config_parse_blob(char *blob, size_t len, char ***ret_argv, struct helper_config *ret,
                             struct bc_error *err)
{
        if (len == 0 || blob[len - 1] != '\0')
                return bc_error_set(err, BC_USAGE, EINVAL, "job options: not NUL-terminated");
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                n += blob[i] == '\0';
        char **argv = calloc(n + 1, sizeof(char *));
        if (!argv)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        char *p = blob;
        for (size_t i = 0; i < n; i++) {
                argv[i] = p;
                p += strlen(p) + 1;
        }
        int r = n > INT_MAX ? bc_error_set(err, BC_USAGE, E2BIG, "job options: too many")
                            : helper_config_parse((int)n, argv, ret, err);
        if (r >= 0 && (ret->warm || ret->help || ret->control_fd >= 0 || ret->status_fd >= 0)) {
                helper_config_done(ret);
                r = bc_error_set(err, BC_USAGE, EINVAL,
                                 "job options: --warm, --help, --control-fd and --status-fd "
                                 "belong to the sandbox, not to its job");
        }
        if (r < 0) {
                free(argv);
                return r;
        }
        *ret_argv = argv;
        return 0;
}

int helper_config_read_fd(int fd, char **ret_blob, char ***ret_argv, struct helper_config *ret,
                          struct bc_error *err)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return bc_error_set(err, BC_USAGE, errno, "job options: %m");
        if (st.st_size <= 0 || st.st_size > SBX_JOB_OPTIONS_MAX)
                return bc_error_set(err, BC_USAGE, E2BIG, "job options: empty or too large");
        char *blob = malloc((size_t)st.st_size);
        if (!blob)
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        ssize_t n = pread(fd, blob, (size_t)st.st_size, 0);
        int r = n == st.st_size
                        ? helper_config_parse_blob(blob, (size_t)n, ret_argv, ret, err)
                        : bc_error_set(err, BC_USAGE, n < 0 ? errno : EIO, "read job options: %s",
                                       n < 0 ? strerror(errno) : "short read");
        if (r < 0) {
                free(blob);
                return r;
        }
        *ret_blob = blob;
        return 0;
}

bool helper_config_warm_up(void)
{
        /* Adjacent literals: "\0" "600", not "\0600" (an octal escape). */
        static const char shape[] = "boxcar-sandbox\0--workspace\0/w\0--scratch\0/s\0"
                                    "--ro-bind\0/m\0/meta\0--env\0PATH=/usr/bin:/bin\0"
                                    "--env\0HOME=/workspace\0--timeout\0"
                                    "600\0--memory-mb\0"
                                    "1024\0--pids\0"
                                    "256\0--cpus\0"
                                    "1\0--disk-mb\0"
                                    "2048\0"
                                    "--network\0none\0--\0/bin/sh\0-c\0true";
        char blob[sizeof(shape)];
        memcpy(blob, shape, sizeof(shape));
        char **argv = NULL;
        struct helper_config c;
        struct bc_error err = BC_ERROR_INIT;
        int r = helper_config_parse_blob(blob, sizeof(blob), &argv, &c, &err);
        if (r == 0) {
                helper_config_done(&c);
                free(argv);
        }
        bc_error_clear(&err);
        return r == 0;
}
