// One job at a time, as an agent works a session: enqueue a job (one
// transaction), wait until it has ended, then the next.  For
// bench/session.sh.
//
//   node enqueue_serial.mjs COUNT OUT
//
// DATABASE_URL selects the database; BENCH_SPEC is the job's spec, each
// "%i" in it replaced by the job's number (1..COUNT); BENCH_QUEUE (default)
// its queue; BENCH_JOB_TIMEOUT_S (120) how long one job may take.  A job's
// end is the NOTIFY on channel bench_done (payload: the job's id) that the
// benchmark's trigger on boxcar.jobs sends when the job's status becomes
// final, so nothing polls while the job starts.  OUT gets one line per
// job, tab separated: id, the instant the enqueue was sent, the instant its
// commit was acknowledged, the instant its end was heard (µs since the
// epoch, this host's clock).
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import pg from "pg";

const [countArg, out] = process.argv.slice(2);
const count = Number(countArg);
const spec = process.env.BENCH_SPEC;
if (!(count > 0) || !out || !spec) {
  console.error("usage: BENCH_SPEC=JSON enqueue_serial.mjs COUNT OUT");
  process.exit(2);
}
const queue = process.env.BENCH_QUEUE || "default";
const timeoutMs = Number(process.env.BENCH_JOB_TIMEOUT_S || 120) * 1000;

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
// Ends heard before their waiter was set (the NOTIFY may be handled before
// the enqueue's continuation runs), and the waiters.
const ended = new Map();
const waiters = new Map();
client.on("notification", (n) => {
  const at = nowUs();
  const w = waiters.get(n.payload);
  if (w) {
    waiters.delete(n.payload);
    w(at);
  } else {
    ended.set(n.payload, at);
  }
});
await client.query("listen bench_done");
// Warm the connection (plan caches, catalog) outside the measurement.
await client.query("select 1");

const endOf = (id) =>
  new Promise((resolve, reject) => {
    if (ended.has(id)) {
      resolve(ended.get(id));
      ended.delete(id);
      return;
    }
    const timer = setTimeout(() => {
      waiters.delete(id);
      reject(new Error(`job ${id} did not end in ${timeoutMs / 1000} s`));
    }, timeoutMs);
    waiters.set(id, (at) => {
      clearTimeout(timer);
      resolve(at);
    });
  });

const text = "select boxcar.enqueue(queue => $1, spec => $2::jsonb)::text as id";
const lines = [];
try {
  for (let i = 1; i <= count; i++) {
    const s = spec.replaceAll("%i", String(i));
    const sent = nowUs();
    const res = await client.query(text, [queue, s]);
    const ack = nowUs();
    const id = res.rows[0].id;
    const done = await endOf(id);
    lines.push(`${id}\t${sent}\t${ack}\t${done}\n`);
  }
} finally {
  writeFileSync(out, lines.join(""));
  await client.end();
}
