// Type-checked by tests/clients/t_node.sh (tsc --noEmit): the API and the
// generated spec types used as an app would.  It is never run.
import pg from 'pg';
import { Boxcar, enqueue, enqueueMany, verifyWebhook, BoxcarTimeoutError } from '@boxcar/client';
import type { Job, JobSpec, FileOp, LogChunk } from '@boxcar/client';

const spec: JobSpec = {
  command: ['python3', '-c', 'print(1)'],
  env: { MODE: 'prod' },
  limits: { timeout_s: 30, memory_mb: 256 },
  network: { allow: ['pypi.org:443'] },
  volumes: [{ name: 'data', mount: '/data', storage: 'corpus', version: 'latest' }],
  retry: { on: ['TIMEOUT'] },
  webhook: { url: 'https://app.example/hooks', progress: true },
};
const sessionSpec: JobSpec = {
  session: { id: 'chat-1' },
  files: [{ op: 'write', path: 'a.txt', content: 'x', parents: true }, { op: 'move', path: 'a.txt', to: 'b.txt' }],
};
const codeSpec: JobSpec = { code: { language: 'python', source: 'def main():\n    return 1' } };
const stdinSpec: JobSpec = { script: 'cat', stdin: 'hi', session: { id: 's' } };
const op: FileOp = { op: 'read', path: 'b.txt' };

async function main(): Promise<void> {
  const client = new pg.Client();
  await client.connect();
  await client.query('begin');
  const id: string = await enqueue(client, { queue: 'default', spec, priority: 1, runAt: new Date(), dependsOn: [] });
  await client.query('commit');
  const ids: string[] = await enqueueMany(client, [
    { queue: 'default', spec: codeSpec },
    { queue: 'default', spec, dependsOn: [0] },
  ]);
  const boxcar = new Boxcar({ connectionString: process.env.DATABASE_URL });
  try {
    const job: Job = await boxcar.waitFor(id, { timeoutMs: 1000 });
    const code: number | undefined = job.result?.exit_code;
    console.log(code, job.status === 'succeeded', ids);
  } catch (e) {
    if (e instanceof BoxcarTimeoutError) console.log(e.jobId, e.timeoutMs);
  }
  for await (const chunk of boxcar.streamLogs(id)) {
    const c: LogChunk = chunk;
    process.stdout.write(c.data);
  }
  for await (const p of boxcar.progress(id)) console.log(p.seq, p.progress);
  const page = await boxcar.list({ status: 'failed', limit: 10 });
  console.log(page.jobs.map((j) => j.id), page.next);
  console.log(await boxcar.cancel(id), (await boxcar.retry(id)).status);
  const s = boxcar.session('chat-1');
  await s.write('x.txt', 'hello');
  const text: string = await s.read('x.txt');
  const { exitCode, stdout } = await s.run(['ls'], { stdin: 'x' });
  const entries = await s.list('.');
  const ran: Job = await s.job({ command: ['ls'], stdin: 'x', limits: { timeout_s: 5 } });
  console.log(ran.status);
  console.log(text, exitCode, stdout, entries[0]?.type, await s.files([op]), sessionSpec, stdinSpec);
  const event = verifyWebhook('whsec_x', { 'webhook-id': 'a' }, '{}');
  console.log(event.type, event.data.job_id);
  await boxcar.end();
}
void main;
