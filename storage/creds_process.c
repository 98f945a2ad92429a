/* credential_process: a command the profile names, run without a shell,
 * whose standard output is the credentials as JSON (the AWS CLI's
 * "sourcing credentials with an external process"). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/cleanup.h"
#include "common/dynbuf.h"
#include "storage/creds-internal.h"

#define PROCESS_TIMEOUT_MS 60000
#define PROCESS_ERR_MAX 4096 /* stderr kept for the message (its last line) */

extern char **environ;

void creds_argv_free(char **argv)
{
        for (char **a = argv; a && *a; a++)
                free(*a);
        free(argv);
}

/* Python's shlex.split (POSIX mode), which the AWS CLI uses: blanks
 * separate words; '…' is literal; in "…" a backslash escapes only '"' and
 * '\'; outside quotes a backslash escapes any character.  No variables,
 * no '~', no globbing: there is no shell. */
int creds_split_command(const char *cmd, char ***ret, struct bc_error *err)
{
        size_t cap = strlen(cmd) / 2 + 2, n = 0;
        char **argv = calloc(cap, sizeof(*argv));
        char *word = malloc(strlen(cmd) + 1);
        if (!argv || !word) {
                free(argv);
                free(word);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        const char *p = cmd;
        const char *why = NULL;
        while (!why) {
                while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                        p++;
                if (!*p)
                        break;
                size_t w = 0;
                while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
                        if (*p == '\'') {
                                const char *e = strchr(p + 1, '\'');
                                if (!e) {
                                        why = "a ' is not closed";
                                        break;
                                }
                                memcpy(word + w, p + 1, (size_t)(e - p - 1));
                                w += (size_t)(e - p - 1);
                                p = e + 1;
                        } else if (*p == '"') {
                                for (p++; *p && *p != '"'; p++) {
                                        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                                                p++;
                                        word[w++] = *p;
                                }
                                if (!*p) {
                                        why = "a \" is not closed";
                                        break;
                                }
                                p++;
                        } else if (*p == '\\') {
                                if (!p[1]) {
                                        why = "it ends in a lone backslash";
                                        break;
                                }
                                word[w++] = p[1];
                                p += 2;
                        } else {
                                word[w++] = *p++;
                        }
                }
                if (why)
                        break;
                word[w] = '\0';
                argv[n] = strdup(word);
                if (!argv[n]) {
                        why = "out of memory";
                        break;
                }
                n++;
        }
        free(word);
        if (!why && n == 0)
                why = "it is empty";
        if (why) {
                creds_argv_free(argv);
                return bc_error_set(err, BC_CONFIG, EINVAL, "credential_process: %s", why);
        }
        *ret = argv;
        return 0;
}

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

static const char *str_field(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsString(v) && v->valuestring && *v->valuestring ? v->valuestring : NULL;
}

int creds_from_process_json(const char *out, struct aws_creds *ret, struct bc_error *err)
{
        _cleanup_(cJSON_Deletep) cJSON *j = cJSON_ParseWithLength(out, strlen(out));
        if (!cJSON_IsObject(j))
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "credential_process: its output is not a JSON object");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "Version");
        if (!cJSON_IsNumber(v))
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "credential_process: its output has no numeric Version "
                                    "(1 is the only one)");
        if (v->valuedouble != 1)
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "credential_process: Version %g is not supported (only 1)",
                                    v->valuedouble);
        const char *ak = str_field(j, "AccessKeyId"), *sk = str_field(j, "SecretAccessKey");
        const char *tok = str_field(j, "SessionToken"), *exp = str_field(j, "Expiration");
        if (!ak || !sk)
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "credential_process: its output lacks %s",
                                    !ak && !sk ? "AccessKeyId and SecretAccessKey"
                                    : !ak      ? "AccessKeyId"
                                               : "SecretAccessKey");
        return creds_from_fields(ak, sk, tok, exp, "credential_process", ret, err);
}

/* The last non-empty line of what the command wrote to stderr, printable
 * ASCII only, at most 200 bytes: the AWS CLI shows the command's stderr
 * too (and asks such tools never to write secrets there). */
static void last_line(const struct dynbuf *b, char out[static 201])
{
        out[0] = '\0';
        if (!b->data)
                return;
        size_t end = b->len;
        while (end && (b->data[end - 1] == '\n' || b->data[end - 1] == '\r'))
                end--;
        size_t start = end;
        while (start && b->data[start - 1] != '\n')
                start--;
        size_t n = end - start > 200 ? 200 : end - start;
        for (size_t i = 0; i < n; i++) {
                char ch = b->data[start + i];
                out[i] = ch < 0x20 || ch > 0x7e ? ' ' : ch;
        }
        out[n] = '\0';
}

static long ms_since(const struct timespec *t0)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Keeps the last PROCESS_ERR_MAX bytes of stderr: its end says why. */
static void keep_tail(struct dynbuf *b, const char *data, size_t n)
{
        if (n >= PROCESS_ERR_MAX) {
                dynbuf_reset(b);
                (void)dynbuf_add(b, data + n - PROCESS_ERR_MAX, PROCESS_ERR_MAX);
                return;
        }
        if (b->len + n > PROCESS_ERR_MAX) {
                size_t drop = b->len + n - PROCESS_ERR_MAX;
                memmove(b->data, b->data + drop, b->len - drop);
                b->len -= drop;
        }
        (void)dynbuf_add(b, data, n);
}

/* Reads both pipes to their ends (or the timeout, or too much output). */
static const char *drain(int out_fd, int err_fd, struct dynbuf *out, struct dynbuf *errb)
{
        struct pollfd pf[2] = { { .fd = out_fd, .events = POLLIN },
                                { .fd = err_fd, .events = POLLIN } };
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        char buf[4096];
        while (pf[0].fd >= 0 || pf[1].fd >= 0) {
                long left = PROCESS_TIMEOUT_MS - ms_since(&t0);
                if (left <= 0)
                        return "timed out after 60 s";
                int r = poll(pf, 2, (int)left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return "poll failed";
                for (int i = 0; i < 2; i++) {
                        if (pf[i].fd < 0 || !pf[i].revents)
                                continue;
                        ssize_t k = read(pf[i].fd, buf, sizeof(buf));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0) {
                                pf[i].fd = -1;
                                continue;
                        }
                        if (i == 0 && dynbuf_add(out, buf, (size_t)k) < 0) {
                                explicit_bzero(buf, sizeof(buf));
                                return "its output is larger than 64 KiB";
                        }
                        if (i == 1)
                                keep_tail(errb, buf, (size_t)k);
                }
        }
        explicit_bzero(buf, sizeof(buf));
        return NULL;
}

static void close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

int creds_process_fetch(char *const *argv, struct aws_creds *ret, struct bc_error *err)
{
        int op[2] = { -1, -1 }, ep[2] = { -1, -1 };
        if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
                int e = errno;
                close_fd(&op[0]);
                close_fd(&op[1]);
                return bc_error_set(err, BC_FETCH_FAILED, e, "credential_process: pipe: %s",
                                    strerror(e));
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, op[1], 1);
        posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
        pid_t pid;
        int sr = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close_fd(&op[1]);
        close_fd(&ep[1]);
        if (sr != 0) {
                close_fd(&op[0]);
                close_fd(&ep[0]);
                return bc_error_set(err, BC_FETCH_FAILED, sr, "credential_process: %s: %s",
                                    argv[0], strerror(sr));
        }
        struct dynbuf out, errb;
        dynbuf_init(&out, CREDS_BODY_MAX);
        dynbuf_init(&errb, PROCESS_ERR_MAX);
        const char *why = drain(op[0], ep[0], &out, &errb);
        close_fd(&op[0]);
        close_fd(&ep[0]);
        if (why)
                kill(pid, SIGKILL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        char tail[201];
        last_line(&errb, tail);
        dynbuf_done(&errb);
        int r = 0;
        if (why)
                r = bc_error_set(err, BC_FETCH_FAILED, EIO, "credential_process %s: %s", argv[0],
                                 why);
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                r = bc_error_set(err, BC_FETCH_FAILED, EIO, "credential_process %s: %s %d%s%s",
                                 argv[0], WIFEXITED(status) ? "exit status" : "killed by signal",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                                 *tail ? ": " : "", tail);
        else if (!out.data || !out.len)
                r = bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                 "credential_process %s: it printed nothing", argv[0]);
        else
                r = creds_from_process_json(out.data, ret, err);
        /* The output held the secret key. */
        if (out.data)
                explicit_bzero(out.data, out.len);
        dynbuf_done(&out);
        return r;
}
