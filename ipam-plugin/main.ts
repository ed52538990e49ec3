/**
 * The `blockipam` executable: wires the dispatcher to the process. Reads stdin with
 * `readFileSync(0)` (works under ptp's Go delegation, cni-spec §8 notes), sets
 * `process.exitCode` rather than exiting so stdout is flushed. The Kubernetes backend is
 * imported only when a command needs it, so VERSION stays at bare start-up cost.
 */
import { readFileSync } from 'node:fs';
import { dispatch } from './dispatch.ts';

/** 5 s: after the result is written, a lingering handle must not hold up the runtime. */
const lingerMs = 5_000;

async function main(): Promise<void> {
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
  setTimeout(() => process.exit(code), lingerMs).unref();
}

void main();
