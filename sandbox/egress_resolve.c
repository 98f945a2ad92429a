/* The names of --network allow, resolved on the worker's side (see
 * egress-internal.h): a cache, a per-job rate limit, and the resolver
 * processes.  A resolver parses what DNS servers send, so it holds as
 * little as it can: it is the job's (its cgroup: CPU, memory and pids
 * count against the job's limits), nobody's (EGRESS_RESOLVER_UID, no
 * capabilities, no_new_privs, the job's seccomp filter), and it only
 * resolves: the supervisor judges and connects each address. */
#include "sandbox/egress-internal.h"

#include <errno.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "sandbox/cgroup-internal.h"
#include "sandbox/seccomp-internal.h"

struct cache_entry {
        char *name; /* NULL: free */
        uint64_t expires_ms;
        struct egress_addrs addrs;
};

struct egress_resolver {
        struct sbx_cgroup *cg;
        uid_t uid;
        gid_t gid;
        struct cache_entry cache[EGRESS_CACHE_MAX];
        double tokens;
        uint64_t tokens_at_ms;
};

struct egress_resolver *egress_resolver_new(struct sbx_cgroup *cg, uid_t uid, gid_t gid)
{
        struct egress_resolver *r = calloc(1, sizeof(*r));
        if (r) {
                r->cg = cg;
                r->uid = uid;
                r->gid = gid;
                r->tokens = EGRESS_LOOKUP_BURST;
                r->tokens_at_ms = bc_mono_ms();
        }
        return r;
}

void egress_resolver_free(struct egress_resolver *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < EGRESS_CACHE_MAX; i++)
                free(r->cache[i].name);
        free(r);
}

const struct egress_addrs *egress_resolver_cached(struct egress_resolver *r, const char *name)
{
        uint64_t now = bc_mono_ms();
        for (size_t i = 0; i < EGRESS_CACHE_MAX; i++) {
                struct cache_entry *c = &r->cache[i];
                if (c->name && c->expires_ms > now && strcmp(c->name, name) == 0)
                        return &c->addrs;
        }
        return NULL;
}

void egress_resolver_store(struct egress_resolver *r, const char *name,
                           const struct egress_addrs *a)
{
        if (a->err || a->n == 0)
                return; /* failures are not kept: the rate limit bounds them */
        /* The same name, else a free or expired slot, else the one that
         * expires first. */
        uint64_t now = bc_mono_ms();
        struct cache_entry *slot = NULL;
        for (size_t i = 0; i < EGRESS_CACHE_MAX && !slot; i++)
                if (r->cache[i].name && strcmp(r->cache[i].name, name) == 0)
                        slot = &r->cache[i];
        for (size_t i = 0; i < EGRESS_CACHE_MAX && !slot; i++)
                if (!r->cache[i].name || r->cache[i].expires_ms <= now)
                        slot = &r->cache[i];
        if (!slot) {
                slot = &r->cache[0];
                for (size_t i = 1; i < EGRESS_CACHE_MAX; i++)
                        if (r->cache[i].expires_ms < slot->expires_ms)
                                slot = &r->cache[i];
        }
        char *copy = strdup(name);
        if (!copy)
                return;
        free(slot->name);
        *slot = (struct cache_entry){ .name = copy,
                                      .expires_ms = now + EGRESS_CACHE_TTL_MS,
                                      .addrs = *a };
}

static bool take_token(struct egress_resolver *r)
{
        uint64_t now = bc_mono_ms();
        r->tokens += (double)(now - r->tokens_at_ms) * EGRESS_LOOKUPS_PER_S / 1000.0;
        if (r->tokens > EGRESS_LOOKUP_BURST)
                r->tokens = EGRESS_LOOKUP_BURST;
        r->tokens_at_ms = now;
        if (r->tokens < 1)
                return false;
        r->tokens -= 1;
        return true;
}

/* ---- The resolver process ------------------------------------------------ */

/* On top of the job's filter, what a resolver never needs: running
 * programs, signalling or reading other processes (other jobs' resolvers
 * are nobody too), serving sockets.  EPERM, and any other ABI refused. */
#if defined(__x86_64__)
#define RESOLVER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RESOLVER_ARCH AUDIT_ARCH_AARCH64
#endif
static int deny_beyond_dns(void)
{
#ifdef RESOLVER_ARCH
/* The k-th (from 0) jumps over the rest and the ALLOW to the EPERM. */
#define DENY(nr, k) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), n_denied - (k), 0)
        enum { n_denied = 12 };
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RESOLVER_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                /* x32's numbers on x86_64 */
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, n_denied + 1, 0),
                DENY(SYS_execve, 0),
                DENY(SYS_execveat, 1),
                DENY(SYS_ptrace, 2),
                DENY(SYS_process_vm_readv, 3),
                DENY(SYS_process_vm_writev, 4),
                DENY(SYS_kill, 5),
                DENY(SYS_tkill, 6),
                DENY(SYS_pidfd_open, 7),
                DENY(SYS_pidfd_send_signal, 8),
                DENY(SYS_listen, 9),
                DENY(SYS_accept, 10),
                DENY(SYS_accept4, 11),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        };
#undef DENY
        _Static_assert(sizeof(f) / sizeof(f[0]) == 5 + n_denied + 2, "one DENY per denied call");
        struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
        return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? -errno : 0;
#else
        return 0; /* the job's filter alone */
#endif
}

/* uid and gid, without capabilities: the bounding set emptied while we
 * may (CAP_SETPCAP), then the ids changed, which clears the permitted,
 * effective and ambient sets.  A helper that is not root has no
 * capabilities to give up in the host's namespace and keeps its ids. */
static int drop_privileges(uid_t uid, gid_t gid)
{
        if (geteuid() == 0) {
                for (int cap = 0; cap <= 63; cap++)
                        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                                return -errno;
                if (uid == 0 || gid == 0 || setgroups(0, NULL) < 0 ||
                    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        return -errno;
        }
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = { { 0 } };
        if (syscall(SYS_capset, &h, d) < 0 ||
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        struct sbx_seccomp_prog prog;
        sbx_seccomp_builtin(&prog);
        struct bc_error err = { 0 };
        int r = sbx_seccomp_apply(&prog, &err);
        bc_error_clear(&err);
        return r < 0 ? -EPERM : deny_beyond_dns();
}

static void lookup(const char *name, struct egress_addrs *ret)
{
        /* The name as written and nothing else: with resolv.conf's search
         * list (ndots:5, as in Kubernetes, tries it first) "x.allowed.test"
         * could be answered for "x.allowed.test.corp.internal", a name no
         * rule allows.  (A trailing dot would do the same for DNS but stop
         * /etc/hosts from matching.) */
        if (res_init() == 0)
                _res.options &= ~(unsigned long)(RES_DNSRCH | RES_DEFNAMES);
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct addrinfo *res = NULL;
        ret->err = getaddrinfo(name, NULL, &hints, &res);
        for (const struct addrinfo *a = res; a && ret->n < EGRESS_ADDRS_MAX; a = a->ai_next) {
                if (a->ai_family == AF_INET && a->ai_addrlen >= sizeof(struct sockaddr_in)) {
                        ret->a[ret->n].family = AF_INET;
                        memcpy(ret->a[ret->n++].addr,
                               &((const struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
                } else if (a->ai_family == AF_INET6 &&
                           a->ai_addrlen >= sizeof(struct sockaddr_in6)) {
                        ret->a[ret->n].family = AF_INET6;
                        memcpy(ret->a[ret->n++].addr,
                               &((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr, 16);
                }
        }
        if (res)
                freeaddrinfo(res);
}

static _Noreturn void resolver_main(const struct egress_resolver *r, int sock, const int *cg_fds,
                                    size_t n_cg_fds, const char *name)
{
        /* Dies with the supervisor (a hung resolver included), and holds
         * none of its sockets: a connection the supervisor closes must
         * close now, not when this process exits. */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        prctl(PR_SET_NAME, "boxcar-resolve", 0, 0, 0);
        struct egress_addrs a = { .err = EGRESS_ERR_RESOLVER };
        /* Into the job's cgroup before anything is spent. */
        if (sbx_cgroup_self_attach(cg_fds, n_cg_fds) < 0)
                goto answer;
        if (sock > 3)
                syscall(SYS_close_range, 3u, (unsigned)sock - 1, 0u);
        syscall(SYS_close_range, (unsigned)sock + 1, ~0u, 0u);
        if (drop_privileges(r->uid, r->gid) < 0)
                goto answer;
        a.err = 0;
        lookup(name, &a);
answer:
        (void)send(sock, &a, sizeof(a), MSG_NOSIGNAL);
        _exit(0);
}

int egress_resolver_start(struct egress_resolver *r, const char *name, int *ret_sock,
                          pid_t *ret_pid)
{
        if (!take_token(r))
                return -EBUSY;
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return -errno;
        int cg_fds[4];
        int n_cg = r->cg ? sbx_cgroup_self_attach_fds(r->cg, cg_fds, 4) : 0;
        if (n_cg < 0)
                n_cg = 0;
        pid_t pid = fork();
        if (pid == 0)
                resolver_main(r, sp[1], cg_fds, (size_t)n_cg, name);
        int e = errno;
        for (int i = 0; i < n_cg; i++)
                close(cg_fds[i]);
        close(sp[1]);
        if (pid < 0) {
                close(sp[0]);
                return -e;
        }
        /* No files to move itself with: moved from here.  It may have
         * started its lookup meanwhile; the rest is charged. */
        if (n_cg == 0 && r->cg) {
                struct bc_error err = { 0 };
                (void)sbx_cgroup_attach(r->cg, pid, &err);
                bc_error_clear(&err);
        }
        *ret_sock = sp[0];
        *ret_pid = pid;
        return 0;
}

int egress_resolver_read(int sock, struct egress_addrs *ret)
{
        ssize_t n = recv(sock, ret, sizeof(*ret), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return -EAGAIN;
        if (n != (ssize_t)sizeof(*ret) || ret->n > EGRESS_ADDRS_MAX)
                return -EIO;
        return 1;
}
