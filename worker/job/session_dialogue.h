/* One job run inside a live session, as a dialogue with the session's
 * agent (common/session_wire.h): the request for the job's mode, its
 * output to the live log, its exit or results, its timeout and cancel;
 * then its outcome and the session's checkpoint. */
#ifndef BC_WORKER_JOB_SESSION_DIALOGUE_H
#define BC_WORKER_JOB_SESSION_DIALOGUE_H

#include <stdbool.h>

#include "worker/job/job.h"
#include "worker/job/services.h"
#include "worker/spec/spec.h"

struct session;

/* Runs spec in sess and fills ret (with the checkpoint to record with the
 * job's end).  True when the session must stop without a further
 * checkpoint: its agent is gone or unanswering, or the job is handed back
 * half run (a drain), so its workspace is not one the queue knows. */
struct job_secrets;
bool session_dialogue_run(const struct job_services *svc, const struct claimed_job *job,
                          const struct job_spec *spec, const struct job_secrets *secrets,
                          struct session *sess, int cancel_fd, const _Atomic int *stop,
                          struct job_outcome *ret);

#endif
