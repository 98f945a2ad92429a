#include "worker/exec/proc_reaper.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/deadline.h"

/* A helper's teardown takes milliseconds (its cgroup removal retries for
 * at most a second per controller); past this it is stuck and killed. */
#define TEARDOWN_LIMIT_MS 30000
/* Children without a pidfd are looked at this often. */
#define POLL_MS 50
#define MAX_CHILDREN 1024

struct child {
        pid_t pid;
        int pidfd;
        uint64_t deadline_ms;
        void (*on_reaped)(void *ctx, pid_t pid, int wstatus);
        void *ctx;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t emptied = PTHREAD_COND_INITIALIZER;
static struct child children[MAX_CHILDREN];
static size_t n_children;
static int wake_fd = -1;
static bool started, start_failed;

/* The group goes first, while the zombie still holds its id, so a new
 * process cannot have taken it. */
static void collect(const struct child *c, bool force)
{
        if (force)
                kill(c->pid, SIGKILL);
        kill(-c->pid, SIGKILL);
        int status = 0;
        pid_t r;
        while ((r = waitpid(c->pid, &status, 0)) < 0 && errno == EINTR)
                ;
        if (r == c->pid && c->on_reaped)
                c->on_reaped(c->ctx, c->pid, status);
        if (c->pidfd >= 0)
                close(c->pidfd);
}

static bool has_exited(const struct child *c)
{
        siginfo_t si = { 0 };
        return waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               si.si_pid == c->pid;
}

/* Called with the lock held; collects the ended (or overdue) ones. */
static void sweep(uint64_t now, bool force_all)
{
        for (size_t i = 0; i < n_children;) {
                struct child c = children[i];
                bool overdue = force_all || now >= c.deadline_ms;
                if (!overdue && !has_exited(&c)) {
                        i++;
                        continue;
                }
                children[i] = children[--n_children];
                collect(&c, overdue && !has_exited(&c));
        }
        if (n_children == 0)
                pthread_cond_broadcast(&emptied);
}

static void *reaper_main(void *arg)
{
        (void)arg;
        struct pollfd p[1 + MAX_CHILDREN];
        for (;;) {
                pthread_mutex_lock(&lock);
                size_t n = 0;
                bool polled = false;
                p[n++] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
                for (size_t i = 0; i < n_children; i++) {
                        p[n++] = (struct pollfd){ .fd = children[i].pidfd, .events = POLLIN };
                        polled = polled || children[i].pidfd < 0;
                }
                pthread_mutex_unlock(&lock);
                /* The one-second tick catches deadlines. */
                poll(p, n, polled ? POLL_MS : 1000);
                uint64_t ignored;
                if (p[0].revents && read(wake_fd, &ignored, sizeof(ignored)) < 0) {
                        /* nothing: it only wakes us */
                }
                pthread_mutex_lock(&lock);
                sweep(bc_mono_ms(), false);
                pthread_mutex_unlock(&lock);
        }
        return NULL;
}

/* With the lock held. */
static bool start_thread(void)
{
        if (started || start_failed)
                return started;
        wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = wake_fd >= 0 && pthread_create(&t, &attr, reaper_main, NULL) == 0;
        pthread_attr_destroy(&attr);
        start_failed = !started;
        return started;
}

void proc_reaper_adopt(pid_t pid, int pidfd, void (*on_reaped)(void *ctx, pid_t pid, int wstatus),
                       void *ctx)
{
        struct child c = { .pid = pid,
                           .pidfd = pidfd,
                           .deadline_ms = bc_mono_ms() + TEARDOWN_LIMIT_MS,
                           .on_reaped = on_reaped,
                           .ctx = ctx };
        pthread_mutex_lock(&lock);
        bool taken = n_children < MAX_CHILDREN && start_thread();
        if (taken)
                children[n_children++] = c;
        pthread_mutex_unlock(&lock);
        if (!taken) {
                collect(&c, false);
                return;
        }
        uint64_t one = 1;
        if (write(wake_fd, &one, sizeof(one)) < 0) {
                /* the counter is full: the thread is awake anyway */
        }
}

unsigned proc_reaper_drain(double timeout_s)
{
        struct timespec until = bc_realtime_after_ms((uint64_t)(timeout_s * 1000));
        pthread_mutex_lock(&lock);
        while (n_children > 0)
                if (pthread_cond_timedwait(&emptied, &lock, &until) == ETIMEDOUT)
                        break;
        unsigned killed = (unsigned)n_children;
        sweep(bc_mono_ms(), true);
        pthread_mutex_unlock(&lock);
        return killed;
}
