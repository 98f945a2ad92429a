// One connection that LISTENs for every wait, log stream and progress
// stream of a Boxcar: boxcar_job_updates (a job's final status or a
// progress report, as {"id", "queue", "status"[, "progress"]}) and
// boxcar_logs (a job id whose live log grew).  Subscribers are keyed by job
// id, so a notification costs one map look-up however many wait.
//
// A lost connection is reopened (backoff 0.1 s doubling to 5 s) while
// anyone is subscribed, and LISTENed again; every subscriber is told, and
// re-reads what it waits for: a job that finished while the connection was
// down is seen then, never missed.
import pg from 'pg';

export const APPLICATION_NAME = 'boxcar-client-listen';
const CHANNELS = ['boxcar_job_updates', 'boxcar_logs'];

export class Listener {
  constructor(clientConfig) {
    this.config = { ...clientConfig, application_name: APPLICATION_NAME };
    this.client = null; // the connection, once LISTENing
    this.opening = null; // the promise of the connection being opened
    this.subs = new Map(); // job id → Set of functions
    this.everConnected = false;
    this.lastError = null;
    this.closed = false;
    this.retryTimer = null;
  }

  // fn(event) for job id: event is {channel, status?, progress?} for a
  // notification about that job, or {lost: true} / {reconnected: true}.
  // Returns the function that unsubscribes.
  subscribe(id, fn) {
    let set = this.subs.get(id);
    if (!set) this.subs.set(id, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.subs.get(id) === set) this.subs.delete(id);
    };
  }

  // Resolves once LISTEN is in place.  The first connection's failure
  // rejects (a wrong URL or password is said at once); later ones are
  // retried until it is back.
  ready() {
    if (this.closed) return Promise.reject(new Error('boxcar: the client was ended'));
    if (this.client) return Promise.resolve();
    if (!this.opening) this.opening = this.open();
    return this.opening;
  }

  async open() {
    for (let delay = 100; ; delay = Math.min(delay * 2, 5000)) {
      const c = new pg.Client(this.config);
      c.on('error', () => this.lost(c)); // also ends the connection
      c.on('end', () => this.lost(c));
      c.on('notification', (n) => this.dispatch(n));
      try {
        await c.connect();
        await c.query(CHANNELS.map((ch) => `LISTEN ${ch}`).join('; '));
      } catch (e) {
        this.lastError = e;
        c.removeAllListeners('end');
        c.end().catch(() => {});
        // Nobody waits any more: stop trying (the next ready() starts
        // again), so a database that stays down keeps no timer alive.
        if (!this.everConnected || this.closed || this.subs.size === 0) {
          this.opening = null;
          throw e;
        }
        await new Promise((r) => { this.retryTimer = setTimeout(r, delay); });
        if (this.closed) throw new Error('boxcar: the client was ended');
        continue;
      }
      const again = this.everConnected;
      this.client = c;
      this.everConnected = true;
      this.lastError = null;
      this.opening = null;
      if (again) this.broadcast({ reconnected: true });
      return;
    }
  }

  lost(c) {
    if (this.client !== c) return;
    this.client = null;
    c.end().catch(() => {});
    if (this.closed) return;
    this.broadcast({ lost: true });
    // Reopened now when anyone waits (they call ready() again anyway).
    if (this.subs.size > 0 && !this.opening) {
      this.opening = this.open();
      this.opening.catch(() => {});
    }
  }

  broadcast(event) {
    for (const set of [...this.subs.values()]) for (const fn of [...set]) fn(event);
  }

  dispatch(n) {
    let id;
    let event;
    if (n.channel === 'boxcar_logs') {
      id = n.payload;
      event = { channel: n.channel };
    } else if (n.channel === 'boxcar_job_updates') {
      try {
        const p = JSON.parse(n.payload);
        id = p.id;
        event = { channel: n.channel, status: p.status, progress: p.progress };
      } catch {
        return; // not ours to judge: a payload we do not know is skipped
      }
    } else {
      return;
    }
    const set = this.subs.get(id);
    if (set) for (const fn of [...set]) fn(event);
  }

  // The backend's process id (for tests and diagnostics), null when down.
  get pid() {
    return this.client?.processID ?? null;
  }

  async close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => {});
  }
}
