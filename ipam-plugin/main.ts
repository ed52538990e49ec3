/**
 * The `blockipam` executable: wires the dispatcher to the process. Reads stdin with
 * `readFileSync(0)` (works under ptp's Go delegation, cni-spec §8 notes), exits once
 * stdout is flushed (the write callback), not before. The Kubernetes backend is
 * imported only when a command needs it, so VERSION stays at bare start-up cost.
 */
import { readFileSync } from 'node:fs';
import { dispatch } from './dispatch.ts';

/** 5 s: after the result is written, a lingering handle must not hold up the runtime. */
const lingerMs = 5_000;

/** Commands that reach the API server (VERSION and the about text never load TLS). */
const apiCommands = new Set(['ADD', 'DEL', 'CHECK', 'GC', 'STATUS']);

async function main(): Promise<void> {
  // Under Node (the node-runtime build, tests): load node:https (and so node:tls) first thing
  // for commands that will need it. Loading node:tls starts the parse of Node's bundled root
  // certificates on a helper thread and the first secure context waits for it (~10-20 ms);
  // started here, it overlaps stdin, netconf validation and backend evaluation. The Bun
  // executable never loads node:https: its transport is Bun's native fetch
  // (core/kube/fetch-client.ts; docs/design-plugin.md "Runtime").
  if (process.versions.bun === undefined && apiCommands.has(process.env.CNI_COMMAND ?? ''))
    process.getBuiltinModule('node:https');
  const code = await dispatch(
    {
      env: process.env,
      readStdin: () => readFileSync(0, 'utf8'),
      stdout: process.stdout,
      stderr: process.stderr,
    },
    { backend: async (conf) => (await import('./kube-backend.ts')).createKubeBackend(conf) },
  );
  process.exitCode = code;
  // Exit as soon as stdout is flushed: keep-alive sockets and timers must not delay the
  // runtime. The unref'd timer is the backstop if the write callback never comes.
  process.stdout.write('', () => process.exit(code));
  setTimeout(() => process.exit(code), lingerMs).unref();
}

void main();
