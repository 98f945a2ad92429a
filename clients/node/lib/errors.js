// The errors the client throws itself.  Errors from PostgreSQL (a spec the
// server refuses, an unknown job) are pg's DatabaseError as they come:
// .message is the server's, .code its SQLSTATE.

export class BoxcarError extends Error {
  constructor(message, props = {}) {
    super(message);
    this.name = 'BoxcarError';
    Object.assign(this, props);
  }
}

// waitFor (and the helpers built on it) gave up before the job finished.
export class BoxcarTimeoutError extends BoxcarError {
  constructor(jobId, timeoutMs, lastStatus) {
    super(`job ${jobId}: not finished after ${timeoutMs} ms (last seen ${lastStatus ?? 'unread'})`,
      { code: 'BOXCAR_WAIT_TIMEOUT', jobId, timeoutMs, lastStatus });
    this.name = 'BoxcarTimeoutError';
  }
}

// A job a helper waited for ended without the outcome it needs (session
// helpers: a file operation failed, the job was cancelled...).  .job is the
// whole job (boxcar.job_json), .code the job's error code.
export class JobFailedError extends BoxcarError {
  constructor(job) {
    const code = job.error?.code ?? job.status;
    super(`job ${job.id} ${job.status}: ${code}${job.error?.message ? `: ${job.error.message}` : ''}`,
      { code, jobId: job.id, job });
    this.name = 'JobFailedError';
  }
}
