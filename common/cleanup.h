/* Scope-bound cleanup for locals (the bubblewrap/systemd idiom): a variable
 * declared `_cleanup_free_ char *p = NULL;` is freed when it goes out of
 * scope; steal_pointer() hands ownership out of the scope. */
#ifndef BC_COMMON_CLEANUP_H
#define BC_COMMON_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void bc_freep(void *p)
{
        free(*(void **)p);
}

static inline void bc_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

static inline void bc_fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

#define _cleanup_(fn) __attribute__((cleanup(fn)))
#define _cleanup_free_ _cleanup_(bc_freep)
#define _cleanup_fd_ _cleanup_(bc_closep)
#define _cleanup_fclose_ _cleanup_(bc_fclosep)

/* Declares a cleanup function `name##p` for pointers freed by `fn`. */
/* unused: clang warns of a static inline function a .c file defines and
 * never calls. */
#define BC_DEFINE_CLEANUP(type, fn)                               \
        __attribute__((unused)) static inline void fn##p(type *p) \
        {                                                         \
                if (*p)                                           \
                        fn(*p);                                   \
        }

BC_DEFINE_CLEANUP(DIR *, closedir)

static inline void *bc_steal_ptr(void **p)
{
        void *v = *p;
        *p = NULL;
        return v;
}
#define steal_pointer(pp) bc_steal_ptr((void **)(pp))

static inline int steal_fd(int *fd)
{
        int v = *fd;
        *fd = -1;
        return v;
}

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

#endif
