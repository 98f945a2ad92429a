// Each spec here breaks the schema: tsc must refuse every one (the test
// counts one error per line marked "error").
import type { JobSpec, Session } from '@boxcar/client';

export const noMode: JobSpec = { env: {} }; // error: no command, script, code or files
export const twoModes: JobSpec = { command: ['a'], script: 'b' }; // error: two modes
export const emptyCommand: JobSpec = { command: [] }; // error: command needs an element
export const unknownField: JobSpec = { command: ['a'], colour: 'red' }; // error: unknown field
export const badLimit: JobSpec = { command: ['a'], limits: { timeout_s: '30' } }; // error: a number
export const badLanguage: JobSpec = { code: { language: 'ruby', source: 'x' } }; // error: not a language
export const filesNoSession: JobSpec = { files: [{ op: 'read', path: 'a' }] }; // error: files need a session
export const readWithContent: JobSpec = { session: { id: 's' }, files: [{ op: 'read', path: 'a', content: 'x' }] }; // error: read takes no content
export const moveNoTo: JobSpec = { session: { id: 's' }, files: [{ op: 'move', path: 'a' }] }; // error: move needs to
export const stdinNoSession: JobSpec = { command: ['cat'], stdin: 'x' }; // error: stdin needs a session
export const volumeBoth: JobSpec = { command: ['a'], volumes: [{ name: 'v', mount: '/v', url: 'http://x', storage: 's' }] }; // error: url or storage
export async function sessionJobTwoModes(s: Session): Promise<void> { await s.job({ command: ['a'], script: 'b' }); } // error: two modes in a session job
