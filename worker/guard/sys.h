/* The system calls of the guard (wait.c, main.c), behind one interface
 * with two implementations:
 * - sys_raw.c: raw x86-64 system calls, no libc at all.  boxcar-guard is
 *   exec'd for every --sandbox none job, and a libc's start-up (on a
 *   virtualised host glibc's cache probing with cpuid traps to the
 *   hypervisor) cost as much CPU as the rest of the guard: measured, the
 *   libc-free guard takes 0.25 ms less CPU per job.
 * - sys_libc.c: glibc's functions, for the worker's fork fallback (a child
 *   of the worker, which has a libc), sanitized builds and other
 *   architectures.
 * Every call returns what the system call returns, or -errno; all of them
 * are async-signal-safe (the fallback runs them in a forked child of a
 * multi-threaded process).  Signal sets are the kernel's: bit s-1 is
 * signal s. */
#ifndef BC_WORKER_GUARD_SYS_H
#define BC_WORKER_GUARD_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

typedef uint64_t guard_sigset;
#define GUARD_SIGBIT(sig) ((guard_sigset)1 << ((sig)-1))

long g_setpgid(pid_t pid, pid_t pgid);
long g_prctl(int option, unsigned long arg);
pid_t g_getpid(void);
pid_t g_getppid(void);
/* how: SIG_BLOCK, SIG_UNBLOCK or SIG_SETMASK. */
long g_sigprocmask(int how, guard_sigset set);
/* Waits for one of set (blocked); returns its number. */
long g_sigwait(guard_sigset set);
/* The default action for sig. */
long g_sig_default(int sig);
long g_kill(pid_t pid, int sig);
long g_wait4(pid_t pid, int *status, int options, struct rusage *usage);
/* A child (no shared memory): 0 in the child, its pid in the parent. */
pid_t g_fork(void);
long g_execve(const char *path, char *const argv[], char *const envp[]);
long g_chdir(const char *path);
long g_close(int fd);
/* Closes every descriptor from first up. */
long g_close_from(int first);
long g_write(int fd, const void *buf, size_t n);
_Noreturn void g_exit(int code);

#endif
