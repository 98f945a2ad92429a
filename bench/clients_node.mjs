// bench/clients.sh's Node part: N no-op jobs one after another, each
// enqueued and then awaited, either by the client's waitFor (LISTEN on
// boxcar_job_updates) or by reading boxcar.job_json every 50 ms (what an
// app without the completion push would do).  Prints one JSON line: the
// mode, and each job's id and enqueue → result-received milliseconds.
//   node bench/clients_node.mjs listen|poll N QUEUE
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Boxcar, enqueue } = await import(require.resolve('../clients/node/index.js'));
const [mode, nText, queue] = process.argv.slice(2);
const n = Number(nText);
if (!['listen', 'poll'].includes(mode) || !(n > 0) || !queue) {
  console.error('usage: clients_node.mjs listen|poll N QUEUE');
  process.exit(2);
}
const boxcar = new Boxcar({ connectionString: process.env.DATABASE_URL, max: 2 });
const spec = { command: ['true'] };
const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

async function poll(id) {
  for (;;) {
    const r = await boxcar.pool.query('select boxcar.job_json($1) as job', [id]);
    if (FINAL.has(r.rows[0].job.status)) return r.rows[0].job;
    await new Promise((res) => setTimeout(res, 50));
  }
}

// Warm up: connections open, LISTEN in place, plans cached.
for (let i = 0; i < 5; i++) {
  const id = await enqueue(boxcar.pool, { queue, spec });
  await (mode === 'listen' ? boxcar.waitFor(id, { timeoutMs: 30000 }) : poll(id));
}
const jobs = [];
for (let i = 0; i < n; i++) {
  const t0 = performance.now();
  const id = await enqueue(boxcar.pool, { queue, spec });
  const job = await (mode === 'listen' ? boxcar.waitFor(id, { timeoutMs: 30000 }) : poll(id));
  const ms = performance.now() - t0;
  if (job.status !== 'succeeded') throw new Error(`job ${id} ${job.status}`);
  jobs.push([id, ms]);
}
console.log(JSON.stringify({ mode, jobs }));
await boxcar.end();
