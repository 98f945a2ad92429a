/* Host identities for sandboxes: the range, checked against the host's
 * accounts, and the lock-file allocator (see sandbox.h). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

static int parse_id(const char *s, const char *end, uint32_t *ret)
{
        if (s == end || end - s > 10)
                return -EINVAL;
        uint64_t v = 0;
        for (const char *p = s; p < end; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        if (v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t)v;
        return 0;
}

int sandbox_id_range_parse(const char *s, struct sandbox_id_range *ret, struct bc_error *err)
{
        const char *dash = s ? strchr(s, '-') : NULL;
        uint32_t first, last;
        if (!dash || parse_id(s, dash, &first) < 0 ||
            parse_id(dash + 1, dash + strlen(dash), &last) < 0)
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "want FIRST-LAST (decimal ids), got '%s'", s ? s : "");
        if (last < first)
                return bc_error_set(err, BC_USAGE, EINVAL, "'%s': LAST below FIRST", s);
        /* 0 is root; (uid_t)-1 and 65535 (the 16-bit -1) mean "no id" to
         * chown() and setresuid(); 65534 is nobody. */
        if (first == 0 || last == UINT32_MAX || (first <= 65535 && last >= 65534))
                return bc_error_set(err, BC_USAGE, EINVAL,
                                    "'%s' may not include 0, 65534, 65535 or "
                                    "4294967295",
                                    s);
        *ret = (struct sandbox_id_range){ .first = first, .count = last - first + 1 };
        return 0;
}

static bool in_range(const struct sandbox_id_range *r, uint64_t id)
{
        return id >= r->first && id - r->first < r->count;
}

/* Field n (0-based) of a ':'-separated line, as a number; -1 if absent
 * or not one. */
static int64_t field_number(const char *line, unsigned n)
{
        const char *p = line;
        for (unsigned i = 0; i < n; i++) {
                p = strchr(p, ':');
                if (!p)
                        return -1;
                p++;
        }
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || (*end != ':' && *end != '\n' && *end != '\0') || v > UINT32_MAX)
                return -1;
        return (int64_t)v;
}

/* kind: 'p' passwd (uid, gid), 'g' group (gid), 's' subuid/subgid
 * (start, count). */
static int check_file(const struct sandbox_id_range *r, const char *path, char kind,
                      struct bc_error *err)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT
                               ? 0
                               : bc_error_set(err, BC_USAGE, errno, "cannot read %s: %m", path);
        char line[4096];
        while (fgets(line, sizeof(line), f)) {
                if (line[0] == '#' || line[0] == '+' || line[0] == '-')
                        continue;
                int64_t a = field_number(line, kind == 's' ? 1 : 2);
                int64_t b = kind == 'p'   ? field_number(line, 3)
                            : kind == 's' ? field_number(line, 2)
                                          : -1;
                bool hit = kind == 's' ? a >= 0 && b > 0 &&
                                                 (uint64_t)a < (uint64_t)r->first + r->count &&
                                                 (uint64_t)(a + b) > r->first
                                       : (a >= 0 && in_range(r, (uint64_t)a)) ||
                                                 (b >= 0 && in_range(r, (uint64_t)b));
                if (hit) {
                        line[strcspn(line, ":\n")] = '\0';
                        return bc_error_set(err, BC_USAGE, EEXIST,
                                            "uid range %" PRIu32 "-%" PRIu64
                                            " overlaps %s's entry '%s': sandboxes must never "
                                            "share an id with a host account (choose another "
                                            "range)",
                                            r->first, (uint64_t)r->first + r->count - 1, path,
                                            line);
                }
        }
        return 0;
}

int sandbox_id_range_check_host(const struct sandbox_id_range *r, const char *etc_dir,
                                struct bc_error *err)
{
        static const struct {
                const char *name;
                char kind;
        } files[] = { { "passwd", 'p' }, { "group", 'g' }, { "subuid", 's' }, { "subgid", 's' } };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", etc_dir, files[i].name);
                int e = check_file(r, path, files[i].kind, err);
                if (e < 0)
                        return e;
        }
        return 0;
}

/* The lock directory: made if missing, and refused unless it is a
 * directory of ours that nobody else may write (anyone who could would
 * hold every id, or swap a lock file under its holder). */
static int check_lock_dir(int fd, const char *lock_dir, struct bc_error *err)
{
        struct stat st;
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
                close(fd);
                return bc_error_set(err, BC_SANDBOX_SETUP, EPERM,
                                    "%s: the id lock directory must be ours and writable by no "
                                    "one else",
                                    lock_dir);
        }
        return fd;
}

static int make_lock_dir(const char *lock_dir, struct bc_error *err)
{
        char parent[4096];
        snprintf(parent, sizeof(parent), "%s", lock_dir);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = '\0';
                if (mkdir(parent, 0755) < 0 && errno != EEXIST)
                        return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mkdir %s: %m", parent);
        }
        if (mkdir(lock_dir, 0700) < 0 && errno != EEXIST)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "mkdir %s: %m", lock_dir);
        int fd = open(lock_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open %s: %m", lock_dir);
        return fd;
}

static int open_lock_dir(const char *lock_dir, struct bc_error *err)
{
        int fd = open(lock_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return check_lock_dir(make_lock_dir(lock_dir, err), lock_dir, err);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "open %s: %m", lock_dir);
        return check_lock_dir(fd, lock_dir, err);
}

static uint32_t random_offset(uint32_t count)
{
        uint32_t v;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                v = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() * 2654435761u);
        }
        return v % count;
}

/* 1 with *ret_fd holding id's lock, 0 when another holds it. */
static int try_lock(int dir, uint32_t id, int *ret_fd)
{
        char name[16];
        snprintf(name, sizeof(name), "%" PRIu32, id);
        for (;;) {
                int fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return -errno;
                if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                        int e = errno;
                        close(fd);
                        return e == EWOULDBLOCK ? 0 : -e;
                }
                /* Should the file be removed (by hand) and made again, a lock
                 * on the one no longer at that name would be void. */
                struct stat a, b;
                if (fstat(fd, &a) == 0 && fstatat(dir, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
                    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
                        *ret_fd = fd;
                        return 1;
                }
                close(fd);
        }
}

int sandbox_id_acquire(const char *lock_dir, const struct sandbox_id_range *r, uint32_t *ret_id,
                       int *ret_fd, struct bc_error *err)
{
        if (r->count == 0)
                return bc_error_set(err, BC_USAGE, EINVAL, "empty id range");
        _cleanup_fd_ int dir = open_lock_dir(lock_dir, err);
        if (dir < 0)
                return dir;
        /* A random start: helpers starting together do not all contend
         * for the same first ids.  Within the first 4096 ids: the lock
         * files stay (creating and removing one per sandbox costs more
         * than the rest), and so stay few. */
        uint32_t off = random_offset(r->count < 4096 ? r->count : 4096);
        for (uint32_t i = 0; i < r->count; i++) {
                uint32_t id = r->first + (off + i) % r->count;
                int fd = -1;
                int got = try_lock(dir, id, &fd);
                if (got < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, -got, "%s/%" PRIu32 ": %s",
                                            lock_dir, id, strerror(-got));
                if (got) {
                        *ret_id = id;
                        *ret_fd = fd;
                        return 0;
                }
        }
        return bc_error_set(err, BC_SANDBOX_SETUP, EAGAIN,
                            "every host id of the range %" PRIu32 "-%" PRIu64
                            " is in use by a sandbox (widen --uid-range)",
                            r->first, (uint64_t)r->first + r->count - 1);
}

void sandbox_id_release(int fd)
{
        if (fd >= 0)
                close(fd);
}

/* Whether path changed at or after since (missing: not changed). */
static bool changed_since(const char *path, const struct timespec *since)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return errno != ENOENT;
        return st.st_ctim.tv_sec > since->tv_sec ||
               (st.st_ctim.tv_sec == since->tv_sec && st.st_ctim.tv_nsec >= since->tv_nsec);
}

int sandbox_id_range_check_host_cached(const struct sandbox_id_range *r, const char *etc_dir,
                                       const char *lock_dir, struct bc_error *err)
{
        _cleanup_fd_ int dir = open_lock_dir(lock_dir, err);
        if (dir < 0)
                return dir;
        char name[64], path[4096];
        snprintf(name, sizeof(name), "checked-%" PRIu32 "-%" PRIu32, r->first, r->count);
        static const char *const files[] = { "passwd", "group", "subuid", "subgid" };
        struct stat marker;
        bool fresh = fstatat(dir, name, &marker, AT_SYMLINK_NOFOLLOW) == 0 &&
                     S_ISREG(marker.st_mode);
        for (size_t i = 0; fresh && i < ELEMENTSOF(files); i++) {
                snprintf(path, sizeof(path), "%s/%s", etc_dir, files[i]);
                fresh = !changed_since(path, &marker.st_mtim);
        }
        if (fresh)
                return 0;
        /* Stamped with the time before the reading: a change made while
         * we read is newer than the stamp, and read again next time. */
        struct timespec ts[2];
        clock_gettime(CLOCK_REALTIME, &ts[0]);
        ts[1] = ts[0];
        int e = sandbox_id_range_check_host(r, etc_dir, err);
        if (e < 0)
                return e;
        _cleanup_fd_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
                (void)futimens(fd, ts);
        return 0;
}

static char arg_range[32] = SANDBOX_ID_RANGE_DEFAULT;

int sandbox_id_range_set(const char *spec, struct bc_error *err)
{
        const char *s = spec && *spec ? spec : SANDBOX_ID_RANGE_DEFAULT;
        struct sandbox_id_range r;
        int e = sandbox_id_range_parse(s, &r, err);
        if (e >= 0)
                e = sandbox_id_range_check_host(&r, "/etc", err);
        if (e < 0)
                return e;
        snprintf(arg_range, sizeof(arg_range), "%" PRIu32 "-%" PRIu64, r.first,
                 (uint64_t)r.first + r.count - 1);
        return 0;
}

const char *sandbox_id_range_get(void)
{
        return arg_range;
}
