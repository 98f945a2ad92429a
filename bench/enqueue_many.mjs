// The driver of bench/enqueue.sh: enqueues COUNT no-op jobs into boxcar
// (DATABASE_URL) and into graphile-worker (GW_DATABASE_URL), each way
// ROUNDS times, and prints one line per way and round, tab separated:
// way, round, jobs, seconds (wall clock on this side: from the first call
// sent to the last answer received).
//
//   node bench/enqueue_many.mjs COUNT BATCH ROUNDS
//
// Ways:
//   boxcar_many_B     boxcar.enqueue_many, BATCH jobs a call (a transaction each)
//   boxcar_many_all   boxcar.enqueue_many, all COUNT jobs in one call
//   graphile_add_jobs_B / graphile_add_jobs_all   workerUtils.addJobs (graphile_worker.add_jobs), the same
//   boxcar_enqueue_1  boxcar.enqueue, one job a call (the floor: a round trip each)
//   graphile_add_job_1  workerUtils.addJob, one job a call
// Each way starts from empty tables (TRUNCATE before it), one connection,
// the client on the same host.
import { performance } from "node:perf_hooks";
import pg from "pg";
import { makeWorkerUtils } from "graphile-worker";

const [count, batch, rounds] = process.argv.slice(2).map(Number);
if (!(count > 0 && batch > 0 && rounds > 0)) {
  console.error("usage: enqueue_many.mjs COUNT BATCH ROUNDS");
  process.exit(2);
}
const spec = { command: ["true"] };

const bx = new pg.Client({ connectionString: process.env.DATABASE_URL });
await bx.connect();
const utils = await makeWorkerUtils({ connectionString: process.env.GW_DATABASE_URL });
await utils.migrate();
const gw = new pg.Client({ connectionString: process.env.GW_DATABASE_URL });
await gw.connect();

const chunks = (n, size) => {
  const out = [];
  for (let i = 0; i < n; i += size) out.push(Math.min(size, n - i));
  return out;
};

async function boxcarMany(size) {
  for (const n of chunks(count, size)) {
    const jobs = Array.from({ length: n }, () => JSON.stringify({ queue: "bench", spec }));
    const r = await bx.query("select cardinality(boxcar.enqueue_many($1::jsonb[])) as n", [jobs]);
    if (r.rows[0].n !== n) throw new Error(`enqueue_many returned ${r.rows[0].n} ids for ${n}`);
  }
}
async function graphileMany(size) {
  for (const n of chunks(count, size)) {
    const specs = Array.from({ length: n }, () => ({ identifier: "bench_true", payload: {} }));
    const jobs = await utils.addJobs(specs);
    if (jobs.length !== n) throw new Error(`addJobs returned ${jobs.length} jobs for ${n}`);
  }
}
async function boxcarOne() {
  const s = JSON.stringify(spec);
  for (let i = 0; i < count; i++) await bx.query("select boxcar.enqueue('bench', $1::jsonb)", [s]);
}
async function graphileOne() {
  for (let i = 0; i < count; i++) await utils.addJob("bench_true", {});
}

const ways = [
  [`boxcar_many_${batch}`, () => boxcarMany(batch), "boxcar"],
  [`graphile_add_jobs_${batch}`, () => graphileMany(batch), "graphile"],
  ["boxcar_many_all", () => boxcarMany(count), "boxcar"],
  ["graphile_add_jobs_all", () => graphileMany(count), "graphile"],
  ["boxcar_enqueue_1", boxcarOne, "boxcar"],
  ["graphile_add_job_1", graphileOne, "graphile"],
];
for (let round = 1; round <= rounds; round++) {
  for (const [name, fn, system] of ways) {
    if (system === "boxcar") await bx.query("truncate boxcar.jobs cascade");
    else await gw.query("truncate graphile_worker._private_jobs cascade");
    const t0 = performance.now();
    await fn();
    const s = (performance.now() - t0) / 1000;
    console.log(`${name}\t${round}\t${count}\t${s.toFixed(3)}`);
  }
}
await bx.end();
await gw.end();
await utils.release();
