// boxcar-session-agent's kept Node.js interpreter (agent/code.c), run as
// `node -e THIS`.  Requests come on fd 3: "<source bytes> <arguments
// bytes>\n", the source, the arguments (a JSON object).  Each source runs
// in one vm context kept across requests (globals and top-level let/const
// stay); then, if it (re)defined a function main, main(arguments), awaited
// when it returns a promise.  The answer goes to fd 4: "<status> <value
// bytes> <error bytes>\n", the value (JSON text), the error (a stack);
// status 0 ok, 1 an exception.  stdout and stderr are flushed before the
// answer is written, so the agent has the output when the answer arrives.
'use strict';
const fs = require('fs');
const net = require('net');
const util = require('util');
const vm = require('vm');

const VALUE_MAX = 4 * 1024 * 1024;
const ERROR_MAX = 64 * 1024;

// The code's globals: Node's own, as far as this Node has them (an older
// one lacks structuredClone or fetch), and the require of a script run
// from the interpreter's cwd.
const SHARED = ['console', 'process', 'Buffer', 'URL', 'URLSearchParams', 'TextEncoder',
  'TextDecoder', 'AbortController', 'atob', 'btoa', 'structuredClone', 'queueMicrotask',
  'performance', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate',
  'clearImmediate', 'fetch'];
const globals = { require, module };
for (const name of SHARED) if (typeof globalThis[name] !== 'undefined') globals[name] = globalThis[name];
const context = vm.createContext(globals);
vm.runInContext('globalThis.global = globalThis', context);

// A kept interpreter outlives one job's mistakes: an error thrown later
// by a timer the code left is printed, not the end of the session's state.
const report = (e) => { try { process.stderr.write(String((e && e.stack) || e) + '\n'); } catch (_) { /* stderr gone */ } };
process.on('uncaughtException', report);
process.on('unhandledRejection', report);

const probe = () => vm.runInContext('typeof main === "function" ? main : undefined', context);
const flushed = (s) => new Promise((resolve) => { try { s.write('', () => resolve()); } catch (_) { resolve(); } });

function answer(status, value, error) {
  let v = Buffer.from(value);
  let e = Buffer.from(error);
  if (v.length > VALUE_MAX) {
    e = Buffer.from(`main() returned ${v.length} bytes of JSON, more than ${VALUE_MAX}`);
    status = 1;
    v = Buffer.from('null');
  }
  if (e.length > ERROR_MAX) e = Buffer.concat([Buffer.from('...\n'), e.subarray(e.length - ERROR_MAX)]);
  let data = Buffer.concat([Buffer.from(`${status} ${v.length} ${e.length}\n`), v, e]);
  while (data.length) data = data.subarray(fs.writeSync(4, data));
}

// A stack without the wrapper's frames (the vm call, this script's own).
function ownFrames(stack) {
  const lines = stack.split('\n');
  const at = lines.findIndex((l) => /^\s+at (Script\.runInContext|.*\[eval\]:)/.test(l));
  return (at < 0 ? lines : lines.slice(0, at)).join('\n');
}

async function run(source, args) {
  let status = 0, value = 'null', error = '';
  try {
    const before = probe();
    new vm.Script(source, { filename: 'code.js' }).runInContext(context);
    const main = probe();
    if (typeof main === 'function' && main !== before) {
      const result = await main(args ? JSON.parse(args) : {});
      if (result !== undefined) {
        let json;
        try { json = JSON.stringify(result); } catch (e) { json = undefined; }
        if (json === undefined) {
          status = 1;
          error = 'main() returned a value that is not JSON';
        } else {
          value = json;
        }
      }
    }
  } catch (e) {
    status = 1;
    value = 'null';
    error = (e && typeof e.stack === 'string') ? ownFrames(e.stack) : 'Uncaught ' + util.inspect(e);
  }
  await flushed(process.stdout);
  await flushed(process.stderr);
  answer(status, value, error);
}

let pending = Buffer.alloc(0);
let queue = Promise.resolve();
// A pipe handle on the event loop, not fs reads: a read blocked in the
// thread pool would hold process.exit() forever.
const input = new net.Socket({ fd: 3, readable: true, writable: false });
input.on('data', (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  for (;;) {
    const nl = pending.indexOf(10);
    if (nl < 0) return;
    const [slen, alen] = pending.subarray(0, nl).toString().split(' ').map(Number);
    const end = nl + 1 + slen + alen;
    if (pending.length < end) return;
    const source = pending.subarray(nl + 1, nl + 1 + slen).toString();
    const args = pending.subarray(nl + 1 + slen, end).toString();
    pending = pending.subarray(end);
    queue = queue.then(() => run(source, args));
  }
});
input.on('end', () => process.exit(0));
