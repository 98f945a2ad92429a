#include "worker/workdir/janitor.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct task {
        void (*fn)(void *arg);
        void *arg;
        struct task *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static struct task *head, *tail;
static bool started, start_failed, busy;

static void *janitor_main(void *unused)
{
        (void)unused;
        pthread_mutex_lock(&lock);
        for (;;) {
                while (!head) {
                        busy = false;
                        pthread_cond_broadcast(&idle);
                        pthread_cond_wait(&wake, &lock);
                }
                struct task *t = head;
                head = t->next;
                if (!head)
                        tail = NULL;
                busy = true;
                pthread_mutex_unlock(&lock);
                t->fn(t->arg);
                free(t);
                pthread_mutex_lock(&lock);
        }
        return NULL;
}

/* With the lock held. */
static bool have_thread(void)
{
        if (!started && !start_failed) {
                pthread_t th;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                started = pthread_create(&th, &attr, janitor_main, NULL) == 0;
                pthread_attr_destroy(&attr);
                start_failed = !started;
        }
        return started;
}

void janitor_run_later(void (*fn)(void *arg), void *arg)
{
        struct task *t = malloc(sizeof(*t));
        pthread_mutex_lock(&lock);
        bool queued = t && have_thread();
        if (queued) {
                *t = (struct task){ .fn = fn, .arg = arg };
                if (tail)
                        tail->next = t;
                else
                        head = t;
                tail = t;
                busy = true;
                pthread_cond_signal(&wake);
        }
        pthread_mutex_unlock(&lock);
        if (!queued) {
                free(t);
                fn(arg);
        }
}

void janitor_drain(void)
{
        pthread_mutex_lock(&lock);
        while (started && (head || busy))
                pthread_cond_wait(&idle, &lock);
        pthread_mutex_unlock(&lock);
}
