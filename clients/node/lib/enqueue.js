// Enqueueing on the caller's connection: any pg Client or PoolClient (or
// anything with pg's query(text, values)), so a job is enqueued inside the
// caller's transaction and exists only if it commits.

// Option name → boxcar.enqueue's parameter (and enqueue_many's key).
const PARAMS = {
  queue: 'queue',
  spec: 'spec',
  priority: 'priority',
  runAt: 'run_at',
  maxAttempts: 'max_attempts',
  idempotencyKey: 'idempotency_key',
  webhookUrl: 'webhook_url',
  dependsOn: 'depends_on',
};

function checkClient(client) {
  if (!client || typeof client.query !== 'function') {
    throw new TypeError('client: a pg Client, PoolClient or Pool (something with query(text, values))');
  }
}

function checkOptions(job, where) {
  if (!job || typeof job !== 'object' || Array.isArray(job)) throw new TypeError(`${where}: must be an object`);
  for (const k of Object.keys(job)) {
    if (!(k in PARAMS)) throw new TypeError(`${where}: unknown option "${k}" (known: ${Object.keys(PARAMS).join(', ')})`);
  }
  if (typeof job.queue !== 'string') throw new TypeError(`${where}.queue: must be a string`);
  if (!job.spec || typeof job.spec !== 'object' || Array.isArray(job.spec)) {
    throw new TypeError(`${where}.spec: must be a job spec object`);
  }
}

const runAtText = (v) => (v instanceof Date ? v.toISOString() : v);

// enqueue(client, {queue, spec, priority?, runAt?, maxAttempts?,
// idempotencyKey?, webhookUrl?, dependsOn?}) → the job's id.  Options left
// out take boxcar.enqueue's defaults (named arguments: only those given
// are passed).
export async function enqueue(client, job) {
  checkClient(client);
  checkOptions(job, 'job');
  const args = [];
  const values = [];
  for (const [k, param] of Object.entries(PARAMS)) {
    let v = job[k];
    if (v === undefined) continue;
    if (k === 'spec') v = JSON.stringify(v);
    if (k === 'runAt') v = runAtText(v);
    values.push(v);
    const cast = k === 'spec' ? '::jsonb' : k === 'dependsOn' ? '::uuid[]' : k === 'runAt' ? '::timestamptz' : '';
    args.push(`${param} => $${values.length}${cast}`);
  }
  const r = await client.query(`select boxcar.enqueue(${args.join(', ')}) as id`, values);
  return r.rows[0].id;
}

// enqueueMany(client, jobs) → ids in input order, in one round trip
// (boxcar.enqueue_many).  A dependsOn entry may be a job id or the index of
// an earlier job of the same call.  One bad job refuses them all; the
// server's message starts with "jobs[<index>]: ".
export async function enqueueMany(client, jobs) {
  checkClient(client);
  if (!Array.isArray(jobs)) throw new TypeError('jobs: must be an array');
  const rows = jobs.map((job, i) => {
    checkOptions(job, `jobs[${i}]`);
    const o = {};
    for (const [k, param] of Object.entries(PARAMS)) {
      if (job[k] === undefined) continue;
      o[param] = k === 'runAt' ? runAtText(job[k]) : job[k];
    }
    return JSON.stringify(o);
  });
  if (rows.length === 0) return [];
  const r = await client.query('select to_json(boxcar.enqueue_many($1::jsonb[])) as ids', [rows]);
  return r.rows[0].ids;
}
