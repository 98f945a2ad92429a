/* Unit tests for the cgroup v2 delegation (sandbox/cgroup-delegate.c): the
 * parsers, table-driven, and the worker's procedure run against a fake
 * cgroupfs, a temporary tree of plain files, with a fake /proc/self/cgroup.
 * Plus the --cgroup-parent plumbing (argv building, helper options). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/error.h"
#include "sandbox/cgroup-internal.h"
#include "sandbox/helper-internal.h"
#include "sandbox/sandbox.h"

/* ---- pure parts ---- */

static void test_parse_own_table(void **state)
{
        (void)state;
        static const struct {
                const char *in;
                int want_r;
                const char *want;
        } cases[] = {
                { "0::/\n", 0, "/" },
                { "0::/system.slice/boxcar.service\n", 0, "/system.slice/boxcar.service" },
                { "0::/a/b", 0, "/a/b" }, /* no trailing newline */
                { "12:memory:/x\n1:name=systemd:/x\n0::/init.scope\n", 0, "/init.scope" },
                { "4:memory:/x\n1:name=systemd:/x\n", -ENOENT, NULL }, /* pure v1 */
                { "", -ENOENT, NULL },
                { "0::relative\n", -EINVAL, NULL },
                { "0::\n", -EINVAL, NULL },
                { "0::/../outside\n", -EINVAL, NULL }, /* outside our cgroupns root */
                { "0::/a/./b\n", -EINVAL, NULL },
                { "0::/a//b\n", -EINVAL, NULL },
                { "0::/a/\n", -EINVAL, NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *got = NULL;
                int r = cg_v2_parse_own(cases[i].in, &got);
                if (r != cases[i].want_r)
                        fail_msg("case %zu (%s): r=%d, want %d", i, cases[i].in, r,
                                 cases[i].want_r);
                if (cases[i].want)
                        assert_string_equal(got, cases[i].want);
                else
                        assert_null(got);
                free(got);
        }
}

static void test_controllers_table(void **state)
{
        (void)state;
        static const struct {
                const char *list;
                unsigned bits;
                const char *enable;
        } cases[] = {
                { "cpuset cpu io memory hugetlb pids rdma misc\n", CG_CTRL_ALL,
                  "+memory +pids +cpu" },
                { "memory pids", CG_CTRL_MEMORY | CG_CTRL_PIDS, "+memory +pids" },
                { "cpuset cpuacct io", 0, "" }, /* prefixes of "cpu" are not "cpu" */
                { "", 0, "" },
                { "  cpu\tmemory\n", CG_CTRL_CPU | CG_CTRL_MEMORY, "+memory +cpu" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                unsigned bits = cg_v2_parse_controllers(cases[i].list);
                if (bits != cases[i].bits)
                        fail_msg("case %zu (%s): bits %u, want %u", i, cases[i].list, bits,
                                 cases[i].bits);
                char buf[64];
                assert_int_equal(cg_v2_format_enable(bits, buf, sizeof(buf)), 0);
                assert_string_equal(buf, cases[i].enable);
        }
        char small[8];
        assert_int_equal(cg_v2_format_enable(CG_CTRL_ALL, small, sizeof(small)), -ENOBUFS);
}

static void test_worker_parent_table(void **state)
{
        (void)state;
        static const struct {
                const char *own, *want;
        } cases[] = {
                { "/", "/" },
                { "/system.slice/boxcar.service", "/system.slice/boxcar.service" },
                { "/svc/boxcar-worker", "/svc" }, /* already in the leaf: idempotent */
                { "/boxcar-worker", "/" },
                { "/svc/boxcar-worker-2", "/svc/boxcar-worker-2" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *got = NULL;
                assert_int_equal(cg_v2_worker_parent(cases[i].own, &got), 0);
                assert_string_equal(got, cases[i].want);
                free(got);
        }
}

/* ---- the procedure, on a fake cgroupfs ---- */

struct fake {
        char dir[64];   /* the temporary directory */
        char root[128]; /* dir/cg: the fake cgroup2 mount */
        char proc[128]; /* dir/proc-self-cgroup */
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p);
}

static int fake_setup(void **state)
{
        struct fake *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        snprintf(f->dir, sizeof(f->dir), "/tmp/boxcar-cgtest.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        /* Traversable by nobody, for the not-writable case. */
        assert_int_equal(chmod(f->dir, 0755), 0);
        snprintf(f->root, sizeof(f->root), "%s/cg", f->dir);
        snprintf(f->proc, sizeof(f->proc), "%s/proc-self-cgroup", f->dir);
        assert_int_equal(mkdir(f->root, 0755), 0);
        *state = f;
        return 0;
}

static int fake_teardown(void **state)
{
        struct fake *f = *state;
        nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static void put(const char *dir, const char *name, const char *content)
{
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        FILE *fp = fopen(p, "we");
        assert_non_null(fp);
        fputs(content, fp);
        assert_int_equal(fclose(fp), 0);
}

/* The file's content, or NULL when it does not exist; caller frees. */
static char *get(const char *dir, const char *name)
{
        char p[1024], buf[1024];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        FILE *fp = fopen(p, "re");
        if (!fp)
                return NULL;
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        buf[n] = '\0';
        return strdup(buf);
}

static bool exists(const char *dir, const char *name)
{
        char p[1024];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return stat(p, &st) == 0;
}

static void mkdirs(const char *root, const char *rel, char *ret, size_t size)
{
        snprintf(ret, size, "%s", root);
        for (const char *p = rel; *p;) {
                p += strspn(p, "/");
                size_t len = strcspn(p, "/");
                if (!len)
                        break;
                size_t cur = strlen(ret);
                int n = snprintf(ret + cur, size - cur, "/%.*s", (int)len, p);
                assert_true(n > 0 && (size_t)n < size - cur);
                if (mkdir(ret, 0755) < 0)
                        assert_int_equal(errno, EEXIST);
                p += len;
        }
}

struct prep_case {
        const char *name;
        const char *proc;        /* /proc/self/cgroup; NULL: the file is missing */
        const char *cgroup;      /* the worker's cgroup C to create ("" = root) */
        const char *controllers; /* C/cgroup.controllers; NULL: missing */
        const char *subtree;     /* C/cgroup.subtree_control; NULL: missing */
        bool leaf;               /* C/boxcar-worker exists, as the kernel makes it */
        int want_r;
        const char *want_parent;  /* relative to the root; NULL: none */
        const char *want_procs;   /* C/boxcar-worker/cgroup.procs after; NULL: absent */
        const char *want_subtree; /* C/cgroup.subtree_control after */
        const char *want_msg;     /* substring of the error message */
};

static const char all_ctrls[] = "cpuset cpu io memory hugetlb pids rdma misc\n";

static const struct prep_case prep_cases[] = {
        { "systemd service with Delegate=yes", "0::/system.slice/boxcar.service\n",
          "/system.slice/boxcar.service", all_ctrls, "", true, 0, "/system.slice/boxcar.service",
          "0", "+memory +pids +cpu", NULL },
        { "root of a cgroup namespace (container)", "0::/\n", "", all_ctrls, "", true, 0, "", "0",
          "+memory +pids +cpu", NULL },
        { "hybrid /proc/self/cgroup", "4:memory:/x\n1:name=systemd:/x\n0::/svc\n", "/svc",
          all_ctrls, "", true, 0, "/svc", "0", "+memory +pids +cpu", NULL },
        { "already in the leaf (restart)", "0::/svc/boxcar-worker\n", "/svc", all_ctrls,
          "memory pids cpu\n", true, 0, "/svc", "0", "memory pids cpu\n", NULL },
        { "only some controllers delegated", "0::/svc\n", "/svc", "memory pids\n", "", true, 0,
          "/svc", "0", "+memory +pids", NULL },
        { "some already enabled", "0::/svc\n", "/svc", all_ctrls, "memory\n", true, 0, "/svc", "0",
          "+pids +cpu", NULL },
        { "no controllers: nothing to do", "0::/svc\n", "/svc", "", "", false, 0, NULL, NULL, "",
          NULL },
        { "pure v1 host", "4:memory:/x\n1:name=systemd:/x\n", "/svc", all_ctrls, "", false, 0,
          NULL, NULL, "", NULL },
        { "relative path", "0::svc\n", "/svc", all_ctrls, "", false, -EINVAL, NULL, NULL, "",
          "unusable cgroup v2 path" },
        { "outside the cgroup namespace", "0::/../svc\n", "/svc", all_ctrls, "", false, -EINVAL,
          NULL, NULL, "", "unusable cgroup v2 path" },
        { "no /proc/self/cgroup", NULL, "/svc", all_ctrls, "", false, -ENOENT, NULL, NULL, "",
          "proc-self-cgroup" },
        { "cgroup directory missing", "0::/gone\n", "/svc", all_ctrls, "", false, -ENOENT, NULL,
          NULL, "", "/gone/cgroup.controllers" },
        { "not a cgroupfs: leaf has no cgroup.procs", "0::/svc\n", "/svc", all_ctrls, "", false,
          -ENOENT, NULL, NULL, "", "boxcar-worker/cgroup.procs" },
        { "no subtree_control", "0::/svc\n", "/svc", all_ctrls, NULL, true, -ENOENT, NULL, "0",
          NULL, "/svc/cgroup.subtree_control" },
};

static void build_tree(const struct fake *f, const struct prep_case *c, char *cdir, size_t size)
{
        if (c->proc) {
                FILE *fp = fopen(f->proc, "we");
                assert_non_null(fp);
                fputs(c->proc, fp);
                fclose(fp);
        }
        mkdirs(f->root, c->cgroup, cdir, size);
        if (c->controllers)
                put(cdir, "cgroup.controllers", c->controllers);
        if (c->subtree)
                put(cdir, "cgroup.subtree_control", c->subtree);
        put(cdir, "cgroup.procs", "");
        if (c->leaf) {
                char leaf[512];
                snprintf(leaf, sizeof(leaf), "%s/boxcar-worker", cdir);
                if (mkdir(leaf, 0755) < 0)
                        assert_int_equal(errno, EEXIST);
                put(leaf, "cgroup.procs", "");
        }
}

static void check_case(const struct fake *f, const struct prep_case *c)
{
        char cdir[512];
        build_tree(f, c, cdir, sizeof(cdir));
        struct cg_worker_paths paths = { .root = f->root, .proc_cgroup = f->proc };
        char *parent = (char *)"untouched";
        struct bc_error err = BC_ERROR_INIT;
        int r = cg_prepare_worker_at(&paths, &parent, &err);
        if (r != c->want_r)
                fail_msg("%s: r=%d (%s), want %d", c->name, r, bc_error_message(&err), c->want_r);
        if (r < 0) {
                assert_string_equal(parent, "untouched"); /* ret_ only on success */
                assert_int_equal(err.code, BC_SANDBOX_SETUP);
                if (!strstr(bc_error_message(&err), c->want_msg))
                        fail_msg("%s: message '%s' lacks '%s'", c->name, bc_error_message(&err),
                                 c->want_msg);
        } else if (c->want_parent) {
                char want[512];
                snprintf(want, sizeof(want), "%s%s", f->root, c->want_parent);
                assert_non_null(parent);
                assert_string_equal(parent, want);
                free(parent);
        } else {
                assert_null(parent);
        }
        bc_error_clear(&err);
        char *procs = get(cdir, "boxcar-worker/cgroup.procs");
        if (c->want_procs) {
                assert_non_null(procs);
                assert_string_equal(procs, c->want_procs);
        } else {
                if (procs)
                        fail_msg("%s: wrote to the leaf: '%s'", c->name, procs);
                /* A leaf we made and could not use is not left behind. */
                if (!c->leaf && exists(cdir, "boxcar-worker"))
                        fail_msg("%s: left %s/boxcar-worker", c->name, cdir);
        }
        free(procs);
        char *sub = get(cdir, "cgroup.subtree_control");
        if (c->want_subtree)
                assert_string_equal(sub ? sub : "(missing)", c->want_subtree);
        free(sub);
}

static void test_prepare_worker_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(prep_cases) / sizeof(prep_cases[0]); i++) {
                void *st = NULL;
                fake_setup(&st);
                check_case(st, &prep_cases[i]);
                fake_teardown(&st);
        }
}

/* A cgroup that is not ours (no Delegate=yes): mkdir fails with EACCES,
 * which is "nothing to delegate", not an error.  Run as nobody, since
 * root passes every permission check. */
static void test_prepare_worker_not_writable(void **state)
{
        struct fake *f = *state;
        static const struct prep_case c = {
                "not writable", "0::/svc\n", "/svc", all_ctrls, "", false, 0, NULL, NULL, "", NULL
        };
        char cdir[512];
        build_tree(f, &c, cdir, sizeof(cdir));
        assert_int_equal(chmod(cdir, 0555), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (geteuid() == 0 && setresuid(65534, 65534, 65534) < 0)
                        _exit(90);
                struct cg_worker_paths paths = { .root = f->root, .proc_cgroup = f->proc };
                char *parent = (char *)"untouched";
                struct bc_error err = BC_ERROR_INIT;
                int r = cg_prepare_worker_at(&paths, &parent, &err);
                _exit(r == 0 && parent == NULL ? 0 : 91);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_int_equal(chmod(cdir, 0755), 0);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_false(exists(cdir, "boxcar-worker"));
        char *sub = get(cdir, "cgroup.subtree_control");
        assert_string_equal(sub, "");
        free(sub);
}

/* The public entry point leaves a non-cgroup2 root alone. */
static void test_prepare_worker_not_cgroup2(void **state)
{
        struct fake *f = *state;
        char *parent = (char *)"untouched";
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(sandbox_cgroup_prepare_worker(f->root, &parent, &err), 0);
        assert_null(parent);
        assert_int_equal(sandbox_cgroup_prepare_worker(f->root, NULL, &err), -EINVAL);
        bc_error_clear(&err);
}

/* ---- --cgroup-parent plumbing ---- */

static void test_argv_cgroup_parent(void **state)
{
        (void)state;
        static char *cmd[] = { "true", NULL };
        struct sandbox_opts o = { .argv = cmd, .cgroup_parent = "/sys/fs/cgroup/svc" };
        char **argv = NULL;
        struct bc_error err = BC_ERROR_INIT;
        assert_int_equal(sandbox_argv_build(&o, "H", -1, &argv, &err), 0);
        static const char *const want[] = {
                "H",  "--network", "none", "--cgroup-parent", "/sys/fs/cgroup/svc",
                "--", "true",      NULL
        };
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(argv[i], want[i]);
        int argc = 0;
        while (argv[argc])
                argc++;
        struct helper_config c;
        assert_int_equal(helper_config_parse(argc, argv, &c, &err), 0);
        assert_string_equal(c.cgroup_parent, "/sys/fs/cgroup/svc");
        helper_config_done(&c);
        sandbox_argv_free(argv);

        static const char *const bad[] = { "svc", "/sys/fs/cgroup/../etc", "/a//b", "/a/", "/" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                o.cgroup_parent = bad[i];
                argv = NULL;
                if (sandbox_argv_build(&o, "H", -1, &argv, &err) != -EINVAL)
                        fail_msg("argv accepted cgroup parent '%s'", bad[i]);
                assert_int_equal(err.code, BC_BAD_SPEC);
                bc_error_clear(&err);
                char *hv[] = { "H", "--cgroup-parent", (char *)bad[i], "--", "true", NULL };
                if (helper_config_parse(5, hv, &c, &err) != -EINVAL)
                        fail_msg("helper accepted --cgroup-parent '%s'", bad[i]);
                assert_int_equal(err.code, BC_USAGE);
                bc_error_clear(&err);
        }
}

static void test_caps_format_delegate(void **state)
{
        (void)state;
        struct sandbox_caps c = { .cgroup = SANDBOX_CGROUP_V2,
                                  .cg_memory = true,
                                  .cg_pids = true,
                                  .cg_cpu = true,
                                  .cg_writable = true,
                                  .cg_delegate = true,
                                  .backend = "namespace",
                                  .backend_reason = "" };
        snprintf(c.cg_dir, sizeof(c.cg_dir), "/sys/fs/cgroup/system.slice/boxcar.service");
        char *s = sandbox_caps_format(&c);
        assert_non_null(s);
        assert_non_null(strstr(s, "delegated leaf"));
        assert_non_null(strstr(s, "/sys/fs/cgroup/system.slice/boxcar.service/boxcar-worker"));
        free(s);
        c.cg_delegate = false;
        c.cg_writable = false;
        s = sandbox_caps_format(&c);
        assert_non_null(s);
        assert_null(strstr(s, "delegated leaf"));
        assert_non_null(strstr(s, "Delegate=yes"));
        free(s);
        c.cgroup = SANDBOX_CGROUP_V1;
        s = sandbox_caps_format(&c);
        assert_non_null(s);
        assert_null(strstr(s, "cgroup v2 use"));
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_own_table),
                cmocka_unit_test(test_controllers_table),
                cmocka_unit_test(test_worker_parent_table),
                cmocka_unit_test(test_prepare_worker_table),
                cmocka_unit_test_setup_teardown(test_prepare_worker_not_writable, fake_setup,
                                                fake_teardown),
                cmocka_unit_test_setup_teardown(test_prepare_worker_not_cgroup2, fake_setup,
                                                fake_teardown),
                cmocka_unit_test(test_argv_cgroup_parent),
                cmocka_unit_test(test_caps_format_delegate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
