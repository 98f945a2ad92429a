/* Waiting for a job's end without polling: LISTEN on boxcar_job_updates,
 * the completion push (sql/20_enqueue.sql, README "For web apps"). */
#ifndef BC_WORKER_CLI_JOB_WAIT_H
#define BC_WORKER_CLI_JOB_WAIT_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "common/error.h"
#include "worker/db/api.h"

/* Copies the job's status into ret_status; true when it is final. */
struct cJSON;
bool job_status_final(const struct cJSON *job, char ret_status[API_STATUS_MAX]);

/* Reads job id (boxcar.job_json) into ret, and when it has not finished,
 * waits for a notification of its end and reads it again.  LISTEN comes
 * before the first read, so an end between the two is not missed.  A lost
 * connection is opened again from url (*conn replaced), LISTENed and the
 * job read again.  timeout_ms 0: no limit.  Returns 1 (finished, ret
 * filled), 0 when there is no such job, -ETIMEDOUT when the timeout passed
 * first (ret holds the job as last read, ret_status its status), or
 * another negative value with err set.  The caller frees ret. */
int job_wait(PGconn **conn, const char *url, const char *id, long timeout_ms,
             struct api_json_rows *ret, char ret_status[API_STATUS_MAX], struct bc_error *err);

#endif
