// A Boxcar holds a pg Pool (reads, cancel, retry, the session helpers'
// enqueues) and one LISTEN connection shared by every wait and stream.
import os from 'node:os';
import pg from 'pg';
import { enqueue, enqueueMany } from './enqueue.js';
import { BoxcarError, BoxcarTimeoutError } from './errors.js';
import { Listener } from './listener.js';
import { Session } from './session.js';
import { Signal, beforeDeadline } from './signal.js';

export const FINAL = new Set(['succeeded', 'failed', 'cancelled']);
// How the client's own pool shows in pg_stat_activity (unless the config
// names another); the listener is APPLICATION_NAME (lib/listener.js).
export const POOL_APPLICATION_NAME = 'boxcar-client';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const STREAMS = { 1: 'stdout', 2: 'stderr' };

function checkId(id) {
  if (typeof id !== 'string' || !UUID.test(id)) throw new TypeError(`job id: ${JSON.stringify(id)} is not a UUID`);
  return id.toLowerCase();
}

// A connection that went away (the read is tried again once the listener
// is back); anything else is the caller's to see.
function connectionLost(e) {
  return /^(08|57P0)/.test(e?.code ?? '') || ['ECONNRESET', 'ECONNREFUSED', 'EPIPE'].includes(e?.code) ||
    /Connection terminated|connection (is )?closed|Client has encountered a connection error/i.test(e?.message ?? '');
}

export class Boxcar {
  // new Boxcar({connectionString, ...pg.ClientConfig, pool?, requestedBy?}):
  // pool, a pg.Pool of the caller's to use (not ended by end()); otherwise
  // one is made from the config (max 4 connections unless config.max).
  // The listener connection is always the client's own.
  constructor(config = {}) {
    const { pool, requestedBy, ...clientConfig } = typeof config === 'string' ? { connectionString: config } : config;
    if (pool) {
      this.pool = pool;
      this.ownPool = false;
      if (!clientConfig.connectionString && !clientConfig.host) Object.assign(clientConfig, pool.options);
    } else {
      this.pool = new pg.Pool({ max: 4, application_name: POOL_APPLICATION_NAME, ...clientConfig });
      this.ownPool = true;
    }
    // An idle pooled connection that dies is the pool's to replace; without
    // a handler its 'error' would end the process.  A pool of the caller's
    // keeps the caller's handling.
    if (this.ownPool) this.pool.on('error', () => {});
    // The listener is one connection: the pool's own settings are not its.
    const { max, min, idleTimeoutMillis, maxUses, allowExitOnIdle, ...one } = clientConfig;
    this.listener = new Listener(one);
    this.requestedBy = requestedBy ?? `${os.userInfo().username}@${os.hostname()}`;
  }

  // Enqueue on the pool (its own transaction); for the caller's
  // transaction use the exported enqueue(client, job).
  enqueue(job) {
    return enqueue(this.pool, job);
  }

  enqueueMany(jobs) {
    return enqueueMany(this.pool, jobs);
  }

  // The job as boxcar.job_json gives it, null when there is none.
  async get(id) {
    const r = await this.pool.query('select boxcar.job_json($1::uuid) as job', [checkId(id)]);
    return r.rows[0].job;
  }

  // A page of jobs, newest first: {jobs, next}; next is the cursor to pass
  // as `after` for the following page (null on the last page).
  async list({ queue = null, status = null, since = null, limit = 50, after = null } = {}) {
    const r = await this.pool.query('select job, cursor from boxcar.jobs_list($1, $2, $3, $4, $5)',
      [queue, status, since instanceof Date ? since.toISOString() : since, limit, after]);
    const jobs = r.rows.map((x) => x.job);
    return { jobs, next: r.rows.length === limit ? r.rows[r.rows.length - 1].cursor : null };
  }

  // boxcar.cancel: 'cancelled' (it was queued), 'running' (its worker is
  // told to kill it; waitFor sees it end) or the final status it had.
  async cancel(id) {
    const r = await this.pool.query('select boxcar.cancel($1::uuid) as status', [checkId(id)]);
    return r.rows[0].status;
  }

  // boxcar.retry of a failed or cancelled job: the job, queued again.
  async retry(id, { requestedBy = this.requestedBy } = {}) {
    const r = await this.pool.query('select boxcar.retry($1::uuid, $2) as job', [checkId(id), requestedBy]);
    return r.rows[0].job;
  }

  // Reads the job until it satisfies done(job), woken by the job's
  // notifications that wake(event) accepts and by every reconnection;
  // LISTEN is in place before the first read, so no change is missed.
  async watch(id, { timeoutMs, wake, done }) {
    const deadline = timeoutMs == null ? Infinity : Date.now() + timeoutMs;
    const sig = new Signal();
    let last;
    const timeout = () => new BoxcarTimeoutError(id, timeoutMs, last?.status);
    const unsubscribe = this.listener.subscribe(id, (ev) => {
      if (ev.lost || ev.reconnected || wake(ev)) sig.fire();
    });
    try {
      for (;;) {
        sig.clear();
        await beforeDeadline(this.listener.ready(), deadline, timeout);
        try {
          last = await beforeDeadline(this.get(id), deadline, timeout);
        } catch (e) {
          if (!connectionLost(e)) throw e;
          await beforeDeadline(new Promise((r) => setTimeout(r, 100)), deadline, timeout);
          continue;
        }
        if (!last) throw new BoxcarError(`job ${id} not found`, { code: 'BOXCAR_NOT_FOUND', jobId: id });
        if (done(last)) return last;
        await beforeDeadline(sig.wait(), deadline, timeout);
      }
    } finally {
      unsubscribe();
    }
  }

  // Waits for the job's final status (no polling: LISTEN on
  // boxcar_job_updates) and returns the job (boxcar.job_json).  A failed or
  // cancelled job is returned, not thrown: look at job.status and
  // job.error.  timeoutMs: BoxcarTimeoutError after that long (default:
  // wait as long as it takes).
  async waitFor(id, { timeoutMs } = {}) {
    id = checkId(id);
    return this.watch(id, {
      timeoutMs,
      wake: (ev) => ev.channel === 'boxcar_job_updates' && FINAL.has(ev.status),
      done: (job) => FINAL.has(job.status),
    });
  }

  // Rows after a cursor, read again whenever the job's notifications say
  // there is more, until the job has ended and everything before its end
  // was read.  read(cursor) → {rows, more}; cursorOf(row): the cursor
  // after that row (kept per row: a page cut short by a lost connection
  // goes on after the last row handed out, none twice).
  async *follow(id, { wake, read, cursorOf, cursor }) {
    const sig = new Signal();
    const unsubscribe = this.listener.subscribe(id, (ev) => {
      if (ev.lost || ev.reconnected || wake(ev)) sig.fire();
    });
    try {
      for (;;) {
        sig.clear();
        await this.listener.ready();
        let ended;
        try {
          // The status first: what ended the job was written with its end,
          // so the rows read after seeing it final are all there are.
          const job = await this.get(id);
          if (!job) throw new BoxcarError(`job ${id} not found`, { code: 'BOXCAR_NOT_FOUND', jobId: id });
          ended = FINAL.has(job.status);
          for (;;) {
            const page = await read(cursor);
            for (const row of page.rows) {
              cursor = cursorOf(row);
              yield row;
            }
            if (!page.more) break;
          }
        } catch (e) {
          if (!connectionLost(e)) throw e;
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        if (ended) return;
        await sig.wait();
      }
    } finally {
      unsubscribe();
    }
  }

  // The job's live log as it is written, chunk by chunk: {attempt, seq,
  // stream: 'stdout'|'stderr', data: Buffer}; ends when the job ends.
  // after: {attempt, seq} of the last chunk already seen (default: from
  // the current run's start).
  streamLogs(id, { after = { attempt: 0, seq: 0 } } = {}) {
    id = checkId(id);
    const PAGE = 1000;
    return this.follow(id, {
      cursor: after,
      wake: (ev) => ev.channel === 'boxcar_logs' || FINAL.has(ev.status),
      read: async (c) => {
        const r = await this.pool.query('select attempt, seq, stream, data from boxcar.job_logs_after($1::uuid, $2, $3, $4)',
          [id, c.attempt, c.seq, PAGE]);
        const rows = r.rows.map((x) => ({ attempt: x.attempt, seq: x.seq, stream: STREAMS[x.stream] ?? String(x.stream), data: x.data }));
        return { rows, more: rows.length === PAGE };
      },
      cursorOf: (row) => ({ attempt: row.attempt, seq: row.seq }),
    });
  }

  // The job's progress reports as they come: {seq, attempt, at: Date,
  // progress}; ends when the job ends.  after: the seq of the last report
  // already seen (default 0: all of them).
  progress(id, { after = 0 } = {}) {
    id = checkId(id);
    return this.follow(id, {
      cursor: after,
      wake: (ev) => ev.channel === 'boxcar_job_updates',
      read: async (c) => {
        const r = await this.pool.query('select seq, attempt, at, progress from boxcar.job_progress($1::uuid, $2)', [id, c]);
        const rows = r.rows.map((x) => ({ seq: Number(x.seq), attempt: x.attempt, at: x.at, progress: x.progress }));
        return { rows, more: false };
      },
      cursorOf: (row) => row.seq,
    });
  }

  // A session's helper: see lib/session.js.
  session(id, options = {}) {
    return new Session(this, id, options);
  }

  // Closes the listener and the pool the client made.
  async end() {
    await this.listener.close();
    if (this.ownPool) await this.pool.end();
  }
}
