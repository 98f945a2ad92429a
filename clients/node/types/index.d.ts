// Types of @boxcar/client's API (hand-written; the job spec's types are
// generated from docs/job-spec.schema.json into ./spec.d.ts).
import type { Pool, PoolConfig } from 'pg';
import type { JobSpec, FilesItem } from './spec.js';

export type { JobSpec, FilesItem as FileOp } from './spec.js';
export * as spec from './spec.js';

/** Anything with pg's query(text, values): a Client, a PoolClient or a Pool. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export type FinalStatus = 'succeeded' | 'failed' | 'cancelled';

/** A job id (UUID) or, in enqueueMany, the index of an earlier job of the same call. */
export type Dependency = string | number;

export interface EnqueueOptions {
  /** "name" or "scope/name" of letters, digits, "_", "." or "-" (at most 128). */
  queue: string;
  spec: JobSpec;
  /** -32768 to 32767, higher first. @default 0 */
  priority?: number;
  /** Not before this time. @default now */
  runAt?: Date | string;
  /** 1 to 100. @default 3 */
  maxAttempts?: number;
  /** A key already used returns that job's id (the same request) or is refused (another one). */
  idempotencyKey?: string;
  webhookUrl?: string;
  /** Jobs that must succeed first; if one fails or is cancelled this job ends cancelled (DEPENDENCY_FAILED). */
  dependsOn?: string[];
}

export interface EnqueueManyJob extends Omit<EnqueueOptions, 'dependsOn'> {
  /** Job ids, or indexes of earlier jobs of the same call. */
  dependsOn?: Dependency[];
}

export interface JobError {
  code: 'NONZERO_EXIT' | 'TIMEOUT' | 'OOM' | 'CANCELLED' | 'BAD_SPEC' | 'CHECKSUM_MISMATCH' | 'BAD_ARCHIVE'
    | 'FETCH_FAILED' | 'UPLOAD_FAILED' | 'SANDBOX_SETUP' | 'WORKSPACE_LIMIT' | 'SECRET_UNAVAILABLE'
    | 'FILE_OP_FAILED' | 'WORKER_LOST' | 'ATTEMPTS_EXHAUSTED' | 'DEPENDENCY_FAILED' | (string & {});
  message: string;
  /** DEPENDENCY_FAILED: the dependency that failed or was cancelled. */
  dependency?: string;
  [key: string]: unknown;
}

export interface FileEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  /** Octal permission bits, "0644". */
  mode: string;
  /** Seconds since the epoch. */
  mtime: number;
}

export interface FileOpResult {
  op: FilesItem['op'];
  path: string;
  ok: boolean;
  /** When ok is false: what went wrong (strerror). */
  error?: string;
  /** read: the content, as text when it is UTF-8, else base64. */
  content?: string;
  encoding?: 'utf-8' | 'base64';
  size?: number;
  truncated?: boolean;
  /** list */
  entries?: FileEntry[];
  /** stat */
  stat?: Omit<FileEntry, 'name'>;
}

/** A finished job's result (docs/job-spec.md, Results). */
export interface JobResult {
  exit_code: number;
  signal: number | null;
  timed_out: boolean;
  oom_killed: boolean;
  wall_ms: number;
  cpu_ms?: number;
  max_rss_kb?: number;
  started_at?: string;
  sandbox?: string;
  stdout: string;
  stderr: string;
  stdout_truncated?: boolean;
  stderr_truncated?: boolean;
  stdout_bytes?: number;
  stderr_bytes?: number;
  /** code mode: main's JSON return value. */
  return_value?: unknown;
  /** A session's file operations, in order. */
  files?: FileOpResult[];
  session?: { id: string; seq: number; resumed: boolean };
  artifact?: Record<string, unknown> | null;
  startup?: Record<string, unknown>;
  network?: { bytes_out: number; bytes_in: number; connections: number; refused: number };
  [key: string]: unknown;
}

/** A job as boxcar.job_json gives it. */
export interface Job {
  id: string;
  queue: string;
  status: JobStatus;
  spec: JobSpec;
  priority: number;
  attempts: number;
  max_attempts: number;
  manual_retries: number;
  run_at: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  worker_id: string | null;
  idempotency_key: string | null;
  webhook_url: string | null;
  result: JobResult | null;
  error: JobError | null;
  /** Present when the job has dependencies. */
  depends_on?: string[];
  /** The latest progress report, once the job reported one. */
  progress?: unknown;
  /** A queued job held back by its scope's quota says why. */
  waiting?: string;
  [key: string]: unknown;
}

/** A line of list(): a job without its spec and result. */
export type JobSummary = Pick<Job, 'id' | 'queue' | 'status' | 'priority' | 'attempts' | 'max_attempts'
  | 'manual_retries' | 'run_at' | 'created_at' | 'started_at' | 'finished_at' | 'worker_id' | 'error'>;

export interface LogChunk {
  attempt: number;
  seq: number;
  stream: 'stdout' | 'stderr';
  data: Buffer;
}

export interface ProgressReport {
  seq: number;
  attempt: number;
  at: Date;
  progress: unknown;
}

export interface BoxcarConfig extends PoolConfig {
  /** A pg Pool of yours to run queries on (not ended by end()). */
  pool?: Pool;
  /** Who asks for retries, in the job's audit trail. @default "user@host" */
  requestedBy?: string;
}

export interface ListOptions {
  queue?: string | null;
  status?: JobStatus | null;
  since?: Date | string | null;
  /** 1 to 1000. @default 50 */
  limit?: number;
  /** The `next` of the previous page. */
  after?: string | null;
}

export declare class Boxcar {
  constructor(config?: BoxcarConfig | string);
  readonly pool: Pool;
  /** Enqueues on the client's pool, in a transaction of its own. */
  enqueue(job: EnqueueOptions): Promise<string>;
  enqueueMany(jobs: EnqueueManyJob[]): Promise<string[]>;
  get(id: string): Promise<Job | null>;
  list(options?: ListOptions): Promise<{ jobs: JobSummary[]; next: string | null }>;
  /** 'cancelled', 'running' (the kill is on its way) or the final status the job had. */
  cancel(id: string): Promise<JobStatus>;
  retry(id: string, options?: { requestedBy?: string }): Promise<Job>;
  /** The finished job (failed and cancelled ones too: look at status). Throws BoxcarTimeoutError after timeoutMs. */
  waitFor(id: string, options?: { timeoutMs?: number }): Promise<Job & { status: FinalStatus }>;
  streamLogs(id: string, options?: { after?: { attempt: number; seq: number } }): AsyncGenerator<LogChunk, void, undefined>;
  progress(id: string, options?: { after?: number }): AsyncGenerator<ProgressReport, void, undefined>;
  session(id: string, options?: SessionOptions): Session;
  end(): Promise<void>;
}

export interface SessionOptions {
  /** @default "default" */
  queue?: string;
  idleTimeoutS?: number;
  /** Merged into every job's spec.limits. */
  limits?: JobSpec['limits'];
  /** Each call's wait. @default none */
  timeoutMs?: number;
}

/** A job spec without its session (the Session fills it in). */
export type SessionJobSpec = JobSpec extends infer T ? (T extends unknown ? Omit<T, 'session'> : never) : never;

export declare class Session {
  readonly id: string;
  readonly queue: string;
  /** Runs one job of the session (its session field filled in) and returns it finished. */
  job(spec: SessionJobSpec): Promise<Job>;
  run(command: string | string[], options?: { stdin?: string; env?: Record<string, string>; workdir?: string; timeoutS?: number }):
    Promise<{ exitCode: number; stdout: string; stderr: string; job: Job }>;
  code(language: 'python' | 'node' | 'bash', source: string, options?: { args?: Record<string, unknown> }): Promise<unknown>;
  files(ops: [FilesItem, ...FilesItem[]]): Promise<FileOpResult[]>;
  read(path: string): Promise<string>;
  readBytes(path: string): Promise<Buffer>;
  write(path: string, data: string | Uint8Array, options?: { parents?: boolean }): Promise<void>;
  list(path?: string): Promise<FileEntry[]>;
  stat(path: string): Promise<Omit<FileEntry, 'name'>>;
  mkdir(path: string, options?: { parents?: boolean }): Promise<void>;
  remove(path: string, options?: { recursive?: boolean }): Promise<void>;
  move(path: string, to: string): Promise<void>;
  /** 'ending' or 'ended'. */
  end(): Promise<'ending' | 'ended'>;
}

/** Enqueues on the caller's connection (inside its transaction): the job's id. */
export declare function enqueue(client: Queryable, job: EnqueueOptions): Promise<string>;
/** Enqueues many in one round trip: ids in input order. */
export declare function enqueueMany(client: Queryable, jobs: EnqueueManyJob[]): Promise<string[]>;

export interface WebhookEvent {
  type: 'job.succeeded' | 'job.failed' | 'job.cancelled' | 'job.progress' | (string & {});
  timestamp: string;
  data: {
    job_id: string;
    queue: string;
    status: JobStatus;
    attempts?: number;
    error?: JobError | null;
    result?: JobResult | null;
    [key: string]: unknown;
  };
}

/** The event when the signature and timestamp hold; throws WebhookVerificationError otherwise. */
export declare function verifyWebhook(
  secret: string | string[],
  headers: Record<string, string | string[] | undefined> | Headers,
  body: string | Uint8Array,
): WebhookEvent;

export declare class WebhookVerificationError extends Error {}

export declare class BoxcarError extends Error {
  code: string;
  jobId?: string;
}
export declare class BoxcarTimeoutError extends BoxcarError {
  code: 'BOXCAR_WAIT_TIMEOUT';
  jobId: string;
  timeoutMs: number;
  lastStatus?: JobStatus;
}
export declare class JobFailedError extends BoxcarError {
  jobId: string;
  job: Job;
}

export declare const FINAL: ReadonlySet<FinalStatus>;
/** The listener connection's application_name ("boxcar-client-listen"). */
export declare const APPLICATION_NAME: string;
/** The client's own pool's application_name unless its config names one ("boxcar-client"). */
export declare const POOL_APPLICATION_NAME: string;
