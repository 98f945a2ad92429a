// Steady-rate enqueuer for the pickup-latency phase of
// bench/queue.sh: one connection, one job per transaction (an
// autocommit `select`), at a fixed rate, as a web app would.
//
//   node enqueue_steady.mjs boxcar|graphile RATE SECONDS OUT
//
// DATABASE_URL selects the database; BENCH_BOXCAR_SPEC (default
// {"command":["true"]}) is the boxcar job's spec, BENCH_GW_TASK (default
// bench_true) the graphile-worker task.  OUT gets one line per job:
// id, created_at (µs since the epoch, as the server stored it; \N for
// boxcar, whose rows stay in boxcar.jobs), the instant the statement was
// sent, and the instant its commit was acknowledged (µs), tab separated.
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import pg from "pg";

const [system, rateArg, secondsArg, out] = process.argv.slice(2);
const rate = Number(rateArg);
const seconds = Number(secondsArg);
if (!["boxcar", "graphile"].includes(system) || !(rate > 0) || !(seconds > 0) || !out) {
  console.error("usage: enqueue_steady.mjs boxcar|graphile RATE SECONDS OUT");
  process.exit(2);
}

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// As SQL string literals (the same statement text as before for the defaults).
const lit = (v) => `'${v.replace(/'/g, "''")}'`;
const spec = process.env.BENCH_BOXCAR_SPEC || '{"command":["true"]}';
const task = process.env.BENCH_GW_TASK || "bench_true";
const text =
  system === "boxcar"
    ? `select boxcar.enqueue(queue => 'default', spec => ${lit(spec)})::text as id,
              null::bigint as created_us`
    : `select j.id::text as id,
              (extract(epoch from j.created_at) * 1000000)::bigint as created_us
         from graphile_worker.add_job(${lit(task)}, '{}'::json) j`;

const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
await client.connect();
// Warm the connection (plan caches, catalog) outside the measurement.
await client.query("select 1");

const n = Math.round(rate * seconds);
const intervalMs = 1000 / rate;
const lines = [];
const t0 = performance.now() + 50;
for (let i = 0; i < n; i++) {
  const wait = t0 + i * intervalMs - performance.now();
  if (wait > 0) await sleep(wait);
  const sent = nowUs();
  const res = await client.query(text);
  const ack = nowUs();
  const row = res.rows[0];
  lines.push(`${row.id}\t${row.created_us ?? "\\N"}\t${sent}\t${ack}\n`);
}
await client.end();
writeFileSync(out, lines.join(""));
