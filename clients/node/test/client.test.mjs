// @boxcar/client against a real PostgreSQL and a real worker, run by
// tests/clients/t_node.sh (node --test --test-reporter=tap), which gives:
//   DATABASE_URL                 a fresh, migrated database a worker serves
//   BOXCAR_ADMIN_URL             the cluster's superuser (to block connections)
//   BOXCAR_TEST_WEBHOOK_SECRET   scope default's webhook secret (whsec_…)
//   BOXCAR_TEST_SESSIONS         1 when the worker can run sessions (root, S3)
//   BOXCAR                       the boxcar binary (its webhooks verify)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, after } from 'node:test';
import pg from 'pg';
import {
  Boxcar, enqueue, enqueueMany, verifyWebhook, BoxcarTimeoutError, JobFailedError,
  WebhookVerificationError, APPLICATION_NAME, POOL_APPLICATION_NAME,
} from '../index.js';

const url = process.env.DATABASE_URL;
const admin = process.env.BOXCAR_ADMIN_URL;
assert.ok(url, 'DATABASE_URL must be set (tests/clients/t_node.sh sets it)');
const boxcar = new Boxcar({ connectionString: url });
const db = new pg.Pool({ connectionString: url, max: 2 });
after(async () => { await boxcar.end(); await db.end(); });

const sh = (script, more = {}) => ({ command: ['sh', '-c', script], ...more });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const one = async (q, v) => (await db.query(q, v)).rows[0];

test('enqueue runs in the caller\'s transaction: rolled back, no job; committed, a job that waitFor returns', async () => {
  const c = await db.connect();
  try {
    await c.query('begin');
    const gone = await enqueue(c, { queue: 'default', spec: sh('echo never') });
    await c.query('rollback');
    assert.equal(await boxcar.get(gone), null);
    await c.query('begin');
    const id = await enqueue(c, { queue: 'default', spec: sh('echo out; echo err >&2'), priority: 5, maxAttempts: 2 });
    // Not visible outside the transaction until it commits.
    assert.equal((await one('select count(*)::int n from boxcar.jobs where id = $1', [id])).n, 0);
    await c.query('commit');
    const job = await boxcar.waitFor(id, { timeoutMs: 30000 });
    assert.equal(job.status, 'succeeded');
    assert.equal(job.result.stdout, 'out\n');
    assert.equal(job.result.stderr, 'err\n');
    assert.equal(job.priority, 5);
    assert.equal(job.max_attempts, 2);
  } finally {
    c.release();
  }
});

test('enqueue: runAt and idempotencyKey reach the server (the same request gets the same id)', async () => {
  const runAt = new Date(Date.now() + 3600e3);
  const a = await enqueue(db, { queue: 'later', spec: sh('true'), runAt, idempotencyKey: 'node-k1', webhookUrl: 'http://127.0.0.1:9/x' });
  const b = await enqueue(db, { queue: 'later', spec: sh('true'), runAt, idempotencyKey: 'node-k1', webhookUrl: 'http://127.0.0.1:9/x' });
  assert.equal(a, b);
  const job = await boxcar.get(a);
  assert.equal(new Date(job.run_at).getTime(), runAt.getTime());
  assert.equal(job.webhook_url, 'http://127.0.0.1:9/x');
  await assert.rejects(enqueue(db, { queue: 'later', spec: sh('false'), idempotencyKey: 'node-k1' }),
    (e) => e.code === '23505' && /idempotency_key: already used by job .* with a different spec/.test(e.message));
  assert.equal(await boxcar.cancel(a), 'cancelled');
});

test('a bad spec is refused with the server\'s message; a bad option before any round trip', async () => {
  await assert.rejects(enqueue(db, { queue: 'default', spec: { command: ['true'], colour: 'red' } }),
    (e) => e.code === '22023' && e.message === 'BAD_SPEC: colour: unknown field');
  await assert.rejects(enqueue(db, { queue: 'no spaces', spec: sh('true') }),
    (e) => e.code === '22023' && e.message.startsWith('queue: must be'));
  await assert.rejects(enqueue(db, { queue: 'default', spec: sh('true'), prio: 1 }),
    (e) => e instanceof TypeError && /unknown option "prio"/.test(e.message));
  await assert.rejects(boxcar.waitFor('not-a-uuid'), (e) => e instanceof TypeError && /not a UUID/.test(e.message));
});

test('enqueueMany: ids in input order, dependsOn by earlier index, one bad job refuses all naming its index', async () => {
  const ids = await enqueueMany(db, [
    { queue: 'default', spec: sh('echo first') },
    { queue: 'default', spec: sh('echo second'), dependsOn: [0] },
    { queue: 'default', spec: sh('echo third'), priority: 2 },
  ]);
  assert.equal(ids.length, 3);
  const jobs = await Promise.all(ids.map((id) => boxcar.waitFor(id, { timeoutMs: 30000 })));
  assert.deepEqual(jobs.map((j) => j.result.stdout), ['first\n', 'second\n', 'third\n']);
  assert.deepEqual(jobs[1].depends_on, [ids[0]]);
  assert.ok(new Date(jobs[1].started_at) >= new Date(jobs[0].finished_at), 'the dependent started after its dependency ended');
  const before = (await one('select count(*)::int n from boxcar.jobs')).n;
  await assert.rejects(enqueueMany(db, [
    { queue: 'default', spec: sh('true') },
    { queue: 'default', spec: { command: [] } },
  ]), (e) => e.code === '22023' && e.message.startsWith('jobs[1]: '));
  assert.equal((await one('select count(*)::int n from boxcar.jobs')).n, before);
  assert.deepEqual(await enqueueMany(db, []), []);
});

test('dependsOn: a failed dependency cancels the dependent with DEPENDENCY_FAILED naming it', async () => {
  const a = await enqueue(db, { queue: 'default', spec: sh('exit 3') });
  const b = await enqueue(db, { queue: 'default', spec: sh('echo never'), dependsOn: [a] });
  const jb = await boxcar.waitFor(b, { timeoutMs: 30000 });
  assert.equal(jb.status, 'cancelled');
  assert.equal(jb.error.code, 'DEPENDENCY_FAILED');
  assert.equal(jb.error.dependency, a);
  assert.equal((await boxcar.get(a)).status, 'failed');
  const unknown = '00000000-0000-4000-8000-00000000000a';
  await assert.rejects(enqueue(db, { queue: 'default', spec: sh('true'), dependsOn: [unknown] }),
    (e) => e.code === '22023' && e.message.includes(unknown));
});

test('waitFor times out with an error naming the job; cancel ends a running job, which waitFor then sees', async () => {
  const id = await enqueue(db, { queue: 'default', spec: sh('echo started; sleep 60') });
  const t0 = Date.now();
  await assert.rejects(boxcar.waitFor(id, { timeoutMs: 700 }), (e) => {
    assert.ok(e instanceof BoxcarTimeoutError);
    assert.equal(e.code, 'BOXCAR_WAIT_TIMEOUT');
    assert.equal(e.jobId, id);
    assert.match(e.message, new RegExp(`^job ${id}: not finished after 700 ms`));
    return true;
  });
  const took = Date.now() - t0;
  assert.ok(took >= 650 && took < 3000, `the timeout took ${took} ms`);
  // Cancel once it runs (its log says so).
  for (let i = 0; i < 100 && (await boxcar.get(id)).status !== 'running'; i++) await sleep(100);
  assert.equal(await boxcar.cancel(id), 'running');
  const job = await boxcar.waitFor(id, { timeoutMs: 15000 });
  assert.equal(job.status, 'cancelled');
  assert.equal(job.error.code, 'CANCELLED');
  assert.equal(await boxcar.cancel(id), 'cancelled');
});

test('waitFor survives its LISTEN connection being terminated (pg_terminate_backend) and returns the result', async () => {
  const id = await enqueue(db, { queue: 'default', spec: sh('sleep 1.5; echo survived') });
  const waiting = boxcar.waitFor(id, { timeoutMs: 30000 });
  await boxcar.listener.ready();
  await sleep(200);
  const pid = boxcar.listener.pid;
  assert.ok(pid);
  const killed = await one('select pg_terminate_backend($1) as ok', [pid]);
  assert.equal(killed.ok, true);
  const job = await waiting;
  assert.equal(job.status, 'succeeded');
  assert.equal(job.result.stdout, 'survived\n');
  assert.notEqual(boxcar.listener.pid, pid, 'a new LISTEN connection');
});

test('waitFor survives every connection of the client being terminated at once (listener and pool)', async () => {
  const id = await enqueue(db, { queue: 'default', spec: sh('sleep 1; echo all-gone') });
  await boxcar.get(id); // a pooled connection exists
  const waiting = boxcar.waitFor(id, { timeoutMs: 30000 });
  await boxcar.listener.ready();
  await sleep(100);
  const r = await one(`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
                        where datname = current_database() and application_name in ($1, $2)`, [APPLICATION_NAME, POOL_APPLICATION_NAME]);
  assert.ok(r.n >= 2, `${r.n} connections terminated`);
  const job = await waiting;
  assert.equal(job.result.stdout, 'all-gone\n');
});

test('a job that ends while the LISTEN connection is down is seen when it comes back (re-read, never missed)', { skip: !admin && 'no BOXCAR_ADMIN_URL' }, async () => {
  const dbName = new URL(url).pathname.slice(1);
  const su = new pg.Client({ connectionString: admin });
  await su.connect();
  try {
    const id = await enqueue(db, { queue: 'default', spec: sh('sleep 1; echo while-away') });
    const waiting = boxcar.waitFor(id, { timeoutMs: 30000 });
    await boxcar.listener.ready();
    await sleep(100);
    // No new connection to the database while the job ends: the listener
    // cannot come back before, so its NOTIFY goes to nobody.
    await su.query(`alter database "${dbName}" with allow_connections false`);
    await su.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = $2',
      [APPLICATION_NAME, dbName]);
    for (let i = 0; i < 100 && (await one('select status from boxcar.jobs where id = $1', [id])).status !== 'succeeded'; i++) await sleep(100);
    assert.equal((await one('select status from boxcar.jobs where id = $1', [id])).status, 'succeeded');
    assert.equal(boxcar.listener.pid, null, 'the listener was still away when the job ended');
    await su.query(`alter database "${dbName}" with allow_connections true`);
    const job = await waiting;
    assert.equal(job.result.stdout, 'while-away\n');
  } finally {
    await su.query(`alter database "${dbName}" with allow_connections true`).catch(() => {});
    await su.end();
  }
});

test('many waits share one LISTEN connection', async () => {
  const ids = await enqueueMany(db, Array.from({ length: 20 }, (_, i) => ({ queue: 'default', spec: sh(`echo ${i}`) })));
  const jobs = await Promise.all(ids.map((id) => boxcar.waitFor(id, { timeoutMs: 30000 })));
  assert.deepEqual(jobs.map((j) => j.result.stdout), ids.map((_, i) => `${i}\n`));
  const n = await one('select count(*)::int n from pg_stat_activity where application_name = $1 and datname = current_database()', [APPLICATION_NAME]);
  assert.equal(n.n, 1);
});

test('a Boxcar on the caller\'s pool uses it and leaves it open at end()', async () => {
  const mine = new Boxcar({ pool: db, requestedBy: 'pool-test' });
  const id = await mine.enqueue({ queue: 'default', spec: sh('echo pooled') });
  assert.equal((await mine.waitFor(id, { timeoutMs: 30000 })).result.stdout, 'pooled\n');
  await mine.end();
  assert.equal((await one('select 1 as x')).x, 1);
});

test('streamLogs yields the live log while the job runs and ends with the job', async () => {
  const id = await enqueue(db, { queue: 'default', spec: sh('for i in 1 2 3 4; do echo line$i; sleep 0.4; done; echo bye >&2') });
  const chunks = [];
  let runningAtFirst;
  for await (const c of boxcar.streamLogs(id)) {
    if (chunks.length === 0) runningAtFirst = (await boxcar.get(id)).status;
    chunks.push(c);
  }
  assert.equal(runningAtFirst, 'running', 'the first chunk came while the job was running');
  const out = Buffer.concat(chunks.filter((c) => c.stream === 'stdout').map((c) => c.data)).toString();
  const err = Buffer.concat(chunks.filter((c) => c.stream === 'stderr').map((c) => c.data)).toString();
  assert.equal(out, 'line1\nline2\nline3\nline4\n');
  assert.equal(err, 'bye\n');
  assert.ok(chunks.length >= 2, `${chunks.length} chunks`);
  assert.equal((await boxcar.get(id)).status, 'succeeded');
  // A finished job's log: read whole, then the iterator ends.
  const again = [];
  for await (const c of boxcar.streamLogs(id)) again.push(c);
  assert.deepEqual(again.map((c) => c.seq), chunks.map((c) => c.seq));
});

test('progress yields each report in order and ends with the job', async () => {
  const id = await enqueue(db, {
    queue: 'default',
    spec: sh('for i in 1 2 3; do echo "{\\"step\\": $i}" >> "$BOXCAR_PROGRESS"; sleep 1.2; done'),
  });
  const seen = [];
  let runningAtFirst;
  for await (const p of boxcar.progress(id)) {
    if (seen.length === 0) runningAtFirst = (await boxcar.get(id)).status;
    seen.push(p);
  }
  assert.equal(runningAtFirst, 'running', 'the first report came while the job was running');
  assert.ok(seen.length >= 2, `${seen.length} reports`);
  assert.deepEqual(seen.at(-1).progress, { step: 3 });
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq);
  assert.ok(seen[0].at instanceof Date);
  const job = await boxcar.get(id);
  assert.deepEqual(job.progress, { step: 3 });
});

test('list pages through jobs newest first, by queue and status', async () => {
  const ids = await enqueueMany(db, [1, 2, 3].map((i) => ({ queue: 'listed', spec: sh(`exit ${i === 2 ? 1 : 0}`) })));
  await Promise.all(ids.map((id) => boxcar.waitFor(id, { timeoutMs: 30000 })));
  const p1 = await boxcar.list({ queue: 'listed', limit: 2 });
  assert.equal(p1.jobs.length, 2);
  assert.ok(p1.next);
  const p2 = await boxcar.list({ queue: 'listed', limit: 2, after: p1.next });
  assert.equal(p2.jobs.length, 1);
  assert.equal(p2.next, null);
  assert.deepEqual([...p1.jobs, ...p2.jobs].map((j) => j.id).sort(), [...ids].sort());
  const failed = await boxcar.list({ queue: 'listed', status: 'failed' });
  assert.deepEqual(failed.jobs.map((j) => j.id), [ids[1]]);
  await assert.rejects(boxcar.list({ status: 'done' }), (e) => e.code === '22023' && /status: done is not one of/.test(e.message));
});

test('retry queues a failed job again; errors for unknown and succeeded jobs are the server\'s', async () => {
  const id = await enqueue(db, { queue: 'default', spec: sh('exit 7') });
  const j1 = await boxcar.waitFor(id, { timeoutMs: 30000 });
  assert.equal(j1.status, 'failed');
  assert.equal(j1.error.code, 'NONZERO_EXIT');
  const r = await boxcar.retry(id, { requestedBy: 'node-test' });
  assert.equal(r.status, 'queued');
  const j2 = await boxcar.waitFor(id, { timeoutMs: 30000 });
  assert.equal(j2.status, 'failed');
  assert.equal(j2.manual_retries, 1);
  const ev = await one("select details->>'requested_by' as by from boxcar.job_events where job_id = $1 and kind = 'retry_requested'", [id]);
  assert.equal(ev.by, 'node-test');
  const ok = await enqueue(db, { queue: 'default', spec: sh('true') });
  await boxcar.waitFor(ok, { timeoutMs: 30000 });
  await assert.rejects(boxcar.retry(ok), (e) => e.code === '55000' && e.message === `job ${ok} is succeeded: only a failed or cancelled job can be retried`);
  const missing = '00000000-0000-4000-8000-000000000000';
  assert.equal(await boxcar.get(missing), null);
  await assert.rejects(boxcar.cancel(missing), (e) => e.code === 'P0002' && e.message === `job ${missing} not found`);
  await assert.rejects(boxcar.waitFor(missing, { timeoutMs: 1000 }), (e) => e.code === 'BOXCAR_NOT_FOUND');
});

test('verifyWebhook accepts a real delivery and rejects a tampered body, a wrong secret and an old timestamp',
  { skip: !(process.env.BOXCAR_TEST_WEBHOOK_SECRET && process.env.BOXCAR) && 'no BOXCAR_TEST_WEBHOOK_SECRET or BOXCAR' }, async () => {
    const secret = process.env.BOXCAR_TEST_WEBHOOK_SECRET;
    let got;
    const delivered = new Promise((resolve) => {
      got = resolve;
    });
    const server = http.createServer((req, res) => {
      const parts = [];
      req.on('data', (d) => parts.push(d));
      req.on('end', () => {
        res.end('ok');
        got({ headers: req.headers, body: Buffer.concat(parts) });
      });
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    try {
      const id = await enqueue(db, { queue: 'default', spec: sh('echo hooked'), webhookUrl: `http://127.0.0.1:${server.address().port}/hook` });
      const { headers, body } = await delivered;
      const event = verifyWebhook(secret, headers, body);
      assert.equal(event.type, 'job.succeeded');
      assert.equal(event.data.job_id, id);
      assert.equal(event.data.result.stdout, 'hooked\n');
      // As text too, with a Fetch Headers object, and among other secrets (a rotation).
      assert.equal(verifyWebhook(secret, new Headers(headers), body.toString()).data.job_id, id);
      const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
      assert.equal(verifyWebhook([other, secret], headers, body).data.job_id, id);
      const tampered = Buffer.from(body.toString().replace('hooked', 'hacked'));
      assert.throws(() => verifyWebhook(secret, headers, tampered), (e) => e instanceof WebhookVerificationError && /No matching signature/.test(e.message));
      assert.throws(() => verifyWebhook(other, headers, body), (e) => e instanceof WebhookVerificationError);
      assert.throws(() => verifyWebhook(secret, { ...headers, 'webhook-id': 'msg_other' }, body), WebhookVerificationError);
      // The same delivery received 10 minutes later: too old.
      const now = Date.now;
      Date.now = () => now() + 600e3;
      try {
        assert.throws(() => verifyWebhook(secret, headers, body), (e) => e instanceof WebhookVerificationError && /too old/.test(e.message));
      } finally {
        Date.now = now;
      }
      // The project's own checker agrees on the same bytes, both ways.
      const cli = (bytes) => {
        const dir = mkdtempSync(join(tmpdir(), 'boxcar-node-wh-'));
        writeFileSync(join(dir, 'h'), ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((k) => `${k}: ${headers[k]}\n`).join(''));
        writeFileSync(join(dir, 'b'), bytes);
        const r = spawnSync(process.env.BOXCAR, ['webhooks', 'verify', '--headers', join(dir, 'h'), '--body', join(dir, 'b')],
          { env: { ...process.env, BOXCAR_WEBHOOK_SECRET: secret }, encoding: 'utf8' });
        rmSync(dir, { recursive: true });
        return `${r.status} ${r.stdout.trim()}`;
      };
      assert.equal(cli(body), '0 valid');
      assert.match(cli(tampered), /^1 invalid/);
      assert.throws(() => verifyWebhook(secret, headers, JSON.parse(body)), TypeError);
    } finally {
      server.close();
    }
  });

test('sessions: run, stdin, write, read, list, stat, move, remove, file errors, end',
  { skip: process.env.BOXCAR_TEST_SESSIONS !== '1' && 'sessions need the namespace sandbox as root and S3' }, async () => {
    const s = boxcar.session('node-s1', { limits: { disk_mb: 64 }, timeoutMs: 60000 });
    await s.write('notes/todo.txt', 'buy milk\n');
    assert.equal(await s.read('notes/todo.txt'), 'buy milk\n');
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    await s.write('bin/blob', bytes);
    assert.deepEqual(await s.readBytes('bin/blob'), bytes);
    const entries = await s.list('notes');
    assert.deepEqual(entries.map((e) => [e.name, e.type, e.size]), [['todo.txt', 'file', 9]]);
    assert.equal((await s.stat('bin/blob')).size, 5);
    const r = await s.run(['sh', '-c', 'cat notes/todo.txt; cat; exit 3'], { stdin: 'from stdin\n' });
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, 'buy milk\nfrom stdin\n');
    assert.equal((await s.run('echo $BOXCAR_SESSION_ID $BOXCAR_SESSION_JOB')).stdout.split(' ')[0], 'node-s1');
    await s.move('notes/todo.txt', 'done.txt');
    await s.mkdir('a/b');
    await s.remove('notes', { recursive: true });
    const names = (await s.list('.')).map((e) => e.name).sort();
    assert.deepEqual(names, ['a', 'bin', 'done.txt']);
    await assert.rejects(s.read('missing.txt'), (e) => {
      assert.ok(e instanceof JobFailedError);
      assert.equal(e.code, 'FILE_OP_FAILED');
      assert.match(e.message, /files\[0\] \(read missing\.txt\): No such file/);
      return true;
    });
    assert.ok(['ending', 'ended'].includes(await s.end()));
  });
