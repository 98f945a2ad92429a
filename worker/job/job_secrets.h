/* A job's secrets once opened (spec.secrets, worker/secrets/): their
 * values in the job's environment, and masked ("***") in everything the
 * worker stores or sends of the job: live log chunks, the result's output
 * tails, the result and the error (common/secret_mask.h; values shorter
 * than SECRET_MASK_MIN_LEN bytes are not masked). */
#ifndef BC_WORKER_JOB_JOB_SECRETS_H
#define BC_WORKER_JOB_JOB_SECRETS_H

#include <stddef.h>

#include "common/error.h"

struct job_outcome;
struct job_spec;
struct secret_keyring;
struct secret_mask;
struct tailbuf;

struct job_secrets {
        char **values; /* opened, wiped by job_secrets_done */
        size_t *lens;
        size_t n;
        struct secret_mask *live[2]; /* stdout's and stderr's, for the live log */
};

/* Opens every sealed value of spec with kr (NULL: the worker has no
 * --secret-keys), checks that its envelope names the scope of queue (the
 * job's) and the secret's name, appends NAME=value to spec->env and fills
 * *ret (zeroed first; job_secrets_done it in every case).  A value that
 * does not open, or was sealed for another scope or name, fails with
 * BC_SECRET_UNAVAILABLE naming the secret and its key, never the value. */
int job_secrets_open(const struct secret_keyring *kr, struct job_spec *spec, const char *queue,
                     struct job_secrets *ret, struct bc_error *err);

/* Wipes the values and frees everything.  NULL-safe. */
void job_secrets_done(struct job_secrets *s);

/* Masks the kept tail of a stream in place.  A truncated tail may begin
 * inside a value: a beginning that ends a value is masked too. */
void job_secrets_mask_tail(const struct job_secrets *s, struct tailbuf *t);

/* A copy of text with the values masked (s NULL: a plain copy); NULL when
 * out of memory.  Caller frees. */
char *job_secrets_masked(const struct job_secrets *s, const char *text);

/* Masks the outcome's result and error texts in place. */
void job_secrets_mask_outcome(const struct job_secrets *s, struct job_outcome *o);

#endif
