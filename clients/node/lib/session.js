// A session's jobs (docs/sessions.md): each call enqueues one job of the
// session and waits for its end.  The first call starts the session's
// sandbox on a worker; later ones run in it, one at a time, in order.
import { JobFailedError } from './errors.js';

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,119}$/;

export class Session {
  // options: queue (default "default"), idleTimeoutS, limits (merged into
  // every job's spec), timeoutMs (each call's wait; default none).
  constructor(boxcar, id, { queue = 'default', idleTimeoutS, limits, timeoutMs } = {}) {
    if (typeof id !== 'string' || !SESSION_ID.test(id)) {
      throw new TypeError(`session id: ${JSON.stringify(id)} must be 1 to 120 letters, digits, "_", "." or "-", starting with a letter or digit`);
    }
    this.boxcar = boxcar;
    this.id = id;
    this.queue = queue;
    this.timeoutMs = timeoutMs;
    this.session = idleTimeoutS === undefined ? { id } : { id, idle_timeout_s: idleTimeoutS };
    this.limits = limits;
  }

  // Enqueues spec (its session filled in) and waits: the finished job.
  async job(spec) {
    const full = { ...spec, session: this.session };
    if (this.limits || spec.limits) full.limits = { ...this.limits, ...spec.limits };
    const id = await this.boxcar.enqueue({ queue: this.queue, spec: full });
    return this.boxcar.waitFor(id, { timeoutMs: this.timeoutMs });
  }

  // Runs a command (an argv array, or a string run by /bin/sh) in the
  // session: {exitCode, stdout, stderr, job}.  A non-zero exit is an
  // answer, not an error; a job that did not run its command to the end
  // (timeout, cancel, sandbox failure) throws JobFailedError.
  async run(command, { stdin, env, workdir, timeoutS } = {}) {
    const spec = Array.isArray(command) ? { command } : { script: command };
    if (stdin !== undefined) spec.stdin = stdin;
    if (env !== undefined) spec.env = env;
    if (workdir !== undefined) spec.workdir = workdir;
    if (timeoutS !== undefined) spec.limits = { timeout_s: timeoutS };
    const job = await this.job(spec);
    if (job.status !== 'succeeded' && job.error?.code !== 'NONZERO_EXIT') throw new JobFailedError(job);
    return { exitCode: job.result.exit_code, stdout: job.result.stdout, stderr: job.result.stderr, job };
  }

  // Runs code mode (language: python, node, bash) in the session's
  // interpreter: main's return value.  Throws JobFailedError when it fails.
  async code(language, source, { args } = {}) {
    const job = await this.job({ code: args === undefined ? { language, source } : { language, source, arguments: args } });
    if (job.status !== 'succeeded') throw new JobFailedError(job);
    return job.result.return_value;
  }

  // File operations as the spec's "files" gives them, carried out in order
  // by one job: each one's outcome (result.files).  Throws JobFailedError
  // when one fails (FILE_OP_FAILED, whose message names it).
  async files(ops) {
    const job = await this.job({ files: ops });
    if (job.status !== 'succeeded') throw new JobFailedError(job);
    return job.result.files;
  }

  // A file's content as a Buffer (reads up to 16 MiB; a larger file
  // throws rather than come back cut).
  async readBytes(path) {
    const job = await this.job({ files: [{ op: 'read', path }], limits: { output_bytes: 16777216 } });
    if (job.status !== 'succeeded') throw new JobFailedError(job);
    const r = job.result.files[0];
    if (r.truncated) throw new JobFailedError({ ...job, status: 'failed', error: { code: 'FILE_TOO_LARGE', message: `${path}: ${r.size} bytes, more than a read returns` } });
    return Buffer.from(r.content, r.encoding === 'base64' ? 'base64' : 'utf8');
  }

  // A file's content as UTF-8 text.
  async read(path) {
    return (await this.readBytes(path)).toString('utf8');
  }

  // Writes a file whole (a string as UTF-8, a Buffer or Uint8Array as
  // bytes), making missing parent directories unless parents is false.
  async write(path, data, { parents = true } = {}) {
    const op = typeof data === 'string'
      ? { op: 'write', path, content: data, parents }
      : { op: 'write', path, content: Buffer.from(data).toString('base64'), encoding: 'base64', parents };
    await this.files([op]);
  }

  // A directory's entries: [{name, type, size, mode, mtime}].
  async list(path = '.') {
    return (await this.files([{ op: 'list', path }]))[0].entries;
  }

  // A file's metadata: {type, size, mode, mtime}.
  async stat(path) {
    return (await this.files([{ op: 'stat', path }]))[0].stat;
  }

  async mkdir(path, { parents = true } = {}) {
    await this.files([{ op: 'mkdir', path, parents }]);
  }

  async remove(path, { recursive = false } = {}) {
    await this.files([{ op: 'remove', path, recursive }]);
  }

  async move(path, to) {
    await this.files([{ op: 'move', path, to }]);
  }

  // Asks the session's sandbox to end (after a last checkpoint):
  // 'ending' or 'ended', as boxcar.end_session says.
  async end() {
    // The queue's scope, as boxcar.queue_scope gives it ("a" for "a/q").
    const scope = this.queue.includes('/') ? this.queue.split('/')[0] : this.queue;
    const r = await this.boxcar.pool.query('select boxcar.end_session($1, $2) as state', [scope, this.id]);
    return r.rows[0].state;
  }
}
