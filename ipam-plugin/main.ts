/**
 * The TypeScript executable (`blockipam-direct` beside the Go forwarder, docs/design-plugin.md):
 * VERSION, and every other call on the direct path (direct.ts). Reads stdin and writes stdout
 * and stderr synchronously (stdio.ts: stdin bounded; a result is in the pipe whole before exit),
 * then exits at once: keep-alive sockets and timers must not delay the runtime. VERSION loads
 * its own module alone.
 */
import { DIRECT_ENV } from 'blockipam/core/cni/forward';
import { readAllSync, writeAllSync } from './host/stdio.ts';

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
  // A result that cannot be delivered (reader gone: EPIPE; ENOSPC; stdout closed) must not
  // look like success: exit 1, so the runtime treats the ADD as failed and calls DEL (CNI spec
  // §"ADD"), which releases what was allocated. Stderr failures are ignored (logs only).
  let stdoutFailure: unknown;
  // VERSION evaluates only its own module: the dispatcher's imports (netconf, the typed errors
  // of core, core's kube entry) cost ~5–10 ms of CPU per call that VERSION never uses
  // (measured against e9d99a6, docs/benchmarks.md). Same answer as dispatch's VERSION path.
  if (process.env.CNI_COMMAND === 'VERSION') {
    const { version } = await import('blockipam/core/cni/version');
    let stdin = '';
    try {
      stdin = readAllSync(0);
    } catch {
      // unreadable stdin: the current version, as dispatch answers
    }
    try {
      writeAllSync(1, `${JSON.stringify(version(stdin))}\n`);
    } catch {
      process.exit(1); // not delivered: not a success
    }
    process.exit(0);
  }
  const { runDirect } = await import('./direct.ts');
  const why = process.env[DIRECT_ENV];
  const code = await runDirect(
    {
      env: process.env,
      readStdin: () => readAllSync(0),
      stdout: {
        write: (text: string) => {
          if (stdoutFailure !== undefined) return;
          try {
            writeAllSync(1, text);
          } catch (e) {
            stdoutFailure = e;
          }
        },
      },
      stderr: {
        write: (text: string) => {
          try {
            writeAllSync(2, text);
          } catch {
            // nowhere left to report it
          }
        },
      },
    },
    {
      backend: async (conf) => (await import('./backend/kube-backend.ts')).createKubeBackend(conf),
      ...(why !== undefined && why !== '1' ? { agentNotAsked: why } : {}),
    },
  );
  process.exit(stdoutFailure === undefined ? code : 1);
}

void main();
