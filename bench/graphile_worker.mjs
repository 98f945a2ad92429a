// The graphile-worker peer of the queue benchmark (bench/queue.sh).
//
// One graphile-worker pool with two tasks:
//  - `bench_true` does what a boxcar `--sandbox none` job does for
//    `{"command": ["true"]}`: spawn `true` with a clean environment, drain
//    its stdout/stderr, wait for it to exit;
//  - `bench_sandbox` (BENCH_SANDBOX=1 bench/queue.sh) spawns the
//    bwrap command BENCH_BWRAP (argv words separated by spaces) followed by
//    the inner command BENCH_INNER (a JSON argv that prints the instant it
//    starts inside the sandbox, `date +%s%N`), and keeps that instant from
//    its stdout.
// The instant just before the spawn is recorded (boxcar takes its
// result.started_at at the same point), kept in memory and written out on
// shutdown so that recording costs no I/O while the benchmark runs.
//
// Environment: DATABASE_URL, BENCH_CONCURRENCY (8), BENCH_POLL_MS (5000),
// BENCH_STARTS (file written on exit: job id, start µs, end µs, inner
// start µs or \N, tab separated), BENCH_READY (file created once the pool
// is listening), BENCH_BWRAP and BENCH_INNER (bench_sandbox only).
// BENCH_GW_LOG=warn drops graphile-worker's info lines (one per job by
// default, as boxcar's job.finished lines are).
// SIGTERM/SIGINT: graceful stop, write BENCH_STARTS, exit 0.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Logger, run } from "graphile-worker";

const concurrency = Number(process.env.BENCH_CONCURRENCY || 8);
const pollInterval = Number(process.env.BENCH_POLL_MS || 5000);
const startsFile = process.env.BENCH_STARTS;
const readyFile = process.env.BENCH_READY;

// Wall clock in microseconds (same clock as CLOCK_REALTIME / PostgreSQL's
// clock_timestamp(); timeOrigin is kept with sub-millisecond precision).
const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

// What boxcar gives a job: exactly the spec's env plus PATH/HOME/LANG.
const childEnv = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/tmp", LANG: "C.UTF-8" };

function runCommand(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), {
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, as boxcar does
    });
    let outBytes = 0;
    let errBytes = 0;
    // The first bytes of each stream are kept (bench_sandbox reads its
    // start instant from stdout; stderr explains a failure).
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => {
      outBytes += c.length;
      if (out.length < 256) out += c.toString();
    });
    child.stderr.on("data", (c) => {
      errBytes += c.length;
      if (err.length < 1024) err += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, outBytes, errBytes, out, err }));
  });
}

const records = [];

const bwrap = (process.env.BENCH_BWRAP || "").split(" ").filter((w) => w);
const inner = process.env.BENCH_INNER ? JSON.parse(process.env.BENCH_INNER) : [];

const taskList = {
  bench_true: async (_payload, helpers) => {
    const started = nowUs();
    const r = await runCommand(["true"]);
    const finished = nowUs();
    records.push(`${helpers.job.id}\t${started}\t${finished}\t\\N\n`);
    if (r.code !== 0) throw new Error(`true exited with ${r.code} (signal ${r.signal})`);
  },
  bench_sandbox: async (_payload, helpers) => {
    if (!bwrap.length || !inner.length) throw new Error("BENCH_BWRAP and BENCH_INNER are required");
    const started = nowUs();
    const r = await runCommand([...bwrap, ...inner]);
    const finished = nowUs();
    if (r.code !== 0)
      throw new Error(`bwrap exited with ${r.code} (signal ${r.signal}): ${r.err.trim()}`);
    // Nanoseconds since the epoch (19 digits, more than a double holds
    // exactly): cut to microseconds as text.
    const ns = r.out.trim();
    if (!/^[0-9]{16,}$/.test(ns)) throw new Error(`unexpected output: ${JSON.stringify(r.out)}`);
    records.push(`${helpers.job.id}\t${started}\t${finished}\t${ns.slice(0, -3)}\n`);
  },
};

const quiet = process.env.BENCH_GW_LOG === "warn";
const logger = quiet
  ? new Logger(() => (level, message) => {
      if (level === "error" || level === "warning") console.error(`[${level}] ${message}`);
    })
  : undefined;

const runner = await run({
  ...(logger ? { logger } : {}),
  connectionString: process.env.DATABASE_URL,
  concurrency,
  pollInterval,
  noHandleSignals: true,
  crontab: "",
  taskList,
});

if (readyFile) writeFileSync(readyFile, `${process.pid}\n`);

let stopping = false;
async function shutdown() {
  if (stopping) process.exit(1);
  stopping = true;
  try {
    await runner.stop();
  } catch (e) {
    console.error("stop:", e);
  }
  if (startsFile) writeFileSync(startsFile, records.join(""));
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
await runner.promise;
