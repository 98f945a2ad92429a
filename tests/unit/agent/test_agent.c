/* Unit tests for boxcar-session-agent, the real binary (built beside this
 * test in the build directory), run on the host without a sandbox: each
 * test listens on a unix socket in a temporary directory, starts the agent
 * on it (workspace: a folder of that directory), and plays the worker.
 * Commands, stdin, what a command leaves running, KILL, cwd, exec failures,
 * PATH search, what a command starts with (fds, signals, session),
 * file operations, the kept Python and Node.js interpreters, and what
 * goes when the worker hangs up. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/dynbuf.h"
#include "common/rmtree.h"
#include "common/session_wire.h"

/* How long any one awaited frame may take (valgrind runs this test too). */
#define FRAME_TIMEOUT_MS 10000

extern char **environ;
static char agent_path[PATH_MAX];

struct harness {
        char dir[PATH_MAX]; /* the temporary directory, real path */
        char ws[PATH_MAX];  /* dir/ws: the agent's workspace */
        int fd;             /* the accepted connection */
        pid_t agent;
        struct sw_stream in;
};

/* out = a/b, which must fit. */
static void join(char *out, size_t size, const char *a, const char *b)
{
        int n = snprintf(out, size, "%s/%s", a, b);
        assert_true(n > 0 && (size_t)n < size);
}

/* ---- the worker's end ------------------------------------------------------ */

static void send_all(struct harness *h, const struct dynbuf *b)
{
        size_t off = 0;
        while (off < b->len) {
                ssize_t n = send(h->fd, b->data + off, b->len - off, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        fail_msg("send to the agent: %s", strerror(errno));
                off += (size_t)n;
        }
}

struct frame {
        struct sw_header h;
        char *p; /* a copy of the payload */
};

/* The next frame from the agent, waiting at most FRAME_TIMEOUT_MS. */
static struct frame next_frame(struct harness *h)
{
        for (;;) {
                struct frame f;
                const char *payload;
                int r = sw_stream_take(&h->in, &f.h, &payload);
                assert_true(r >= 0);
                if (r == 1) {
                        f.p = malloc(f.h.len + 1);
                        memcpy(f.p, payload, f.h.len);
                        f.p[f.h.len] = '\0';
                        return f;
                }
                struct pollfd pfd = { .fd = h->fd, .events = POLLIN };
                int n = poll(&pfd, 1, FRAME_TIMEOUT_MS);
                if (n == 0)
                        fail_msg("no frame from the agent in %d ms", FRAME_TIMEOUT_MS);
                char buf[65536];
                ssize_t got = read(h->fd, buf, sizeof(buf));
                if (got <= 0)
                        fail_msg("the agent hung up (%s)", got < 0 ? strerror(errno) : "EOF");
                assert_int_equal(sw_stream_feed(&h->in, buf, (size_t)got), 0);
        }
}

/* What one job sent: everything of its seq up to its last frame. */
struct job {
        uint32_t seq;
        int32_t pid;          /* SA_STARTED's, 0 if none came */
        struct dynbuf out[3]; /* [1] stdout, [2] stderr */
        struct sw_exit exit;
        struct frame files[64]; /* SA_FILE frames, in order */
        struct sw_file_result res[64];
        uint32_t n_files;
        bool files_done;
        struct frame done_frame; /* SA_CODE_DONE's */
        struct sw_code_done done;
};

static void job_init(struct job *j, uint32_t seq)
{
        memset(j, 0, sizeof(*j));
        j->seq = seq;
        for (int i = 0; i < 3; i++)
                dynbuf_init(&j->out[i], 16u << 20);
}

static void job_done(struct job *j)
{
        for (int i = 0; i < 3; i++)
                dynbuf_done(&j->out[i]);
        for (uint32_t i = 0; i < j->n_files; i++) {
                free(j->res[i].entries);
                free(j->files[i].p);
        }
        free(j->done_frame.p);
}

/* Reads j's frames until one of type until: any frame of another job is a
 * failure (a command's leftovers must never speak as a later job). */
static void wait_for(struct harness *h, struct job *j, enum sw_type until)
{
        for (;;) {
                struct frame f = next_frame(h);
                if (f.h.seq != j->seq)
                        fail_msg("a frame '%c' of job %u while job %u runs", f.h.type, f.h.seq,
                                 j->seq);
                uint8_t type = f.h.type;
                switch (type) {
                case SA_STARTED:
                        assert_int_equal(f.h.len, 4);
                        memcpy(&j->pid, f.p, 4);
                        break;
                case SA_OUTPUT:
                        assert_true(f.h.len >= 1 && f.h.len <= 1 + SW_OUTPUT_CHUNK);
                        assert_true(f.p[0] == 1 || f.p[0] == 2);
                        assert_int_equal(dynbuf_add(&j->out[(int)f.p[0]], f.p + 1, f.h.len - 1),
                                         0);
                        break;
                case SA_EXIT:
                        assert_int_equal(sw_decode_exit(f.p, f.h.len, &j->exit), 0);
                        break;
                case SA_FILE:
                        assert_true(j->n_files < 64);
                        assert_int_equal(sw_decode_file_result(f.p, f.h.len, &j->res[j->n_files]),
                                         0);
                        assert_int_equal(j->res[j->n_files].index, j->n_files);
                        j->files[j->n_files++] = f;
                        f.p = NULL;
                        break;
                case SA_FILES_DONE:
                        assert_int_equal(f.h.len, 0);
                        j->files_done = true;
                        break;
                case SA_CODE_DONE:
                        assert_int_equal(sw_decode_code_done(f.p, f.h.len, &j->done), 0);
                        j->done_frame = f;
                        f.p = NULL;
                        break;
                default:
                        fail_msg("an unknown frame type '%c'", f.h.type);
                }
                free(f.p);
                if (type == until)
                        return;
        }
}

static void send_run_env(struct harness *h, uint32_t seq, char **argv, const char *in,
                         size_t in_len, const char *cwd, char **env)
{
        struct dynbuf b;
        dynbuf_init(&b, SW_PAYLOAD_MAX + 64);
        struct sw_run r = { .argv = argv,
                            .env = env,
                            .cwd = cwd,
                            .stdin_data = in,
                            .stdin_len = (uint32_t)in_len };
        assert_int_equal(sw_encode_run(&b, seq, &r), 0);
        send_all(h, &b);
        dynbuf_done(&b);
}

static void send_run(struct harness *h, uint32_t seq, char **argv, const char *in, size_t in_len,
                     const char *cwd)
{
        send_run_env(h, seq, argv, in, in_len, cwd, environ);
}

static void send_kill(struct harness *h, uint32_t seq)
{
        struct dynbuf b;
        dynbuf_init(&b, 64);
        size_t start;
        assert_int_equal(sw_frame_begin(&b, SW_KILL, seq, &start), 0);
        assert_int_equal(sw_frame_end(&b, start), 0);
        send_all(h, &b);
        dynbuf_done(&b);
}

/* Runs a command with env to its SA_EXIT. */
static void run_env(struct harness *h, struct job *j, uint32_t seq, char **argv, char **env)
{
        job_init(j, seq);
        send_run_env(h, seq, argv, NULL, 0, h->ws, env);
        wait_for(h, j, SA_EXIT);
        assert_true(j->pid > 0);
}

/* Runs a command to its SA_EXIT. */
static void run(struct harness *h, struct job *j, uint32_t seq, char **argv, const char *cwd)
{
        job_init(j, seq);
        send_run(h, seq, argv, NULL, 0, cwd ? cwd : h->ws);
        wait_for(h, j, SA_EXIT);
        assert_true(j->pid > 0);
}

static void sh(struct harness *h, struct job *j, uint32_t seq, const char *script)
{
        char *argv[] = { "sh", "-c", (char *)script, NULL };
        run(h, j, seq, argv, NULL);
}

static void code_env(struct harness *h, struct job *j, uint32_t seq, const char *lang,
                     const char *source, const char *args, char **env)
{
        job_init(j, seq);
        struct dynbuf b;
        dynbuf_init(&b, SW_PAYLOAD_MAX + 64);
        struct sw_code c = { .language = lang,
                             .source = source,
                             .arguments = args,
                             .env = env,
                             .cwd = h->ws };
        assert_int_equal(sw_encode_code(&b, seq, &c), 0);
        send_all(h, &b);
        dynbuf_done(&b);
        wait_for(h, j, SA_CODE_DONE);
}

static void code(struct harness *h, struct job *j, uint32_t seq, const char *lang,
                 const char *source, const char *args)
{
        code_env(h, j, seq, lang, source, args, environ);
}

static void files(struct harness *h, struct job *j, uint32_t seq, uint32_t max_read,
                  const struct sw_file_req *ops, uint32_t n)
{
        job_init(j, seq);
        struct dynbuf b;
        dynbuf_init(&b, SW_PAYLOAD_MAX + 64);
        struct sw_files f = { .max_read = max_read, .n = n, .ops = (struct sw_file_req *)ops };
        assert_int_equal(sw_encode_files(&b, seq, &f), 0);
        send_all(h, &b);
        dynbuf_done(&b);
        wait_for(h, j, SA_FILES_DONE);
        assert_int_equal(j->n_files, n);
}

/* ---- setup: the socket, the agent, its hello ----------------------------- */

/* Starts the agent as its starter would, with what no job may inherit
 * from it: an fd that is not close-on-exec (test_no_fd_leaks), signals
 * ignored and blocked (test_child_state).  std_closed: with fds 0, 1 and 2
 * closed, so the agent's own fds and its commands' pipes take those
 * numbers (test_std_closed). */
static int start(void **state, bool std_closed)
{
        struct harness *h = calloc(1, sizeof(*h));
        /* tmpfs when there is one: the listing test makes 10,005 files,
         * seconds on some disks. */
        char tmpl[64];
        snprintf(tmpl, sizeof(tmpl), "%s/boxcar-agent-test.XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        assert_non_null(mkdtemp(tmpl));
        assert_non_null(realpath(tmpl, h->dir));
        join(h->ws, sizeof(h->ws), h->dir, "ws");
        assert_int_equal(mkdir(h->ws, 0755), 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        join(sa.sun_path, sizeof(sa.sun_path), h->dir, "agent.sock");
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(lfd >= 0);
        assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(lfd, 1), 0);
        h->agent = fork();
        assert_true(h->agent >= 0);
        if (h->agent == 0) {
                int null = open("/dev/null", O_RDONLY);
                if (null < 0 || dup2(null, 20) < 0)
                        _exit(126);
                signal(SIGINT, SIG_IGN);
                signal(SIGHUP, SIG_IGN);
                signal(SIGUSR1, SIG_IGN);
                sigset_t block;
                sigemptyset(&block);
                sigaddset(&block, SIGUSR2);
                sigaddset(&block, SIGTERM);
                sigprocmask(SIG_BLOCK, &block, NULL);
                /* 32 and 33 too, which glibc's signal() refuses (GNU make
                 * leaves them ignored); the kernel's struct sigaction
                 * starts with the handler here (not on MIPS). */
                const unsigned long ign[4] = { (unsigned long)SIG_IGN };
                for (int sig = 32; sig <= 33; sig++)
                        if (syscall(SYS_rt_sigaction, sig, ign, NULL, 8) < 0)
                                _exit(126);
                if (std_closed)
                        close_range(0, 2, 0);
                execl(agent_path, "boxcar-session-agent", sa.sun_path, h->ws, (char *)NULL);
                _exit(127);
        }
        struct pollfd pfd = { .fd = lfd, .events = POLLIN };
        if (poll(&pfd, 1, FRAME_TIMEOUT_MS) != 1)
                fail_msg("%s did not connect", agent_path);
        h->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(h->fd >= 0);
        close(lfd);
        sw_stream_init(&h->in);
        struct frame f = next_frame(h);
        assert_int_equal(f.h.type, SA_HELLO);
        assert_int_equal(f.h.seq, 0);
        assert_int_equal(f.h.len, strlen(SW_VERSION) + 1);
        assert_string_equal(f.p, SW_VERSION);
        free(f.p);
        *state = h;
        return 0;
}

static int setup(void **state)
{
        return start(state, false);
}

static int setup_std_closed(void **state)
{
        return start(state, true);
}

/* The worker hangs up: the agent must exit 0, promptly. */
static int hang_up(struct harness *h)
{
        if (h->fd >= 0)
                close(h->fd);
        h->fd = -1;
        for (int i = 0; i < FRAME_TIMEOUT_MS / 10; i++) {
                int st;
                pid_t p = waitpid(h->agent, &st, WNOHANG);
                if (p == h->agent)
                        return st;
                usleep(10000);
        }
        kill(h->agent, SIGKILL);
        waitpid(h->agent, NULL, 0);
        return -1;
}

static int teardown(void **state)
{
        struct harness *h = *state;
        int st = h->agent ? hang_up(h) : 0;
        sw_stream_done(&h->in);
        fs_rm_rf(h->dir);
        free(h);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail_msg("the agent did not exit 0 when the worker hung up (status %#x)", st);
        return 0;
}

/* ---- helpers -------------------------------------------------------------- */

/* pid has ended (gone, or a zombie of whoever adopted it). */
static bool gone(pid_t pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return true;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        return !paren || paren[2] == 'Z' || paren[2] == 'X';
}

static bool gone_within(pid_t pid, int ms)
{
        for (int i = 0; i < ms / 10; i++) {
                if (gone(pid))
                        return true;
                usleep(10000);
        }
        return gone(pid);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static void assert_exit_code(const struct job *j, int code)
{
        if (!WIFEXITED(j->exit.wstatus) || WEXITSTATUS(j->exit.wstatus) != code)
                fail_msg("job %u: wstatus %#x, want exit %d (stderr: %s)", j->seq, j->exit.wstatus,
                         code, j->out[2].data ? j->out[2].data : "");
}

static void assert_code(const struct job *j, uint8_t status, const char *value);
static void assert_contains(const char *s, const char *part);

/* ---- commands ---------------------------------------------------------------- */

static void test_run_output_and_exit(void **state)
{
        struct harness *h = *state;
        struct job j;
        sh(h, &j, 1, "echo hi; echo err >&2; exit 3");
        assert_string_equal(j.out[1].data, "hi\n");
        assert_string_equal(j.out[2].data, "err\n");
        assert_exit_code(&j, 3);
        assert_int_equal(j.exit.exec_errno, 0);
        assert_true(j.exit.max_rss_kb > 0);
        job_done(&j);
        /* More than one frame's worth: chunks of at most SW_OUTPUT_CHUNK
         * (wait_for checks each), all of it, in order. */
        sh(h, &j, 2, "head -c 300000 /dev/zero | tr '\\0' x");
        assert_exit_code(&j, 0);
        assert_int_equal(j.out[1].len, 300000);
        assert_int_equal(strspn(j.out[1].data, "x"), 300000);
        job_done(&j);
}

/* A command gets its three fds and nothing of the agent's (its socket,
 * pipes, signalfd, what it inherited). */
static void test_no_fd_leaks(void **state)
{
        struct harness *h = *state;
        struct job j;
        char *argv[] = { "ls", "/proc/self/fd", NULL };
        run(h, &j, 1, argv, NULL);
        assert_exit_code(&j, 0);
        /* 3: the directory ls reads. */
        assert_string_equal(j.out[1].data, "0\n1\n2\n3\n");
        job_done(&j);
        code(h, &j, 2, "python",
             "import os, subprocess\n"
             "def main():\n"
             "    return subprocess.run(['ls', '/proc/self/fd'], capture_output=True,\n"
             "                          close_fds=False, text=True).stdout.split()\n",
             "{}");
        assert_code(&j, SW_CODE_OK, "[\"0\", \"1\", \"2\", \"3\"]");
        job_done(&j);
}

static void test_run_stdin(void **state)
{
        struct harness *h = *state;
        /* More than a pipe holds, NUL bytes included: the agent feeds it
         * while it relays what cat writes back. */
        size_t len = 300000;
        char *in = malloc(len);
        for (size_t i = 0; i < len; i++)
                in[i] = (char)(i * 7 % 251);
        struct job j;
        job_init(&j, 1);
        char *argv[] = { "cat", NULL };
        send_run(h, 1, argv, in, len, h->ws);
        wait_for(h, &j, SA_EXIT);
        assert_exit_code(&j, 0);
        assert_int_equal(j.out[1].len, len);
        assert_memory_equal(j.out[1].data, in, len);
        job_done(&j);
        free(in);
        /* No stdin: EOF at once. */
        job_init(&j, 2);
        send_run(h, 2, argv, NULL, 0, h->ws);
        wait_for(h, &j, SA_EXIT);
        assert_exit_code(&j, 0);
        assert_int_equal(j.out[1].len, 0);
        job_done(&j);
        /* A command that never reads its stdin still ends. */
        job_init(&j, 3);
        char *t[] = { "true", NULL };
        send_run(h, 3, t, "unread", 6, h->ws);
        wait_for(h, &j, SA_EXIT);
        assert_exit_code(&j, 0);
        job_done(&j);
}

/* What a command leaves running holds its pipes: SA_EXIT does not wait
 * for it, its later output is never a later job's, and it can still write
 * (no SIGPIPE) after its job has ended. */
static void test_run_leftovers(void **state)
{
        struct harness *h = *state;
        struct job j;
        char *script;
        assert_true(asprintf(&script,
                             "setsid sleep 100 & echo $!; "
                             "(sleep 0.3; echo late; echo late >&2; echo wrote > '%s/late-ok') &",
                             h->dir) > 0);
        double t0 = now_s();
        sh(h, &j, 1, script);
        free(script);
        assert_true(now_s() - t0 < 3.0);
        assert_exit_code(&j, 0);
        pid_t bg = (pid_t)atoi(j.out[1].data);
        assert_true(bg > 0);
        job_done(&j);
        sh(h, &j, 2, "sleep 0.6; echo next");
        assert_string_equal(j.out[1].data, "next\n");
        job_done(&j);
        char ok[PATH_MAX];
        join(ok, sizeof(ok), h->dir, "late-ok");
        struct stat st;
        assert_int_equal(stat(ok, &st), 0);
        /* A session of its own: nothing of the agent's ended it. */
        assert_false(gone(bg));
        kill(bg, SIGKILL);
}

static void test_kill(void **state)
{
        struct harness *h = *state;
        struct job j;
        job_init(&j, 1);
        char *argv[] = { "sh", "-c", "sleep 100 & echo $!; wait", NULL };
        send_run(h, 1, argv, NULL, 0, h->ws);
        wait_for(h, &j, SA_OUTPUT);
        pid_t child = (pid_t)atoi(j.out[1].data);
        assert_true(child > 0);
        double t0 = now_s();
        send_kill(h, 1);
        wait_for(h, &j, SA_EXIT);
        assert_true(now_s() - t0 < 3.0);
        assert_true(WIFSIGNALED(j.exit.wstatus));
        assert_int_equal(WTERMSIG(j.exit.wstatus), SIGKILL);
        /* The whole group went. */
        assert_true(gone_within(child, 3000));
        job_done(&j);
        /* A KILL of a job that is over, or never was, changes nothing. */
        send_kill(h, 1);
        send_kill(h, 99);
        sh(h, &j, 2, "echo alive");
        assert_string_equal(j.out[1].data, "alive\n");
        job_done(&j);
}

static void test_cwd(void **state)
{
        struct harness *h = *state;
        char sub[PATH_MAX], want[PATH_MAX + 1];
        join(sub, sizeof(sub), h->ws, "sub");
        assert_int_equal(mkdir(sub, 0755), 0);
        snprintf(want, sizeof(want), "%s\n", sub);
        struct job j;
        char *pwd[] = { "pwd", NULL };
        run(h, &j, 1, pwd, sub);
        assert_string_equal(j.out[1].data, want);
        job_done(&j);
        /* A cwd that is not there: the command does not start. */
        char missing[PATH_MAX], msg[PATH_MAX + 64];
        join(missing, sizeof(missing), h->ws, "missing");
        run(h, &j, 2, pwd, missing);
        assert_exit_code(&j, 127);
        assert_int_equal(j.exit.exec_errno, ENOENT);
        assert_true(snprintf(msg, sizeof(msg), "chdir %s: No such file or directory\n", missing) >
                    0);
        assert_string_equal(j.out[2].data, msg);
        assert_int_equal(j.out[1].len, 0);
        job_done(&j);
}

static void test_exec_failure(void **state)
{
        struct harness *h = *state;
        struct job j;
        char *missing[] = { "no-such-command-boxcar", NULL };
        run(h, &j, 1, missing, NULL);
        assert_exit_code(&j, 127);
        assert_int_equal(j.exit.exec_errno, ENOENT);
        assert_string_equal(j.out[2].data,
                            "exec no-such-command-boxcar: No such file or directory\n");
        job_done(&j);
        /* Not executable: 126, EACCES. */
        char path[PATH_MAX];
        join(path, sizeof(path), h->ws, "notexec");
        write_file(path, "#!/bin/sh\n");
        char *notexec[] = { "./notexec", NULL };
        run(h, &j, 2, notexec, NULL);
        assert_exit_code(&j, 126);
        assert_int_equal(j.exit.exec_errno, EACCES);
        assert_string_equal(j.out[2].data, "exec ./notexec: Permission denied\n");
        job_done(&j);
}

/* A name without '/' is looked up in the request's PATH, not the agent's:
 * an entry where the file is not executable is passed over, and EACCES
 * is what a failure says only when no entry has it executable. */
static void test_path_search(void **state)
{
        struct harness *h = *state;
        char noexec_dir[PATH_MAX], exec_dir[PATH_MAX], tool[PATH_MAX];
        join(noexec_dir, sizeof(noexec_dir), h->dir, "noexec");
        join(exec_dir, sizeof(exec_dir), h->dir, "bin");
        assert_int_equal(mkdir(noexec_dir, 0755), 0);
        assert_int_equal(mkdir(exec_dir, 0755), 0);
        join(tool, sizeof(tool), noexec_dir, "boxcar-tool");
        write_file(tool, "#!/bin/sh\necho noexec\n");
        join(tool, sizeof(tool), exec_dir, "boxcar-tool");
        write_file(tool, "#!/bin/sh\necho found\n");
        assert_int_equal(chmod(tool, 0755), 0);
        char both[3 * PATH_MAX], first[PATH_MAX + 8];
        snprintf(both, sizeof(both), "PATH=/nonexistent-boxcar:%s:%s", noexec_dir, exec_dir);
        snprintf(first, sizeof(first), "PATH=%s", noexec_dir);
        char *argv[] = { "boxcar-tool", NULL };
        struct job j;
        char *env_both[] = { both, NULL };
        run_env(h, &j, 1, argv, env_both);
        assert_exit_code(&j, 0);
        assert_string_equal(j.out[1].data, "found\n");
        job_done(&j);
        char *env_first[] = { first, NULL };
        run_env(h, &j, 2, argv, env_first);
        assert_exit_code(&j, 126);
        assert_int_equal(j.exit.exec_errno, EACCES);
        assert_string_equal(j.out[2].data, "exec boxcar-tool: Permission denied\n");
        job_done(&j);
        /* The agent's own PATH has true; the request's does not. */
        char *t[] = { "true", NULL };
        char *env_none[] = { "PATH=/nonexistent-boxcar", NULL };
        run_env(h, &j, 3, t, env_none);
        assert_exit_code(&j, 127);
        assert_int_equal(j.exit.exec_errno, ENOENT);
        job_done(&j);
        /* No PATH at all: /usr/local/bin:/usr/bin:/bin. */
        char *env_empty[] = { NULL };
        run_env(h, &j, 4, t, env_empty);
        assert_exit_code(&j, 0);
        job_done(&j);
}

/* The process-wide state a command starts with: nothing blocked or
 * ignored, whatever the agent's starter left (setup) and the agent itself
 * does (SIGCHLD blocked, SIGPIPE ignored); a session and process group of
 * its own. */
static void test_child_state(void **state)
{
        struct harness *h = *state;
        struct job j;
        char *status[] = { "cat", "/proc/self/status", NULL };
        run(h, &j, 1, status, NULL);
        assert_exit_code(&j, 0);
        assert_contains(j.out[1].data, "\nSigBlk:\t0000000000000000\n");
        assert_contains(j.out[1].data, "\nSigIgn:\t0000000000000000\n");
        job_done(&j);
        char *stat[] = { "cat", "/proc/self/stat", NULL };
        run(h, &j, 2, stat, NULL);
        assert_exit_code(&j, 0);
        /* pid (comm) state ppid pgrp session … */
        const char *paren = strrchr(j.out[1].data, ')');
        assert_non_null(paren);
        int pgrp = 0, sid = 0;
        assert_int_equal(sscanf(paren + 1, " %*c %*d %d %d", &pgrp, &sid), 2);
        assert_int_equal(pgrp, j.pid);
        assert_int_equal(sid, j.pid);
        job_done(&j);
}

/* An agent started with fds 0-2 closed: its own fds and the pipes it makes
 * take those numbers, and a command or interpreter must still get each
 * pipe at its place (none overwritten by another's dup2) and nothing
 * else. */
static void test_std_closed(void **state)
{
        struct harness *h = *state;
        struct job j;
        job_init(&j, 1);
        char *cat[] = { "cat", NULL };
        send_run(h, 1, cat, "in", 2, h->ws);
        wait_for(h, &j, SA_EXIT);
        assert_exit_code(&j, 0);
        assert_string_equal(j.out[1].data, "in");
        job_done(&j);
        sh(h, &j, 2, "ls /proc/self/fd; echo err >&2");
        assert_exit_code(&j, 0);
        /* 3: the directory ls reads. */
        assert_string_equal(j.out[1].data, "0\n1\n2\n3\n");
        assert_string_equal(j.out[2].data, "err\n");
        job_done(&j);
        code(h, &j, 3, "python",
             "import subprocess, sys\n"
             "def main():\n"
             "    print('out'); print('err', file=sys.stderr)\n"
             "    return subprocess.run(['ls', '/proc/self/fd'], capture_output=True,\n"
             "                          close_fds=False, text=True).stdout.split()\n",
             "{}");
        assert_code(&j, SW_CODE_OK, "[\"0\", \"1\", \"2\", \"3\"]");
        assert_string_equal(j.out[1].data, "out\n");
        assert_string_equal(j.out[2].data, "err\n");
        job_done(&j);
}

/* ---- file operations ---------------------------------------------------------- */

static void assert_entry(const struct sw_file_result *r, uint32_t i, char type, const char *name)
{
        assert_true(i < r->n_entries);
        assert_int_equal(r->entries[i].type, type);
        assert_string_equal(r->entries[i].name, name);
}

static void assert_err(const struct job *j, uint32_t i, int err)
{
        if (j->res[i].err != err)
                fail_msg("file operation %u: err %d (%s), want %d (%s)", i, j->res[i].err,
                         strerror(j->res[i].err), err, strerror(err));
}

static void test_files(void **state)
{
        struct harness *h = *state;
        char outside[PATH_MAX], outdir[PATH_MAX], link[PATH_MAX], dirlink[PATH_MAX];
        char keep[PATH_MAX + 8], abs_c[PATH_MAX];
        /* Outside the workspace: what symlinks in it point to. */
        join(outside, sizeof(outside), h->dir, "outside.txt");
        write_file(outside, "outside");
        join(outdir, sizeof(outdir), h->dir, "outdir");
        assert_int_equal(mkdir(outdir, 0755), 0);
        join(keep, sizeof(keep), outdir, "keep");
        write_file(keep, "kept");
        join(link, sizeof(link), h->ws, "link");
        assert_int_equal(symlink(outside, link), 0);
        join(dirlink, sizeof(dirlink), h->ws, "dirlink");
        assert_int_equal(symlink(outdir, dirlink), 0);
        join(abs_c, sizeof(abs_c), h->ws, "a/b/c.txt");

        const struct sw_file_req ops[] = {
                /* 0 */ { SW_FILE_WRITE, SW_FILE_PARENTS, "a/b/c.txt", "", "hello world", 11 },
                /* 1 */ { SW_FILE_READ, 0, "a/b/c.txt", "", NULL, 0 },
                /* 2 */ { SW_FILE_MKDIR, 0, "a/b/d", "", NULL, 0 },
                /* 3 */ { SW_FILE_LIST, 0, "a/b/", "", NULL, 0 },
                /* 4 */ { SW_FILE_STAT, 0, abs_c, "", NULL, 0 },
                /* 5 */ { SW_FILE_MOVE, 0, "a/b/c.txt", "a/moved.txt", NULL, 0 },
                /* 6 */ { SW_FILE_STAT, 0, "a/b/c.txt", "", NULL, 0 },
                /* 7 */ { SW_FILE_READ, 0, "a", "", NULL, 0 },
                /* 8 */ { SW_FILE_REMOVE, 0, "a", "", NULL, 0 },
                /* 9 */ { SW_FILE_WRITE, 0, "x/y.txt", "", "y", 1 },
                /* 10 */ { SW_FILE_MKDIR, SW_FILE_PARENTS, "m/n", "", NULL, 0 },
                /* 11 */ { SW_FILE_MKDIR, 0, "m", "", NULL, 0 },
                /* 12 */ { SW_FILE_STAT, 0, "link", "", NULL, 0 },
                /* 13 */ { SW_FILE_READ, 0, "link", "", NULL, 0 },
                /* 14 */ { SW_FILE_WRITE, 0, "link", "", "clobbered", 9 },
                /* 15 */ { SW_FILE_REMOVE, 0, "link", "", NULL, 0 },
                /* 16 */ { SW_FILE_REMOVE, SW_FILE_RECURSIVE, "dirlink/", "", NULL, 0 },
                /* 17 */ { SW_FILE_REMOVE, SW_FILE_RECURSIVE, "a", "", NULL, 0 },
                /* 18 */ { SW_FILE_REMOVE, 0, "a", "", NULL, 0 },
                /* 19 */ { SW_FILE_MKDIR, SW_FILE_PARENTS, "m", "", NULL, 0 },
                /* 20 */ { SW_FILE_WRITE, 0, "m/n", "", "x", 1 },
                /* 21 */ { SW_FILE_LIST, 0, ".", "", NULL, 0 },
                /* 22 */ { SW_FILE_STAT, 0, "", "", NULL, 0 },
        };
        struct job j;
        files(h, &j, 1, 1 << 20, ops, sizeof(ops) / sizeof(ops[0]));
        assert_true(j.files_done);
        for (uint32_t i = 0; i < j.n_files; i++)
                print_message("# op %u: err %d (%s)\n", i, j.res[i].err, strerror(j.res[i].err));
        const struct sw_file_result *r = j.res;
        assert_err(&j, 0, 0);
        assert_entry(&r[0], 0, 'f', "a/b/c.txt");
        assert_int_equal(r[0].entries[0].size, 11);
        assert_int_equal(r[0].entries[0].mode, 0644);
        assert_err(&j, 1, 0);
        assert_int_equal(r[1].data_len, 11);
        assert_memory_equal(r[1].data, "hello world", 11);
        assert_int_equal(r[1].size, 11);
        assert_false(r[1].truncated);
        assert_err(&j, 2, 0);
        assert_entry(&r[2], 0, 'd', "a/b/d");
        assert_int_equal(r[2].entries[0].mode, 0755);
        assert_err(&j, 3, 0);
        assert_int_equal(r[3].n_entries, 2);
        assert_entry(&r[3], 0, 'f', "c.txt");
        assert_entry(&r[3], 1, 'd', "d");
        assert_false(r[3].truncated);
        assert_err(&j, 4, 0);
        assert_entry(&r[4], 0, 'f', abs_c);
        assert_true(r[4].entries[0].mtime_ns > 0);
        assert_err(&j, 5, 0);
        assert_err(&j, 6, ENOENT);
        assert_int_equal(r[6].n_entries, 0);
        assert_err(&j, 7, EISDIR);
        assert_err(&j, 8, ENOTEMPTY);
        assert_err(&j, 9, ENOENT);
        assert_err(&j, 10, 0);
        assert_entry(&r[10], 0, 'd', "m/n");
        assert_err(&j, 11, EEXIST);
        assert_err(&j, 12, 0);
        assert_entry(&r[12], 0, 'l', "link");
        assert_err(&j, 13, 0);
        assert_int_equal(r[13].data_len, 7);
        assert_memory_equal(r[13].data, "outside", 7);
        assert_err(&j, 14, ELOOP); /* never written through a symlink */
        assert_err(&j, 15, 0);
        assert_err(&j, 16, 0);
        assert_err(&j, 17, 0);
        assert_err(&j, 18, ENOENT);
        assert_err(&j, 19, 0); /* mkdir -p of what is there */
        assert_err(&j, 20, EISDIR);
        assert_err(&j, 21, 0);
        assert_int_equal(r[21].n_entries, 2);
        assert_entry(&r[21], 0, 'd', "m");
        assert_entry(&r[21], 1, 'f', "notexec");
        assert_err(&j, 22, EINVAL);
        job_done(&j);
        /* The links went, never what they named. */
        char buf[16] = { 0 };
        FILE *f = fopen(outside, "re");
        assert_non_null(f);
        assert_int_equal(fread(buf, 1, sizeof(buf) - 1, f), 7);
        fclose(f);
        assert_string_equal(buf, "outside");
        struct stat st;
        assert_int_equal(stat(keep, &st), 0);
        assert_int_equal(lstat(link, &st), -1);
        assert_int_equal(lstat(dirlink, &st), -1);
}

/* ops[21] lists "notexec": made here so the listing has a file too. */
static int setup_files(void **state)
{
        int r = setup(state);
        struct harness *h = *state;
        char p[PATH_MAX + 16];
        join(p, sizeof(p), h->ws, "notexec");
        write_file(p, "");
        return r;
}

static void test_files_read_limit(void **state)
{
        struct harness *h = *state;
        const struct sw_file_req ops[] = {
                { SW_FILE_WRITE, 0, "t.txt", "", "hello world", 11 },
                { SW_FILE_READ, 0, "t.txt", "", NULL, 0 },
                { SW_FILE_WRITE, 0, "five.txt", "", "12345", 5 },
                { SW_FILE_READ, 0, "five.txt", "", NULL, 0 },
                { SW_FILE_WRITE, 0, "empty", "", NULL, 0 },
                { SW_FILE_READ, 0, "empty", "", NULL, 0 },
        };
        struct job j;
        files(h, &j, 1, 5, ops, sizeof(ops) / sizeof(ops[0]));
        for (uint32_t i = 0; i < j.n_files; i++)
                assert_err(&j, i, 0);
        assert_int_equal(j.res[1].data_len, 5);
        assert_memory_equal(j.res[1].data, "hello", 5);
        assert_true(j.res[1].truncated);
        assert_int_equal(j.res[1].size, 11);
        assert_int_equal(j.res[3].data_len, 5);
        assert_false(j.res[3].truncated);
        assert_int_equal(j.res[3].size, 5);
        assert_int_equal(j.res[5].data_len, 0);
        assert_false(j.res[5].truncated);
        assert_int_equal(j.res[5].size, 0);
        job_done(&j);
}

static void test_files_list_limit(void **state)
{
        struct harness *h = *state;
        char dir[PATH_MAX];
        join(dir, sizeof(dir), h->ws, "many");
        assert_int_equal(mkdir(dir, 0755), 0);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        for (unsigned i = 0; i < SW_ENTRIES_MAX + 5; i++) {
                char name[32];
                snprintf(name, sizeof(name), "f%05u", i);
                int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                assert_true(fd >= 0);
                close(fd);
        }
        close(dfd);
        const struct sw_file_req ops[] = { { SW_FILE_LIST, 0, "many", "", NULL, 0 } };
        struct job j;
        files(h, &j, 1, 0, ops, 1);
        assert_err(&j, 0, 0);
        assert_true(j.res[0].truncated);
        assert_int_equal(j.res[0].n_entries, SW_ENTRIES_MAX);
        assert_int_equal(j.res[0].size, SW_ENTRIES_MAX + 5);
        for (uint32_t i = 1; i < j.res[0].n_entries; i++)
                assert_true(strcmp(j.res[0].entries[i - 1].name, j.res[0].entries[i].name) < 0);
        job_done(&j);
}

/* ---- kept interpreters ---------------------------------------------------------- */

static void assert_code(const struct job *j, uint8_t status, const char *value)
{
        if (j->done.status != status)
                fail_msg("code job %u: status %u, want %u (error: %s)", j->seq, j->done.status,
                         status, j->done.error);
        assert_string_equal(j->done.return_value, value);
}

static void assert_contains(const char *s, const char *part)
{
        if (!strstr(s, part))
                fail_msg("\"%s\" does not contain \"%s\"", s, part);
}

static void test_code_python(void **state)
{
        struct harness *h = *state;
        struct job j;
        code(h, &j, 1, "python", "x = 41\n", "{}");
        assert_code(&j, SW_CODE_OK, "null");
        job_done(&j);
        code(h, &j, 2, "python", "def main():\n    print('from main')\n    return x + 1\n", "{}");
        assert_code(&j, SW_CODE_OK, "42");
        assert_string_equal(j.out[1].data, "from main\n");
        job_done(&j);
        code(h, &j, 3, "python",
             "import sys\nprint('before', file=sys.stderr)\nraise ValueError('boom')\n", "{}");
        assert_code(&j, SW_CODE_ERROR, "null");
        assert_contains(j.done.error, "Traceback");
        assert_contains(j.done.error, "ValueError: boom");
        assert_string_equal(j.out[2].data, "before\n");
        job_done(&j);
        /* The exception did not cost the state. */
        code(h, &j, 4, "python", "def main():\n    return x\n", "{}");
        assert_code(&j, SW_CODE_OK, "41");
        job_done(&j);
        code(h, &j, 5, "python", "def main(a, b):\n    return {'sum': a + b}\n",
             "{\"a\": 1, \"b\": 2}");
        assert_code(&j, SW_CODE_OK, "{\"sum\": 3}");
        job_done(&j);
        /* More output than a pipe holds: all of it before the answer. */
        code(h, &j, 60, "python", "def main():\n    print('y' * 200000)\n    return len('y')\n",
             "{}");
        assert_code(&j, SW_CODE_OK, "1");
        assert_int_equal(j.out[1].len, 200001);
        job_done(&j);
        code(h, &j, 6, "python", "def main():\n    return {1, 2}\n", "{}");
        assert_code(&j, SW_CODE_ERROR, "null");
        assert_contains(j.done.error, "main() returned a value that is not JSON");
        job_done(&j);
        /* A source without main does not call the last job's. */
        code(h, &j, 7, "python", "y = 1\n", "{}");
        assert_code(&j, SW_CODE_OK, "null");
        job_done(&j);
        code(h, &j, 8, "python", "import os\nos._exit(3)\n", "{}");
        assert_code(&j, SW_CODE_CRASHED, "null");
        assert_true(WIFEXITED(j.done.wstatus) && WEXITSTATUS(j.done.wstatus) == 3);
        assert_contains(j.done.error, "exited with status 3");
        job_done(&j);
        /* A fresh interpreter: x is gone. */
        code(h, &j, 9, "python", "def main():\n    return x\n", "{}");
        assert_code(&j, SW_CODE_ERROR, "null");
        assert_contains(j.done.error, "NameError");
        job_done(&j);
}

static void test_code_kill(void **state)
{
        struct harness *h = *state;
        struct job j;
        code(h, &j, 1, "python", "z = 7\n", "{}");
        assert_code(&j, SW_CODE_OK, "null");
        job_done(&j);
        job_init(&j, 2);
        struct dynbuf b;
        dynbuf_init(&b, 4096);
        struct sw_code c = {
                .language = "python",
                .source = "import time\nprint('sleeping', flush=True)\ntime.sleep(100)\n",
                .arguments = "{}",
                .env = environ,
                .cwd = h->ws
        };
        assert_int_equal(sw_encode_code(&b, 2, &c), 0);
        send_all(h, &b);
        dynbuf_done(&b);
        wait_for(h, &j, SA_OUTPUT);
        send_kill(h, 2);
        wait_for(h, &j, SA_CODE_DONE);
        assert_code(&j, SW_CODE_CRASHED, "null");
        assert_string_equal(j.done.error, "killed");
        assert_true(WIFSIGNALED(j.done.wstatus));
        job_done(&j);
        code(h, &j, 3, "python", "def main():\n    return 'z' in globals()\n", "{}");
        assert_code(&j, SW_CODE_OK, "false");
        job_done(&j);
}

static void test_code_node(void **state)
{
        struct harness *h = *state;
        struct job j;
        code(h, &j, 1, "node", "var x = 41;\nlet y = 1;\n", "{}");
        assert_code(&j, SW_CODE_OK, "null");
        job_done(&j);
        code(h, &j, 2, "node", "function main() { console.log('from main'); return x + y; }",
             "{}");
        assert_code(&j, SW_CODE_OK, "42");
        assert_string_equal(j.out[1].data, "from main\n");
        job_done(&j);
        code(h, &j, 3, "node", "throw new Error('boom');", "{}");
        assert_code(&j, SW_CODE_ERROR, "null");
        assert_contains(j.done.error, "Error: boom");
        job_done(&j);
        code(h, &j, 4, "node", "async function main(a) { return { sum: x + a.n }; }",
             "{\"n\": 2}");
        assert_code(&j, SW_CODE_OK, "{\"sum\":43}");
        job_done(&j);
        code(h, &j, 5, "node", "function main() { return () => 1; }", "{}");
        assert_code(&j, SW_CODE_ERROR, "null");
        assert_contains(j.done.error, "main() returned a value that is not JSON");
        job_done(&j);
        code(h, &j, 6, "node", "process.exit(3);", "{}");
        assert_code(&j, SW_CODE_CRASHED, "null");
        assert_true(WIFEXITED(j.done.wstatus) && WEXITSTATUS(j.done.wstatus) == 3);
        job_done(&j);
        code(h, &j, 7, "node", "function main() { return typeof x; }", "{}");
        assert_code(&j, SW_CODE_OK, "\"undefined\"");
        job_done(&j);
        code(h, &j, 8, "node",
             "const path = require('path');\n"
             "function main() { process.stdout.write('z'.repeat(200000)); return path.join('a', 'b'); }",
             "{}");
        assert_code(&j, SW_CODE_OK, "\"a/b\"");
        assert_int_equal(j.out[1].len, 200000);
        job_done(&j);
}

static void test_code_no_interpreter(void **state)
{
        struct harness *h = *state;
        struct job j;
        char *env[] = { "PATH=/nonexistent-boxcar", NULL };
        code_env(h, &j, 1, "python", "x = 1\n", "{}", env);
        assert_code(&j, SW_CODE_NO_INTERP, "null");
        assert_string_equal(j.done.error, "python3: not found in the session's PATH");
        job_done(&j);
        code(h, &j, 2, "ruby", "x = 1", "{}");
        assert_code(&j, SW_CODE_NO_INTERP, "null");
        assert_contains(j.done.error, "ruby");
        job_done(&j);
}

/* ---- the worker hangs up ---------------------------------------------------------- */

static void test_hang_up(void **state)
{
        struct harness *h = *state;
        struct job j;
        /* Left in its job's group; in a session of its own; still running. */
        sh(h, &j, 1, "sleep 100 & echo $!");
        pid_t in_group = (pid_t)atoi(j.out[1].data);
        job_done(&j);
        sh(h, &j, 2, "setsid sleep 100 & echo $!");
        pid_t own_session = (pid_t)atoi(j.out[1].data);
        job_done(&j);
        job_init(&j, 3);
        char *argv[] = { "sleep", "100", NULL };
        send_run(h, 3, argv, NULL, 0, h->ws);
        wait_for(h, &j, SA_STARTED);
        pid_t running = j.pid;
        job_done(&j);
        code(h, &j, 4, "python",
             "import subprocess\np = subprocess.Popen(['sleep', '100'])\n"
             "def main():\n    return p.pid\n",
             "{}");
        assert_int_equal(j.done.status, SW_CODE_OK);
        pid_t code_child = (pid_t)atoi(j.done.return_value);
        job_done(&j);
        assert_true(in_group > 0 && own_session > 0 && running > 0 && code_child > 0);
        assert_false(gone(in_group));
        int st = hang_up(h);
        h->agent = 0;
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_true(gone_within(in_group, 3000));
        assert_true(gone_within(running, 3000));
        assert_true(gone_within(code_child, 3000));
        assert_false(gone(own_session));
        kill(own_session, SIGKILL);
}

int main(int argc, char **argv)
{
        (void)argc;
        /* build/tests/unit/agent/test_agent -> build/boxcar-session-agent */
        char self[PATH_MAX];
        snprintf(self, sizeof(self), "%s", argv[0]);
        char *slash = strrchr(self, '/');
        if (slash)
                *slash = '\0';
        else
                snprintf(self, sizeof(self), ".");
        join(agent_path, sizeof(agent_path), self, "../../../boxcar-session-agent");
        if (access(agent_path, X_OK) != 0) {
                fprintf(stderr, "%s: %s\n", agent_path, strerror(errno));
                return 1;
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_run_output_and_exit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_fd_leaks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_stdin, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_leftovers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cwd, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_failure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_path_search, setup, teardown),
                cmocka_unit_test_setup_teardown(test_child_state, setup, teardown),
                cmocka_unit_test_setup_teardown(test_std_closed, setup_std_closed, teardown),
                cmocka_unit_test_setup_teardown(test_files, setup_files, teardown),
                cmocka_unit_test_setup_teardown(test_files_read_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_files_list_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_code_python, setup, teardown),
                cmocka_unit_test_setup_teardown(test_code_kill, setup, teardown),
                cmocka_unit_test_setup_teardown(test_code_node, setup, teardown),
                cmocka_unit_test_setup_teardown(test_code_no_interpreter, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hang_up, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
